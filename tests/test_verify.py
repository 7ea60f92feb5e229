"""Numbers anyone can check: a run's provenance, ``verify`` reproducing every judged episode from
its records, each kind of tampering caught, rescoring under a changed checker, and bundles.

Every re-simulation costs seconds, so the default suite shares one run (two short oracle
episodes) and one verify of it across the module, catches the tampering that needs no physics at
the row-against-record check, and keeps one tampering (an edited reply) end to end; each
tampering end to end through ``verify`` is ``slow``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from tests.test_launch import composed
from vabench.analysis.flips import flips
from vabench.analysis.load import load_runs
from vabench.envs.tasks.grasp_single_cube import GraspSingleCube
from vabench.results import bundle
from vabench.results.layout import RUN_INFO, RunInfo
from vabench.results.outcomes import read_rows, write_row
from vabench.results.recordfile import record_digest
from vabench.run.config.run import from_config
from vabench.run.driver import Driver
from vabench.verify import rescore, unpacked, verify
from vabench.verify.__main__ import main as verify_main
from vabench.verify.check import _row_identity, load, outcome_rows, provenance_differences
from vabench.verify.compare import check_record, compare, plain

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("grasp_single_cube", "click_bell_right")  # the oracle's shortest episodes (about 10 steps)


def run_folder(results: Path, run_id: str, tasks: str, *overrides: str) -> Path:
    """The oracle on ``tasks`` x 1 seed, active (unless ``overrides`` say otherwise), in process, small images."""
    cfg = composed(
        f"results_dir={results}",
        f"run_id={run_id}",
        f"tasks={tasks}",
        "seeds=1",
        "render=small",
        "recording.enabled=false",
        "ray.address=none",
        *overrides,
    )
    Driver(from_config(cfg, results / run_id), log=lambda *_: None, progress=False).execute()
    return results / run_id


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def runs(results) -> tuple[Path, Path]:
    """Run a (both tasks) and run b (grasp_single_cube only): b's row is one copied from another run."""
    return run_a(results), run_folder(results, "b", "[grasp_single_cube]")


def run_a(results: Path) -> Path:
    return results / "a" if (results / "a").is_dir() else run_folder(results, "a", f"[{','.join(TASKS)}]")


@pytest.fixture(scope="module")
def run(results) -> Path:
    return run_a(results)


@pytest.fixture(scope="module")
def verified(run):
    """One verify of run a, shared by the tests that read it."""
    return verify(run)


@pytest.fixture
def copy(run, tmp_path) -> Path:
    """A copy of run a to tamper with."""
    return Path(shutil.copytree(run, tmp_path / "a"))


def rows_of(run: Path) -> pd.DataFrame:
    return read_rows(run / "outcomes").sort_values(["task"]).reset_index(drop=True)


def test_every_row_names_its_provenance_and_its_record_digest(run):
    info = RunInfo.read(run)
    df = rows_of(run)
    assert len(df) == 2 and df["success"].all() and set(df["provenance_digest"]) == {info.provenance_digest}
    manifest = json.loads((run / "_provenance" / f"{info.provenance_digest}.json").read_text())
    assert manifest == info.provenance
    assert set(manifest) == {"code", "inputs", "machine"} and manifest["code"]["source_digest"]
    assert set(manifest["inputs"]["seed_manifests"]) == set(TASKS)
    assert manifest["machine"]["versions"]["sapien"] and manifest["machine"]["renderer"]
    for _, row in df.iterrows():
        assert row["record_digest"] == record_digest((run / row["record"]).parent)


def test_provenance_differences_with_this_machine_are_named(copy):
    run, info, rows = load(copy)
    path = copy / "_provenance" / f"{info.provenance_digest}.json"
    manifest = json.loads(path.read_text())
    manifest["machine"]["python"], manifest["code"]["git_commit"] = "2.7.18", "0" * 40
    path.write_text(json.dumps(manifest))
    found = provenance_differences(copy, run, rows)
    assert [d.split(": ", 1)[1].split(":")[0] for d in found] == ["code.git_commit", "machine.python"]
    assert "2.7.18 -> 3." in found[1]


def test_verify_reproduces_every_judged_episode(verified):
    report = verified
    assert report.ok, report.lines
    assert (report.rows, report.judged, report.reproduced) == (2, 2, 2)
    assert report.provenance == []  # the same machine, the same code


def test_rows_that_disagree_with_their_records_are_named_before_any_simulation(run, copy):
    """A flipped success, a deleted frame and a row copied from another run, each caught by the
    row-against-record check that ``verify`` runs on every row (end to end: the slow tests below)."""
    paths = sorted((copy / "outcomes").rglob("*.parquet"))
    rows = [{k: plain(v) for k, v in pd.read_parquet(p).iloc[0].to_dict().items()} for p in paths]
    assert [check_record(copy, r)[0] for r in rows] == [[], []]
    write_row(paths[0], {**rows[0], "success": not rows[0]["success"]})
    flipped = {k: plain(v) for k, v in pd.read_parquet(paths[0]).iloc[0].to_dict().items()}
    reasons, _ = check_record(copy, flipped)
    assert any(f"success {str(flipped['success']).lower()} (record: " in x for x in reasons), reasons
    assert any(f"the result event of {rows[0]['record']}" in x for x in reasons), reasons  # the record named
    record = (copy / rows[1]["record"]).parent
    frame = sorted(record.rglob("frames/*.jpg"))[3]
    frame.unlink()
    (record / "frames" / "extra.jpg").write_bytes(b"\xff\xd8")
    (found,) = check_record(copy, rows[1])[0]
    where = record.relative_to(copy).as_posix()
    assert found.startswith(f"{where}: record digest ") and f"frames/{frame.name} is missing (shown at step 3" in found
    assert found.endswith("frames/extra.jpg is named by no event"), found
    _, info, _ = load(copy)
    theirs = {**rows[1], "run_id": "b"}  # what a row of run b says of itself
    assert "run_id b is not this run's (a)" in _row_identity(copy, info, theirs)


@pytest.mark.slow
def test_a_flipped_success_is_caught(copy):
    path = next((copy / "outcomes").rglob("*.parquet"))
    row = {k: plain(v) for k, v in pd.read_parquet(path).iloc[0].to_dict().items()}
    write_row(path, {**row, "success": not row["success"]})
    report = verify(copy)
    assert not report.ok and report.reproduced == 1 and "1 with differences" in report.summary()
    assert len(report.lines) == 1 and report.lines[0].endswith("success false (record: true)"), report.lines


def test_an_edited_reply_and_an_edited_row_are_one_episode_with_differences_each(copy):
    """An edited reply shows in the record's digest and in the re-simulation; an edited row is one
    finding naming its file, column and values (not a second one from the re-simulation, which is
    compared with the record). Both in one verify: each re-simulation costs seconds."""
    df = rows_of(copy)
    events = copy / df.loc[0, "record"]  # click_bell_right's record: the oracle's first answer edited
    lines = events.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "answer")  # a chat model's: reply
    edited = json.loads(lines[at])
    edited["payload"] = {"stop": True}
    lines[at] = json.dumps(edited)
    events.write_text("\n".join(lines) + "\n")
    path = next((copy / "outcomes").rglob("grasp_single_cube/*.parquet"))  # grasp_single_cube's row edited
    row = {k: plain(v) for k, v in pd.read_parquet(path).iloc[0].to_dict().items()}
    write_row(path, {**row, "success": False})
    report = verify(copy)
    assert not report.ok and report.reproduced == 0 and "2 with differences" in report.summary()
    reply = [line for line in report.lines if "/click_bell_right/" in line.split(": ")[0]]
    assert "record digest" in reply[0] and "an event line or a frame's content changed" in reply[0]
    assert 'first differing event: event 2 (decision, step 0): kind "action" -> "stop"' in " ".join(reply)
    (flipped,) = [line for line in report.lines if "/grasp_single_cube/" in line.split(": ")[0]]
    assert f"{path.relative_to(copy).as_posix()} differs from the result event of {row['record']}" in flipped
    assert flipped.endswith("success false (record: true)"), flipped


def test_a_run_resumed_across_schema_versions_verifies(copy):
    """A run resumed after an upgrade holds rows from before schema 9 beside newer ones; read
    together, the old rows' robot and perturbation are NaN: the Panda, unperturbed (seen on a
    resumed servo run: verify stopped on 'perturbation.name ... got nan')."""
    newer = ("robot", "perturbation")
    path = sorted((copy / "outcomes").rglob("*.parquet"))[0]
    pd.read_parquet(path).drop(columns=list(newer)).to_parquet(path)
    events = copy / pd.read_parquet(path)["record"].iloc[0]
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    for e in lines:
        if e["type"] == "result":
            for c in newer:
                e.pop(c)
    events.write_text("".join(json.dumps(e) + "\n" for e in lines))
    assert read_rows(copy / "outcomes")["perturbation"].isna().sum() == 1
    report = verify(copy)
    assert report.ok and report.reproduced == 2, report.lines


@pytest.mark.slow
def test_a_deleted_frame_is_caught(copy):
    frame = sorted((copy / "_records").rglob("frames/*.jpg"))[0]
    frame.unlink()
    report = verify(copy)
    assert not report.ok and len(report.lines) == 1 and "record digest" in report.lines[0]
    assert f"frames/{frame.name} is missing" in report.lines[0] and "1 with differences" in report.summary()


@pytest.mark.slow
def test_a_row_copied_from_another_run_is_caught(runs, copy, capsys):
    theirs = sorted((runs[1] / "outcomes").rglob("*.parquet"))[0]
    shutil.copyfile(theirs, copy / theirs.relative_to(runs[1]))
    assert verify_main([str(copy)]) == 1  # the command exits 1 on any difference
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("DIFF ") and "run_id b is not this run's (a)" in line for line in out)
    assert out[-1].startswith("reproduced 1/2 judged episodes")


def test_rescore_shows_exactly_the_flips_of_a_changed_threshold(run, tmp_path, monkeypatch):
    source = run
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    monkeypatch.setattr(GraspSingleCube, "LIFT_M", 0.5)  # a cube must now rise 50 cm
    new = rescore(source, tmp_path / "rescored")
    assert set(new["rescored_from"]) == {str(source.absolute())}
    table = flips(rows_of(source), new).set_index("task")
    assert table.loc["grasp_single_cube", ["episodes", "lost", "gained"]].tolist() == [1, 1, 0]
    assert table.loc["click_bell_right", ["episodes", "lost", "gained"]].tolist() == [1, 0, 0]
    assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before  # the original untouched
    assert verify(tmp_path / "rescored").ok  # a rescored folder verifies under the code that rescored it


def test_a_bundle_verifies_and_a_tampered_one_does_not(run, tmp_path, capsys):
    packed = bundle.pack(run, tmp_path / "a.zip")
    assert verify_main([str(packed)]) == 0
    assert "reproduced 2/2" in capsys.readouterr().out
    import zipfile

    with zipfile.ZipFile(packed) as z, zipfile.ZipFile(tmp_path / "bad.zip", "w") as out:
        for name in z.namelist():
            data = z.read(name)
            out.writestr(
                name, data.replace(b'"success": true', b'"success": false') if name.endswith(".jsonl") else data
            )
    assert verify_main([str(tmp_path / "bad.zip")]) == 1
    out = capsys.readouterr().out
    assert "events.jsonl changed since packing (sha256 " in out and "success true (record: false)" in out


def repackings(packed: Path, tmp: Path) -> dict[str, Path]:
    """A bundle unzipped and packed again each ordinary way: zip with a top folder and directory
    entries, zip without one (``zip -r`` itself where installed), tar.gz, tar, the folder itself."""
    folder = tmp / "unzipped" / "a"
    with zipfile.ZipFile(packed) as z:
        z.extractall(folder)
    forms = {"folder": folder}
    forms["zip, top folder"] = Path(shutil.make_archive(tmp / "top", "zip", folder.parent, "a"))
    forms["zip, no top folder"] = Path(shutil.make_archive(tmp / "flat", "zip", folder))
    forms["tar.gz"] = Path(shutil.make_archive(tmp / "a", "gztar", folder.parent, "a"))
    forms["tar"] = Path(shutil.make_archive(tmp / "b", "tar", folder))
    if shutil.which("zip"):
        subprocess.run(["zip", "-qr", str(tmp / "zip-r.zip"), "a"], cwd=folder.parent, check=True)
        forms["zip -r"] = tmp / "zip-r.zip"
    return forms


def test_any_faithful_repacking_of_a_bundle_unpacks_as_packed(run, tmp_path):
    """A user unzips a bundle and zips it again (``zip -r``: directory entries, a top folder): it
    is the bundle still. Each form unpacks to a run folder whose files match DIGESTS.json."""
    for form, path in repackings(bundle.pack(run, tmp_path / "a.zip"), tmp_path).items():
        root, tmp = unpacked(path)
        try:
            assert (root / RUN_INFO).is_file() and bundle.differences(root) == [], form
        finally:
            if tmp is not None:
                tmp.cleanup()


def test_a_repacked_bundle_that_was_changed_names_each_file(run, tmp_path):
    folder = repackings(bundle.pack(run, tmp_path / "a.zip"), tmp_path)["folder"]
    row = sorted((folder / "outcomes").rglob("*.parquet"))[0]
    row.write_bytes(row.read_bytes() + b"\0")
    (folder / "_provenance" / "0000.json").write_text("{}")
    events = sorted((folder / "_records").rglob("events.jsonl"))[1]
    events.unlink()
    with tarfile.open(tmp_path / "changed.tar.gz", "w:gz") as t:
        t.add(folder, "a")
    root, tmp = unpacked(tmp_path / "changed.tar.gz")
    found = dict(bundle.differences(root))
    tmp.cleanup()
    rel = lambda p: p.relative_to(folder).as_posix()  # noqa: E731
    assert found[rel(row)].startswith("changed since packing (sha256 ")
    assert found[rel(events)] == "missing (listed in DIGESTS.json)"
    assert found["_provenance/0000.json"] == "not in DIGESTS.json (added after packing)"
    assert len(found) == 3


def archived(folder: Path, tool: str, out: Path) -> Path:
    """``folder`` packed by the system's own ``zip -r`` or ``tar -cf``, as a user does by hand."""
    if not shutil.which(tool):
        pytest.fail(f"no {tool} on PATH: install it (apt-get install {tool}; scripts/setup.sh does)", pytrace=False)
    cmd = ["zip", "-qr", str(out), folder.name] if tool == "zip" else ["tar", "-cf", str(out), folder.name]
    subprocess.run(cmd, cwd=folder.parent, check=True)
    return out


@pytest.mark.interop
@pytest.mark.parametrize("tool", ["zip", "tar"])
def test_a_bundle_repacked_by_hand_verifies_end_to_end(run, tmp_path, tool):
    """``python -m vabench.verify`` on a bundle unzipped and packed again with ``zip -r`` or
    ``tar``: a fresh process unpacks it, checks every file against DIGESTS.json, re-simulates both
    episodes and exits 0."""
    folder = repackings(bundle.pack(run, tmp_path / "a.zip"), tmp_path)["folder"]
    packed = archived(folder, tool, tmp_path / f"by-hand.{tool}")
    done = subprocess.run(
        [sys.executable, "-m", "vabench.verify", str(packed)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("reproduced 2/2 judged episodes")


def test_a_file_that_is_no_bundle_is_one_line_and_exit_2(run, tmp_path, capsys):
    packed = bundle.pack(run, tmp_path / "a.zip")
    (tmp_path / "notes.txt").write_text("not an archive")
    with zipfile.ZipFile(packed) as z, zipfile.ZipFile(tmp_path / "no-digests.zip", "w") as out:
        for name in z.namelist():
            if name != bundle.DIGESTS:
                out.writestr(name, z.read(name))
    (tmp_path / "torn.zip").write_bytes(packed.read_bytes()[:-100])
    (tmp_path / "empty").mkdir()
    expected = {
        "notes.txt": "not a zip or tar file",
        "no-digests.zip": "no DIGESTS.json in it, so not a bundle; make one with python -m vabench.bundle",
        "torn.zip": "not a zip or tar file",
        "empty": f"not a run folder ({RUN_INFO}: FileNotFoundError",
    }
    for name, says in expected.items():
        assert verify_main([str(tmp_path / name)]) == 2, name
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and says in err and str(tmp_path / name) in err, err


def test_a_corrupt_outcome_file_is_set_aside_by_the_first_reader_so_pandas_reads_the_run(copy):
    """A real run with one outcome file torn: the plain reader the README promises fails until a
    vabench reader (here the analysis) meets the file and sets it aside, naming it in its note;
    verify names it too, as a difference."""
    bad = sorted((copy / "outcomes").rglob("*.parquet"))[0]
    bad.write_bytes(bad.read_bytes()[:100])
    hour_ago = time.time() - 3600  # torn an hour ago: no copy is still writing it
    os.utime(bad, (hour_ago, hour_ago))
    with pytest.raises(Exception, match="Parquet"):
        pd.read_parquet(copy)
    rows = load_runs(copy)
    ((named, note),) = rows.attrs["unreadable"]
    assert len(rows) == 1 and named == bad and "set aside as _unreadable-" in note
    assert len(pd.read_parquet(copy)) == 1  # pandas reads the run again
    assert [p.name.endswith(bad.name) for p in bad.parent.iterdir()] == [True]
    _, found = outcome_rows(copy)  # verify's reader names it too, as a difference
    key = bad.relative_to(copy / "outcomes").as_posix().removesuffix(".parquet")
    assert found[0][0] == key and "set aside as unreadable" in found[0][1] and len(found) == 1


def test_a_record_older_than_a_state_field_still_verifies():
    """Records written before the state events held the robot state (``robot``) are compared without
    it; where the original has it, it counts like any other field."""
    state = {"type": "state", "step": 0, "arms": {"right": {"gc": [0.3, -0.2, 1.06]}}}
    new = [{**state, "robot": {"right": {"qpos": [0.0] * 9}}}]
    assert compare({}, [state], {}, new) == []
    changed = [{**state, "robot": {"right": {"qpos": [0.1] * 9}}}]
    assert any("robot" in reason for reason in compare({}, new, {}, changed))
