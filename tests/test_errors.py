"""Every error a user can reach is one line and exit status 2 (issue 47): each command turns a
VabenchError into ``prog: message`` on stderr through one helper (vabench.core.errors.command); a renamed
config key names its new name; and no new builtin raise appears on a path a user can reach."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from vabench.core.errors import REFUSED, ConfigError, VabenchError, command
from vabench.launch.exits import Exit
from vabench.launch.words import misspelt
from vabench.run.config.choices import MOVED, moved

ROOT = Path(__file__).resolve().parents[1]


def _counter():
    spec = importlib.util.spec_from_file_location("count_raises", ROOT / "scripts" / "count_raises.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def refused(capsys, main, argv: list[str]) -> str:
    """``main(argv)``'s one stderr line, after checking it returned the refusal status."""
    assert main(argv) == REFUSED
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def test_the_helper_gives_one_line_and_status_2_and_lets_bugs_through(capsys):
    @command("prog")
    def main(argv):
        if argv == ["bug"]:
            raise KeyError("a programming error keeps its traceback")
        raise ConfigError("'x' is bad\nset x=1")

    assert refused(capsys, main, []) == "prog: 'x' is bad; set x=1"
    with pytest.raises(KeyError):
        main(["bug"])
    assert Exit.REFUSED == REFUSED == 2


def test_analysis_a_missing_run_folder(capsys, tmp_path):
    from vabench.analysis.cli import main

    assert refused(capsys, main, [str(tmp_path / "nothing")]).startswith("vabench.analysis: ")


def test_analysis_a_corrupt_label_file(capsys, tmp_path):
    from vabench.analysis.cli import main

    (tmp_path / "t.csv").write_text("not,a,tally\n1,2\n")
    assert refused(capsys, main, ["--tallies", str(tmp_path / "t.csv")]).startswith("vabench.analysis: ")


def test_verify_a_folder_that_is_not_a_run(capsys, tmp_path):
    from vabench.verify.__main__ import main

    assert "not a run folder" in refused(capsys, main, [str(tmp_path)])
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04 corrupt")
    assert "x.zip" in refused(capsys, main, [str(tmp_path / "x.zip")])


def test_site_a_missing_run_folder(capsys, tmp_path):
    from vabench.site.__main__ import main

    line = refused(capsys, main, [str(tmp_path / "nothing"), "--out", str(tmp_path / "site")])
    assert line.startswith("vabench.site: ") and "nothing" in line


def test_review_labels_of_a_missing_folder_and_a_busy_port(capsys, tmp_path):
    import socket

    from vabench.review.__main__ import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        line = refused(capsys, main, ["serve", str(tmp_path), "--port", str(port)])
    assert line.startswith("vabench.review: ") and str(port) in line


def test_export_an_out_folder_that_exists(capsys, tmp_path):
    from vabench.export.__main__ import main

    line = refused(capsys, main, ["lerobot", str(tmp_path), "--out", str(tmp_path)])
    assert line.startswith("vabench.export: ")


def test_bundle_a_folder_that_is_not_a_run(capsys, tmp_path):
    from vabench.results.bundle import main

    line = refused(capsys, main, [str(tmp_path), "--out", str(tmp_path / "b.zip")])
    assert "not a run folder" in line and not (tmp_path / "b.zip").exists()


def test_serve_policy_a_missing_checkpoint(capsys, tmp_path):
    pytest.importorskip("websockets")
    from vabench.serve_policy import main

    assert "no such checkpoint" in refused(capsys, main, [str(tmp_path / "none.pt")])


def test_the_task_list_a_corrupt_seed_manifest(capsys, monkeypatch, tmp_path):
    import vabench.envs.seeds as seeds
    from vabench.envs.cli.tasks import main

    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    monkeypatch.setattr(seeds, "manifest_path", lambda task, robot="panda", split="eval": tmp_path / "bad.json")
    assert "bad.json" in refused(capsys, main, ["--track", "base"])


def test_a_renamed_key_names_its_new_name_on_the_command_line():
    """Through the launcher itself: one line, exit 2, the new key with the value typed."""
    cmd = [sys.executable, "-m", "vabench.launch", "model=oracle", "model.model=x"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr.strip()) == (2, "config error: 'model.model' is now 'model.id': model.id=x")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_moved_key_gets_the_hint_and_an_old_config_is_read(old):
    assert misspelt(["model=oracle", f"{old}=v"]) == f"'{old}' is now '{MOVED[old]}': {MOVED[old]}=v"
    *sections, key = old.split(".")
    old_config = {key: "v", "other": 1}
    for section in reversed(sections):  # model.extra.budget_scale: a key two sections deep
        old_config = {section: old_config}
    new = moved(old_config)
    *parent, leaf = MOVED[old].split(".")
    assert (new[parent[0]] if parent else new)[leaf] == "v"


def test_no_builtin_raise_on_a_user_reachable_path():
    """A new ``raise ValueError(...)`` where a user's input reaches is a traceback for the user:
    raise a VabenchError subclass (vabench/core/errors.py), or, for a caller's bug, add the function to
    scripts/count_raises.py's PROGRAMMING with why."""
    counter = _counter()
    found = [f"{r.module}:{r.line} {r.function}: {r.name}" for r in counter.raises() if r.reachable]
    assert found == []


def test_the_exception_classes_a_user_meets_keep_their_builtin():
    """Callers that catch the builtin keep working."""
    from vabench.core.errors import BadFile, CannotListen, NotFound, PathTaken, ServerMisbehaved

    pairs = [(BadFile, ValueError), (NotFound, FileNotFoundError), (PathTaken, FileExistsError)]
    pairs += [(CannotListen, OSError), (ServerMisbehaved, RuntimeError)]
    assert all(issubclass(c, VabenchError) and issubclass(c, b) for c, b in pairs)
