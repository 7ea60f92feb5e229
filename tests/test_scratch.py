"""Results that travel back to the driver: a worker that cannot see the run folder writes into its
node's scratch and sends the record with the row; the driver lands it. The cluster case (a worker
node with its own filesystem) is in test_cluster.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.test_driver import smoke, table
from tests.test_learning import SUMMARY
from vabench.agents.summaries.summary_schema import SummaryError
from vabench.agents.summaries.summary_store import SummaryStore
from vabench.run.actors import worker as worker_module
from vabench.run.driver import Driver
from vabench.run.folder.scratch import OWNER, SCRATCH_ENV, Scratch, clear_dead, land, pack

TWO = ("ray.address=none", "seeds=2", "tasks=[grasp_single_cube]")


def files_of(folder) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_records_sent_back_from_scratch_land_as_if_written_in_place(tmp_path, monkeypatch):
    """The same episodes with the record written in place and with it shipped: the same rows and the
    same record files (events, every frame), and the worker's scratch folder is gone afterwards."""
    scratch = tmp_path / "scratch"
    monkeypatch.setenv(SCRATCH_ENV, str(scratch))
    here = smoke(tmp_path, "in_place", *TWO)
    placed = Driver(here, log=lambda *_: None, progress=False).execute()
    shipped = []
    real = worker_module.EpisodeWorker.__init__

    def remote_node(self, *args, **kwargs):
        real(self, *args, **kwargs)
        shipped.append(self.scratch is not None)

    monkeypatch.setattr(worker_module, "sees_run_folder", lambda lock: False)
    monkeypatch.setattr(worker_module.EpisodeWorker, "__init__", remote_node)
    away = smoke(tmp_path, "shipped", *TWO)
    sent = Driver(away, log=lambda *_: None, progress=False).execute()
    assert shipped == [True] and (sent["status"] == "ok").all() and len(sent) == 2
    assert table(sent).equals(table(placed)) and list(sent["record"]) == list(placed["record"])
    for rel in sent["record"]:
        a, b = ((run.run_dir / rel).parent for run in (here, away))
        assert files_of(a) == files_of(b) and any(n.startswith("frames/") for n in files_of(b))
        events = [json.loads(line) for line in (b / "events.jsonl").read_text().splitlines()]
        assert events[-1]["type"] == "result"
    assert list(scratch.iterdir()) == []  # the worker removed its folder when the run ended


def test_a_new_worker_clears_the_scratch_of_ended_workers_only(tmp_path, monkeypatch):
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    code = "from vabench.run.folder.scratch import Scratch; Scratch('ended').folder('ep/attempt1')"  # then it ends
    subprocess.run([sys.executable, "-c", code], env={**os.environ, SCRATCH_ENV: str(tmp_path)}, check=True)
    assert (tmp_path / "ended" / "ep" / "attempt1").is_dir()
    (tmp_path / "strange").mkdir()  # no owner file: not ours to judge
    alive = Scratch("alive")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alive", "strange"]
    assert (alive.root / OWNER).is_file() and clear_dead(tmp_path) == []
    alive.close()
    assert not alive.root.exists()


def test_a_bundle_lands_inside_its_folder_only(tmp_path):
    src = tmp_path / "src"
    (src / "frames").mkdir(parents=True)
    (src / "events.jsonl").write_text("{}\n")
    (src / "frames" / "a.jpg").write_bytes(b"\xff\xd8")
    files = pack(src)
    assert not src.exists() and files == {"events.jsonl": b"{}\n", "frames/a.jpg": b"\xff\xd8"}
    dest = land(files, tmp_path / "dest")
    assert files_of(dest) == {"events.jsonl", "frames/a.jpg"}
    land({"events.jsonl": b"again\n"}, dest)  # a folder already there is set aside, never mixed
    assert (tmp_path / "dest.interrupted-1" / "frames" / "a.jpg").is_file()
    for bad in ("../escape", "/etc/x", ""):
        with pytest.raises(ValueError, match="relative and inside"):
            land({bad: b""}, tmp_path / "bad")
        assert not (tmp_path / "bad").exists() and not (tmp_path / "escape").exists()


def test_a_summary_from_another_node_is_validated_before_it_replaces_one(tmp_path):
    elsewhere, here = SummaryStore(tmp_path / "worker"), SummaryStore(tmp_path / "driver")
    written = elsewhere.save("m", "grasp_single_cube", SUMMARY, [("demo", 0)], "v1")
    adopted = here.adopt("m", "grasp_single_cube", written.read_text())
    assert adopted.fields == here.load("m", "grasp_single_cube").fields and adopted.path.parent.parent == here.root
    before = here.path("m", "grasp_single_cube").read_text()
    for text in ("{not json", written.read_text().replace('"summary_model": "m"', '"summary_model": "other"')):
        with pytest.raises(SummaryError):
            here.adopt("m", "grasp_single_cube", text)
        assert here.path("m", "grasp_single_cube").read_text() == before
    assert [p.name for p in here.path("m", "grasp_single_cube").parent.iterdir()] == ["grasp_single_cube.json"]
