"""Each intervention's boundary over real HTTP (issue 27): the requests of a run under an
intervention differ from the paper condition's requests for the same replies by exactly its
declared manifest (vabench.core.interventions), and nothing else; and the names reach every row, label,
folder and run info, never pooled with the paper condition."""

from __future__ import annotations

import json
import re

import pytest

from tests.openai_server import ScriptedServer
from tests.test_harness import KEY_VAR, llm
from tests.test_observation import _images, _is_observation, _texts, script
from vabench.agents.chat import prompts
from vabench.agents.episode import Episode, HarnessConfig, run_episode
from vabench.agents.summaries.summary_store import SummaryStore, resolve_summary
from vabench.core.condition import Condition
from vabench.core.interventions import MANIFESTS, check_composes, in_force, manifest
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import RUN_INFO, RunInfo

MOVE = {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 30}
STOP = {"stop": True, "reason": "test over"}
DECISIONS = {"active": [{"action": "camera.view_side"}, MOVE, STOP], "passive": [MOVE, MOVE, STOP]}
CASES = [(n, p) for n, m in MANIFESTS.items() if n not in ("none", "expert_summary") for p in m.protocols]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "sk-test-not-a-secret-123")


def _requests(env, tmp_path, protocol: str, intervention: str, decisions, task="grasp_single_cube"):
    with ScriptedServer(default=script(*decisions)) as server:
        row = run_episode(
            env,
            llm(server),
            Episode.of(task, 1000, protocol, env=env, intervention=intervention),
            tmp_path / intervention,
            HarnessConfig(),
        )
        return row, list(server.requests)


def _without_objects(text: str) -> str:
    """An observation text less its object_poses block (the head line and one line per body)."""
    if prompts.OBJECT_POSES_HEAD not in text:
        return text
    before, _, after = text.partition(prompts.OBJECT_POSES_HEAD + "\n")
    lines = after.splitlines(keepends=True)
    while lines and lines[0].startswith("- "):
        lines.pop(0)
    return before + "".join(lines)


def _system_added(intervention: str, protocol: str, paper: str) -> str:
    """The paper's system prompt with exactly the manifest's system text put in."""
    if intervention == "object_poses":
        return paper.replace("\n\nCamera", f"\n- [object_poses] {prompts.OBJECT_POSES_RULE}\n\nCamera", 1)
    if intervention == "depth_point":
        return paper.replace(prompts.TOOLS, prompts.TOOLS + "\n" + prompts.DEPTH_TOOL)
    views = manifest(intervention).views
    if protocol == "active":
        camera = next(p for p in paper.split("\n\n") if p.startswith("Camera (active"))
        return paper.replace(camera, camera + "\n\n" + prompts.VIEWS_ACTIVE.format(views=", ".join(views)))
    n = "one image" if len(views) == 1 else f"{len(views)} images"
    listed = ", ".join(f"{i} {v}" for i, v in enumerate(views, 1))
    return paper.replace(prompts.PASSIVE_CAMERA, prompts.VIEWS_PASSIVE.format(n=n, views=listed))


@pytest.mark.parametrize(("intervention", "protocol"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_requests_differ_from_the_paper_condition_by_exactly_the_manifest(render_env, tmp_path, intervention, protocol):
    decisions = DECISIONS[protocol]
    paper_row, paper = _requests(render_env, tmp_path, protocol, "none", decisions)
    row, treated = _requests(render_env, tmp_path, protocol, intervention, decisions)
    poses = render_env.object_poses()  # the scene as the last observation saw it (the stop changed nothing)
    assert (row.intervention, paper_row.intervention) == (intervention, "none")
    assert f"| intervention {intervention}" in row.condition and "intervention" not in paper_row.condition
    assert len(treated) == len(paper) == len(decisions) and row.steps == paper_row.steps
    views = manifest(intervention).views
    for p, t in zip(paper, treated, strict=True):
        assert t["messages"][0]["content"] == _system_added(intervention, protocol, p["messages"][0]["content"])
        assert len(t["messages"]) == len(p["messages"])
        for pm, tm in zip(p["messages"][1:], t["messages"][1:], strict=True):
            pt, tt = _texts(pm), _texts(tm)
            if intervention == "object_poses" and _is_observation(tm):
                assert prompts.OBJECT_POSES_HEAD in tt[0] and [_without_objects(tt[0]), *tt[1:]] == pt
            elif views and _is_observation(tm):  # one line says which images follow
                diff = [(a, b) for a, b in zip(pt[0].splitlines(), tt[0].splitlines(), strict=True) if a != b]
                assert len(diff) == 1 and diff[0][0].startswith("Image") and ", ".join(views) in diff[0][1]
                kept = ("active", *views)  # earlier images' stubs: those of the images this condition sends
                assert tt[1:] == [x for x in pt[1:] if x.endswith(" active]")] + [
                    x for x in tt[1:] if not x.endswith(" active]")
                ] and all(x.rsplit(" ", 1)[1][:-1] in kept for x in tt[1:])
            else:
                assert tt == pt
            pi, ti = _images(pm), _images(tm)
            if views and protocol == "passive" and pi:  # the declared views of the same five, no other image
                assert ti == [pi[prompts.PASSIVE_VIEWS.index(v)] for v in views]
            elif views and pi:  # active: the camera's image, then the five observer views
                assert ti[:1] == pi and len(ti) == 6
            else:
                assert ti == pi
    last = [m for m in treated[-1]["messages"] if _is_observation(m)][-1]
    if intervention == "object_poses":  # the block states the simulator's bodies, as declared
        assert prompts.objects_text(poses) in _texts(last)[0]
        assert {o["name"] for o in poses} == set(render_env.world.bodies)
    else:
        assert prompts.OBJECT_POSES_HEAD not in json.dumps(treated)


def test_the_depth_tool_answers_the_world_point_under_a_pixel_and_exists_only_under_depth_point(render_env, tmp_path):
    ask = {"tool": "perception.depth_point", "args": {"u": 320, "v": 420}}
    off = {"tool": "perception.depth_point", "args": {"u": 5000, "v": 0}}
    row, requests = _requests(render_env, tmp_path, "active", "depth_point", [ask, off, STOP])
    point = render_env.depth_point("active", 320, 420)  # the camera has not moved since
    answers = [t for m in requests[-1]["messages"] if m["role"] == "user" for t in _texts(m) if t.startswith("Tool ")]
    shown = [float(x) for x in re.findall(r"world point \[([^\]]+)\]", answers[0])[0].split(",")]
    assert shown == [round(float(c), 4) for c in point] and row.tool_calls == 2 and row.repairs == 0
    assert abs(point[2] - 0.74) < 0.06  # the table or an object on it, seen from the first view
    assert "0 <= u < 640" in answers[1]
    paper_row, _ = _requests(render_env, tmp_path, "active", "none", [ask, STOP])
    assert paper_row.tool_calls == 0 and paper_row.repairs == 1  # under the paper's boundary: no such tool


def test_what_does_not_compose_is_a_config_error_naming_it():
    with pytest.raises(ValueError, match=r"views_1 does not compose with protocol=active.*use protocol=passive"):
        check_composes("views_1", ["active", "passive"], "none", offline=False)
    with pytest.raises(ValueError, match=r"views_5 .* protocol=passive.*use protocol=active"):
        check_composes("views_5", ["passive"], "own", offline=False)
    with pytest.raises(ValueError, match=r"summary=expert does not compose with an offline agent"):
        check_composes("none", ["active"], "expert", offline=True)
    with pytest.raises(ValueError, match=r"unknown intervention 'object_pose'; did you mean 'object_poses'\?"):
        manifest("object_pose")
    check_composes("object_poses", ["active", "passive"], "expert", offline=False)


def test_names_reach_the_label_the_folder_and_the_manifest_list():
    both = EpisodeSpec(Condition("m", "active", "expert", intervention="object_poses"), "grasp_single_cube", 1000)
    assert "intervention" not in EpisodeSpec(Condition("m", "active", "own"), "t", 1).condition.label
    assert both.condition.label == "m | active | summary expert | intervention expert_summary+object_poses"
    assert both.identity()["intervention"] == "expert_summary+object_poses"
    assert Condition.of_row(both.identity()) == both.condition  # the row names its condition
    assert "/intervention_expert_summary+object_poses/" in both.key
    assert [m.name for m in in_force("object_poses", "expert")] == ["expert_summary", "object_poses"]
    assert in_force("none", "own") == []


def test_expert_summaries_are_the_learned_schema_procedure_only_and_reused_by_variants(tmp_path):
    from vabench.envs.tasks import TASKS

    store = SummaryStore(tmp_path)
    texts = {}
    for task, cls in TASKS.items():
        s = resolve_summary(store, "expert", "any/model", task)
        assert s.task == cls.summary_task and s.summary_model == "expert"
        texts[task] = s.text()
        assert not re.search(r"\d\.\d|\[\s*-?\d", json.dumps(s.fields)), task  # no coordinates or seed numbers
    assert texts["grasp_single_cube_heldout"] == texts["grasp_single_cube"]
    basket = resolve_summary(store, "expert", "m", "put_everything_in_basket").fields
    assert set(basket["object_strategies"]) == {"cube", "lying bottle", "upright bottle", "pen"}
    assert not list(tmp_path.iterdir())  # nothing learned, nothing stored


def test_posetext_solves_from_the_stated_poses_and_stops_without_them(render_env, tmp_path):
    from vabench.agents.models.posetext import NO_POSES, PosetextAgent

    run = Episode.of("place_single_cube", 1003, "passive", env=render_env, intervention="object_poses")
    row = run_episode(render_env, PosetextAgent(), run, tmp_path / "poses")
    assert (row.success, row.intervention, row.privileged) == (True, "object_poses", False)
    run = Episode.of("place_single_cube", 1003, "passive", env=render_env)
    paper = run_episode(render_env, PosetextAgent(), run, tmp_path / "paper", HarnessConfig())
    assert (paper.success, paper.end_reason, paper.steps) == (False, "stop", 0)
    assert NO_POSES in (tmp_path / "paper" / "events.jsonl").read_text()


def test_servo_measures_with_the_depth_tool_instead_of_probe_moves(render_env, tmp_path):
    from vabench.agents.models.servo import ServoAgent
    from vabench.results.records import read_events

    run = Episode.of("grasp_single_cube", 1002, "active", env=render_env, intervention="depth_point")
    row = run_episode(render_env, ServoAgent(), run, tmp_path)
    events = read_events(tmp_path / "events.jsonl")
    tools = [e for e in events if e["type"] == "tool_result"]
    assert row.success and row.tool_calls == len(tools) >= 2 and row.intervention == "depth_point"
    answers = [e["text"] for e in events if e["type"] == "turn" and e.get("kind") == "tool"]
    assert "world point [" in answers[0]  # the target located by depth, not by probe moves


def test_attribution_pairs_each_intervention_with_its_paper_condition_on_full_rows():
    """On rows with every column (as a run folder holds them), the per-family pairs are counted: the
    table once compared columns trimmed to the rate columns, where no row was judged (no status,
    no success), and so printed subsets of zero pairs and no family at all."""
    import pandas as pd

    from vabench.analysis import attribution, recovers_most
    from vabench.core.condition import condition_label
    from vabench.results.outcomes import OutcomeRow

    rows = []
    for iv, wins in (("none", {1000}), ("object_poses", {1000, 1001, 1002, 1003})):
        for seed in range(1000, 1005):
            task = {"task": "place_single_cube", "base_task": "place_single_cube", "arms": "single", "seed": seed}
            done = {"status": "ok", "success": seed in wins, "end_reason": "stop"}
            r = OutcomeRow(model="posetext", protocol="passive", intervention=iv, **task, **done).row()
            rows.append({**r, "condition": condition_label("posetext", "passive", "none", intervention=iv)})
    att = attribution(pd.DataFrame(rows), n_boot=200)
    fam = att[att["scope"] == "task"].iloc[0]
    assert (fam["task"], fam["pairs"], fam["a_k"], fam["b_k"], fam["a_only"], fam["b_only"]) == (
        "place_single_cube", 5, 1, 4, 0, 3)  # fmt: skip
    assert fam["delta_pp"] == 60 and fam["mcnemar_p"] == 0.25  # 3 discordant pairs, all one way: 2 / 2**3
    single = att[(att["scope"] == "subset") & (att["task"] == "single")].iloc[0]
    assert single["ci_low_pp"] <= 60 <= single["ci_high_pp"] and single["ci_high_pp"] > 0
    assert recovers_most(att)[["task", "intervention"]].values.tolist() == [["place_single_cube", "object_poses"]]


@pytest.mark.slow  # seven launcher jobs in sequence (about 3 minutes on 2 cores)
def test_the_interventions_experiment_runs_every_job_end_to_end_on_a_fake_provider(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from vabench.analysis import attribution, attribution_bars, load_runs

    root = Path(__file__).resolve().parents[1]
    with ScriptedServer(default=script({"action": "gripper.open"}, STOP)) as server:
        cmd = [sys.executable, "-m", "vabench.launch", "-m", "+experiment=interventions", "model=openai"]
        cmd += ["model.id=openai/fake", "model.api_key_env=VABENCH_TEST_KEY", "model.max_retries=0", "render=small"]
        cmd += [f"model.api_base={server.url}", "tasks=[grasp_single_cube]", "seeds=1", "ray.address=none"]
        cmd += [f"results_dir={tmp_path}", "run_id=iv", "recording.video=false"]
        env = {**os.environ, "VABENCH_TEST_KEY": "sk-test-iv", "RAY_USAGE_STATS_ENABLED": "0"}
        done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    df = load_runs(tmp_path / "iv")
    assert (df["status"] == "ok").all() and len(df) == 2 + 2 + 2 + 1 + 1 + 1 + 2
    assert sorted(set(df["intervention"])) == sorted(
        ["none", "object_poses", "depth_point", "views_1", "views_3", "views_5", "expert_summary"]
    )
    assert df.groupby("intervention")["condition"].nunique().max() <= 2  # one condition per protocol, never pooled
    info = [RunInfo.read(p) for p in (tmp_path / "iv").glob("job*") if (p / RUN_INFO).is_file()]
    listed = sorted(m["name"] for i in info for m in i.interventions)
    assert listed == sorted(["object_poses", "depth_point", "views_1", "views_3", "views_5", "expert_summary"])
    att = attribution(df)  # each intervention paired with the paper condition on the shared seed
    assert attribution_bars(att, tmp_path / "attribution.png").stat().st_size > 0
    families = att[att["scope"] == "task"]
    assert set(families["intervention"]) == set(listed) and (families["pairs"] == 1).all()
