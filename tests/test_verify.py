"""Numbers anyone can check: a run's provenance, ``verify`` reproducing every judged episode from
its records, each kind of tampering caught, rescoring under a changed checker, and bundles.

Every re-simulation costs seconds, so the default suite shares one run (two short oracle
episodes) and one verify of it across the module, catches the tampering that needs no physics at
the row-against-record check, and keeps one tampering (an edited reply) end to end; each
tampering end to end through ``verify`` is ``slow``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.test_launch import composed
from vabench import bundle
from vabench.actors.config import from_config
from vabench.actors.driver import Driver
from vabench.analysis.flips import flips
from vabench.envs.tasks.grasp_single_cube import GraspSingleCube
from vabench.outcomes import read_rows, write_row
from vabench.recordfile import record_digest
from vabench.verify import rescore, verify
from vabench.verify.__main__ import main as verify_main
from vabench.verify.check import _row_identity, load, provenance_differences
from vabench.verify.compare import check_record, compare, plain

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
    info = json.loads((run / "_run.json").read_text())
    df = rows_of(run)
    assert len(df) == 2 and df["success"].all() and set(df["provenance_digest"]) == {info["provenance_digest"]}
    manifest = json.loads((run / "_provenance" / f"{info['provenance_digest']}.json").read_text())
    assert manifest == info["provenance"]
    assert set(manifest) == {"code", "inputs", "machine"} and manifest["code"]["source_digest"]
    assert set(manifest["inputs"]["seed_manifests"]) == set(TASKS)
    assert manifest["machine"]["versions"]["sapien"] and manifest["machine"]["renderer"]
    for _, row in df.iterrows():
        assert row["record_digest"] == record_digest((run / row["record"]).parent)


def test_provenance_differences_with_this_machine_are_named(copy):
    run, info, rows = load(copy)
    path = copy / "_provenance" / f"{info['provenance_digest']}.json"
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
    record = (copy / rows[1]["record"]).parent
    sorted(record.rglob("frames/*.jpg"))[0].unlink()
    assert any("record digest" in x for x in check_record(copy, rows[1])[0])
    _, info, _ = load(copy)
    theirs = {**rows[1], "run_id": "b"}  # what a row of run b says of itself
    assert "run_id b is not this run's (a)" in _row_identity(copy, info, theirs)


@pytest.mark.slow
def test_a_flipped_success_is_caught(copy):
    path = next((copy / "outcomes").rglob("*.parquet"))
    row = {k: plain(v) for k, v in pd.read_parquet(path).iloc[0].to_dict().items()}
    write_row(path, {**row, "success": not row["success"]})
    report = verify(copy)
    assert not report.ok and report.reproduced == 1
    assert any("success false (record: true)" in line for line in report.lines), report.lines


def test_an_edited_reply_is_caught(copy):
    events = next((copy / "_records").rglob("events.jsonl"))
    lines = events.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "reply")
    edited = json.loads(lines[at])
    edited["text"] = json.dumps({"stop": True})
    lines[at] = json.dumps(edited)
    events.write_text("\n".join(lines) + "\n")
    report = verify(copy)
    assert not report.ok and report.reproduced == 1
    line = " ".join(report.lines)
    assert "record digest" in line
    assert 'first differing event: event 2 (decision, step 0): kind "action" -> "stop"' in line


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
    with pytest.raises(SystemExit, match="does not match its digest"):
        verify_main([str(tmp_path / "bad.zip")])


def test_a_record_older_than_a_state_field_still_verifies():
    """Records written before the state events held the robot state (``robot``) are compared without
    it; where the original has it, it counts like any other field."""
    state = {"type": "state", "step": 0, "arms": {"right": {"gc": [0.3, -0.2, 1.06]}}}
    new = [{**state, "robot": {"right": {"qpos": [0.0] * 9}}}]
    assert compare({}, [state], {}, new) == []
    changed = [{**state, "robot": {"right": {"qpos": [0.1] * 9}}}]
    assert any("robot" in reason for reason in compare({}, new, {}, changed))
