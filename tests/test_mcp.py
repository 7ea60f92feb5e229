"""python -m vabench.mcp as clients no one here wrote meet it: the official MCP SDK's own client
over stdio and over streamable HTTP plays a whole grasp_single_cube episode by sending the
oracle's commands as tool calls; bad calls are tool errors with the paper's text that cost
repairs; what the tools return passes the privilege scan; the row is any agent's."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.test_learning import SUMMARY
from tests.test_privilege import _numbers, _object_coordinates
from vabench.envs import EnvConfig, VABenchEnv
from vabench.gym.oracle import expert_decisions
from vabench.results.outcomes import read_rows

ROOT = Path(__file__).parents[1]
TASK, SEED = "grasp_single_cube", 1000  # seeds=1: the task's first verified seed
WORDS = [f"tasks=[{TASK}]", "seeds=1", "render=small", "run_id=r"]
CLIENT = types.Implementation(name="sdk-probe", version="1.0")


@pytest.fixture(scope="module")
def oracle():
    """The oracle's commands on the scene, and every object coordinate of it at reset."""
    env = VABenchEnv(EnvConfig(render=False))
    try:
        env.reset(TASK, SEED)
        secrets = _object_coordinates(env)
        return expert_decisions(TASK, SEED, env), secrets
    finally:
        env.close()


def test_tools_are_named_as_the_paper_names_its_actions_and_tools():
    from vabench.agents.chat.tools import EpisodeTools
    from vabench.mcp.tools import every_action, tool_name

    names = every_action()
    assert names["gripper_move_world"] == "gripper.move_world" and names["camera_view_topdown"] == "camera.view_topdown"
    assert {"left_gripper_open", "right_gripper_close", "dual_gripper_move_world", "dual_gripper_open"} <= set(names)
    assert {"dual_gripper_close", "camera_view_side", "camera_yaw_left", "camera_zoom_in"} <= set(names)
    paper_tools = {tool_name(t) for t in (*EpisodeTools.NAMES, EpisodeTools.DEPTH)}
    assert paper_tools == {"camera_history", "geometry_verify", "perception_depth_point"}


def call_of(decision: dict) -> tuple[str, dict]:
    return decision["action"].replace(".", "_"), {k: v for k, v in decision.items() if k != "action"}


def text(result) -> str:
    return result.content[0].text


async def play(client: Client, decisions: list[dict]) -> list:
    """The oracle's commands as tool calls, after one bad call; every result."""
    results = [await client.call_tool("gripper_move_world", {"axis": "q", "sign": "+", "distance_mm": 5})]
    for decision in decisions:
        results.append(await client.call_tool(*call_of(decision)))
    return results


def test_the_sdk_client_over_stdio_plays_an_episode_to_success(tmp_path, oracle):
    decisions, _ = oracle
    args = ["-m", "vabench.mcp", *WORDS, f"results_dir={tmp_path}"]
    server = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))

    async def session():
        async with Client(server, client_info=CLIENT) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools, await play(client, decisions), await client.call_tool("gripper_open", {})

    tools, results, after = anyio.run(session)
    assert {"observe", "gripper_move_world", "gripper_rotate_local", "camera_view_topdown", "camera_zoom_in"} <= set(
        tools
    )
    assert "stop" in tools and tools["gripper_move_world"].input_schema["properties"]["distance_mm"]["maximum"] == 100
    bad, *moves = results
    assert bad.is_error and "field 'axis' must be one of x, y, z" in text(bad) and text(bad).startswith("Step 0;")
    for i, result in enumerate(moves, 1):
        assert not result.is_error and text(result).startswith(f"Step {i}; budget: not shown under observation=paper")
    assert "The episode is over: success" in text(moves[-1]) and "The episode is over" not in text(moves[-2])
    assert after.is_error and "is over (success)" in text(after)
    [row] = read_rows(tmp_path / "r").to_dict("records")
    assert row["model"] == "mcp:sdk-probe/1.0" and row["success"] and row["steps"] == len(decisions)
    assert row["repairs"] == 1 and row["end_reason"] == "success" and not row["privileged"]


TOKEN = "a-long-enough-token-123"


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    """``python -m vabench.mcp --http --port 0 --token ...`` on a run of its own: (its URL, its run
    folder, its stderr lines so far), shared by the HTTP tests (one start, one env warm-up)."""
    results = tmp_path_factory.mktemp("http")
    cmd = [sys.executable, "-m", "vabench.mcp", "--http", "--port", "0", "--token", TOKEN, *WORDS]
    proc = subprocess.Popen([*cmd, f"results_dir={results}"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    url = None
    for line in proc.stderr:
        lines.append(line)
        if found := re.search(r"at (http://\S+/mcp)", line):
            url = found.group(1)
            break
    drain = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    drain.start()
    try:
        assert url, "".join(lines)
        yield url, results / "r", lines
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        drain.join(timeout=10)


def http_client(url: str, name: str) -> Client:
    """The SDK client over streamable HTTP, with the server's token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(60, read=300))
    me = types.Implementation(name=name, version="1.0")
    return Client(streamable_http_client(url, http_client=http), client_info=me)


def rows_of(run: Path, model: str) -> list[dict]:
    return [r for r in read_rows(run).to_dict("records") if r["model"] == model]


def test_the_sdk_client_over_http_plays_to_success_and_a_left_session_frees_its_episode(http_server, oracle):
    decisions, secrets = oracle
    url, run, log = http_server

    async def sessions():
        async with http_client(url, "sdk-http") as client:  # leaves after looking: no row
            seen = [await client.call_tool("observe", {}), await client.call_tool("camera_view_topdown", {})]
            seen.append(await client.call_tool("camera_warp_drive", {}))  # no such action: refused
        async with http_client(url, "sdk-http") as client:
            first = await client.call_tool("observe", {})
            return client.protocol_version, seen, first, await play(client, decisions)

    era, seen, first, results = anyio.run(sessions)
    assert era == "2025-11-25"  # the handshake era: a session carries the episode
    observe, camera, unknown = seen
    assert [c.type for c in observe.content] == [c.type for c in camera.content] == ["text", "image"]
    assert text(camera).startswith("Step 1;") and unknown.is_error
    assert "unknown action 'camera_warp_drive'" in text(unknown)
    assert text(first).startswith("Step 0;")  # the left episode, played again from its start
    assert "The episode is over: success" in text(results[-1])
    for result in (observe, camera, unknown, first):  # the privilege scan over what the tools returned
        values: list[float] = []
        _numbers(text(result), values)
        assert values and all(abs(v - s) > 5e-4 for v in values for s in secrets)
    [row] = rows_of(run, "mcp:sdk-http/1.0")
    assert row["success"] and row["steps"] == len(decisions) and row["repairs"] == 1
    assert any("ended before its episode did" in line for line in log)
    assert httpx.post(url, json={}).status_code == 401  # the server has a token: none given
    assert httpx.post(url, json={}, headers={"Host": "evil.example"}).status_code == 400


def test_bad_calls_cost_repairs_until_the_episode_ends_and_the_row_is_kept(http_server):
    url, run, _ = http_server

    async def session():
        async with http_client(url, "sdk-bad") as client:
            calls = [("gripper_move_world", {"axis": "x", "sign": "+", "distance_mm": 500}), ("gripper_open", {})]
            calls += [("gripper_rotate_local", {"axis": "rq"}), ("gripper_close", {"arm": "left"}), ("fly", {})]
            return [await client.call_tool(name, args) for name, args in calls]

    out_of_range, fine, bad_axis, bad_arm, ended = anyio.run(session)
    assert out_of_range.is_error and "outside the allowed range [1, 100]" in text(out_of_range)
    assert not fine.is_error and text(fine).startswith("Step 1;")
    assert bad_axis.is_error and text(bad_axis).startswith("Step 1;")
    assert bad_arm.is_error and "Refused" in text(bad_arm) and "The episode is over" not in text(bad_arm)
    assert ended.is_error and "The episode is over: repairs_exhausted" in text(ended)  # harness.max_repairs=2
    [row] = rows_of(run, "mcp:sdk-bad/1.0")
    assert row["end_reason"] == "repairs_exhausted" and row["steps"] == 1 and row["repairs"] == 3


def test_the_launcher_refuses_model_mcp_and_the_server_refuses_bad_words_in_one_line(tmp_path):
    launch = [sys.executable, "-m", "vabench.launch", "model=mcp", f"results_dir={tmp_path}", *WORDS]
    done = subprocess.run(launch, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "python -m vabench.mcp" in done.stderr and not (tmp_path / "r").exists()
    server = [sys.executable, "-m", "vabench.mcp", "tasks=[grasp_singel_cube]", f"results_dir={tmp_path}"]
    done = subprocess.run(server, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "grasp_single_cube" in done.stderr


@pytest.mark.slow
def test_inspect_ai_plays_an_episode_and_its_score_is_the_rows(tmp_path, oracle):
    """inspect_ai with its own MCP support (mcp_server_stdio) and mockllm/model scripted to call the
    tools: the eval log's score (the server's verdict, vabench's checker) is the row's outcome. In
    a venv of its own (tests/inspect_venv.py: built once, minutes)."""
    from tests.inspect_venv import inspect_venv

    venv = inspect_venv()
    decisions, _ = oracle
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([["observe", {}], *(list(call_of(d)) for d in decisions)]))
    litellm = Path(importlib.util.find_spec("litellm").submodule_search_locations[0])
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(litellm / "litellm_core_utils" / "tokenizers")}  # offline
    script = [str(venv / "bin" / "python"), str(ROOT / "tests" / "inspect_eval.py"), str(calls), str(tmp_path / "logs")]
    script += [sys.executable, str(ROOT), "--", *WORDS, f"results_dir={tmp_path}"]
    done = subprocess.run(script, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    log = json.loads(done.stdout.strip().splitlines()[-1])
    [row] = read_rows(tmp_path / "r").to_dict("records")
    assert log["status"] == "success" and log["tool_calls"] == len(decisions) + 1
    assert log["score"] == "C" and log["answer"] == row["end_reason"] == "success" and row["success"]
    assert row["model"].startswith("mcp:") and row["steps"] == len(decisions)


def test_under_summary_own_the_sdk_client_studies_the_demonstration_writes_its_summary_then_plays(
    tmp_path, demo_root, oracle
):
    from vabench.agents.summaries.summary_store import SummaryStore
    from vabench.results.recordfile import read_events

    decisions, secrets = oracle
    words = [*WORDS, "summary=own", f"demo_root={demo_root}", f"results_dir={tmp_path}"]
    server = StdioServerParameters(command=sys.executable, args=["-m", "vabench.mcp", *words], cwd=str(ROOT))

    async def session():
        async with Client(server, client_info=CLIENT) as client:
            stage = {t.name: t for t in (await client.list_tools()).tools}
            early = await client.call_tool("gripper_open", {})
            index = await client.call_tool("demonstration", {})
            too_soon = await client.call_tool("write_summary", SUMMARY)  # no frame seen yet
            frames = await client.call_tool("demonstration", {"steps": [0, 2, 5]})
            started = await client.call_tool("write_summary", SUMMARY)
            tools = {t.name for t in (await client.list_tools()).tools}
            observed = await client.call_tool("observe", {})
            return (
                stage,
                (early, too_soon),
                (index, frames),
                started,
                tools,
                observed,
                [await client.call_tool(*call_of(d)) for d in decisions],
            )

    stage, (too_early, too_soon), (index, frames), started, tools, observed, moves = anyio.run(session)
    assert set(stage) == {"observe", "demonstration", "write_summary"}
    assert "pre_close_checks" in stage["write_summary"].input_schema["required"]
    assert too_early.is_error and "write your summary first" in text(too_early)
    assert too_soon.is_error and "write_summary is blocked until at least 3 distinct frames" in text(too_soon)
    assert "frames 0..5" in text(index) and "grasp the red cube" in text(index) and "expert." not in text(index)
    assert [(c.type, c.mime_type) for c in frames.content[1:]] == [("image", "image/jpeg")] * 3
    assert "demo grasp_single_cube frame 2/5" in text(frames)
    assert not started.is_error and "Summary saved" in text(started) and "Step 0;" in text(started)
    assert "the middle band of two opposite side faces" in text(started) and started.content[-1].type == "image"
    assert {"gripper_move_world", "camera_view_topdown"} <= tools and "write_summary" not in tools
    assert "the middle band of two opposite side faces" in text(observed)
    for result in (index, frames, started, observed):  # the privilege scan over what the tools returned
        values: list[float] = []
        _numbers(text(result), values)
        assert all(abs(v - s) > 5e-4 for v in values for s in secrets)
    assert "The episode is over: success" in text(moves[-1])
    run = tmp_path / "r"
    [row] = read_rows(run).to_dict("records")
    stored = SummaryStore(tmp_path / "_summaries" / "small").load("mcp:sdk-probe/1.0", TASK)
    assert stored.fields["grasp_region"] == SUMMARY["grasp_region"] and len(stored.frames_inspected) == 3
    assert row["summary_model"] == row["model"] == "mcp:sdk-probe/1.0" and row["summary_learned"]
    assert row["summary_digest"] == stored.digest() and row["success"] and row["summary_source"] == "own"
    assert any(e.get("summary") == stored.text() for e in read_events(run / row["record"]))
    [learned] = (run / "_learning" / TASK).iterdir()  # the stage's record, as a model's learning's
    tools = [e["payload"]["tool"] for e in read_events(learned / "events.jsonl") if e["type"] == "answer"]
    assert tools == ["expert.retrieve", "expert.learn", "expert.frame", "expert.learn"]
