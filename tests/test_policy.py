"""The policy-server agent (model=policy) against a server on openpi-client's own serialisation
(tests/openpi_server.py): the launcher runs it like any agent (rows, records, verify, analysis, the
review app), the frames are openpi's byte for byte both ways, a vector becomes the paper's commands,
and a dead or misbehaving server gets the plain refusal and infra handling of a dead LLM endpoint."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests
from openpi_client import msgpack_numpy
from openpi_client.websocket_client_policy import WebsocketClientPolicy

from tests.openpi_server import OpenpiServer, Scripted
from tests.test_gym import expert_decisions
from tests.test_launch import validate
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models import policy_wire
from vabench.agents.models.kinds import make_model
from vabench.agents.models.policy import probe
from vabench.agents.models.policy_actions import ActionMapping, CommandMaker, vectors_of
from vabench.analysis.load import load_runs
from vabench.envs import RENDER_PRESETS, EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.actions import parse_action
from vabench.envs.seeds import eval_seeds
from vabench.launch import Exit
from vabench.results.outcomes import read_rows
from vabench.results.recordfile import read_events
from vabench.run.config.run import ConfigError
from vabench.serve_policy import PolicyServer, ZeroPolicy

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TASK = "grasp_single_cube"


def launch(results: Path, *overrides: str, run_id: str = "policy") -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vabench.launch", f"results_dir={results}", f"run_id={run_id}", "ray.address=none"]
    return subprocess.run([*cmd, *overrides], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)


def small_env() -> VABenchEnv:
    return VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=RecordingConfig(enabled=False, video=False)))


def policy(url: str, **extra) -> ModelConfig:
    return ModelConfig(id="policy", timeout_s=30, extra={"url": url, **extra})


# -- a launcher run against an openpi-client server -------------------------------------------------


@pytest.fixture(scope="module")
def served_run(tmp_path_factory):
    """The oracle's commands on the first manifest seed, as 7-vectors served in chunks of 4 by a
    server on openpi-client's serialisation, run by the launcher as model=policy. Its metadata says
    it was trained on that seed (as a checkpoint's does: vabench.learn.policy)."""
    seed = eval_seeds(TASK)[0]
    metadata = {"name": "oracle", "trained_on": {TASK: [seed, 5], "place_cube_in_bowl": [seed]}}
    server = OpenpiServer(Scripted(vectors_of(expert_decisions(TASK, seed), ("right",)), horizon=4), metadata)
    results = tmp_path_factory.mktemp("policy")
    done = launch(
        results, "model=policy", f"model.extra.url={server.url}", f"tasks=[{TASK}]", "seeds=1", "render=small"
    )
    closed = server.wait_closed()
    server.shutdown()
    assert done.returncode == Exit.JUDGED, done.stderr[-3000:]  # a failed launch shows its own error first
    assert closed
    return results / "policy", server, seed, done.stderr


def test_the_launcher_runs_a_policy_server_like_any_agent(served_run):
    run, server, seed, _ = served_run
    rows = read_rows(run)
    assert len(rows) == 1
    row = rows.iloc[0]
    assert (row.model, row.task, row.seed, row.status, row.success) == ("policy", TASK, seed, "ok", True)
    assert (row.budget, row.budget_scale, row.privileged) == (
        500,
        10.0,
        False,
    )  # a policy's default: 10 x the task's 50
    assert (server.connections, server.dropped) == (2, 0)  # the probe's and the run's, each closed with a close frame
    assert row.model_calls == row.provider_attempts == len(server.received) >= 2  # one per chunk
    assert row.model_latency_s > 0 and row.steps == len(expert_decisions(TASK, seed))
    events = read_events(run / row.record)
    answers = [e for e in events if e["type"] == "answer"]  # an agent's answers (a chat model's: replies)
    assert len(answers) == row.steps and sum(e["model_latency_s"] > 0 for e in answers) == row.model_calls
    assert sum(e["model_calls"] for e in answers) == row.model_calls
    assert (run / row.record).parent.joinpath("frames").is_dir()


def test_the_launcher_warns_once_when_a_checkpoint_is_evaluated_on_its_training_seeds(served_run):
    _, _, seed, stderr = served_run
    assert [line for line in stderr.splitlines() if line.startswith("warning: the policy")] == [
        f"warning: the policy was trained on 1 of this run's episodes (its metadata's trained_on: {TASK} {seed}); "
        "their results measure fitting, not generalisation"
    ]


def test_the_server_gets_the_images_state_and_instruction_a_model_gets(served_run):
    _, server, _, _ = served_run
    obs = server.received[0]
    assert sorted(obs) == ["observation/image", "observation/state", "prompt"]
    image, state = obs["observation/image"], obs["observation/state"]
    assert (image.dtype, image.shape) == (np.uint8, (240, 320, 3)) and image.std() > 5
    assert state.dtype == np.float32 and state.shape == (11,) and state[-1] == 0.0  # gripper open at first
    assert obs["prompt"] == "Use the right arm to grasp the red cube and lift it off the table."


def test_verify_resimulates_a_policy_run_and_analysis_loads_it(served_run):
    run, _, _, _ = served_run
    done = subprocess.run([sys.executable, "-m", "vabench.verify", str(run)], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    df = load_runs(run)
    assert list(df["condition"]) == ["policy | active | summary none | render small | budget_scale 10"]
    assert df["success"].all()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_review_app_opens_the_policy_episode(served_run):
    run, _, _, _ = served_run
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "vabench.review", str(run), "--port", str(port)], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        assert proc.stdout.readline().strip().startswith(f"vabench review: {url}/")
        deadline = time.monotonic() + 60
        while True:  # the URL is printed before uvicorn binds
            try:
                rows = requests.get(f"{url}/run/0/api/rows", timeout=5).json()
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, "the review server did not come up"
                time.sleep(0.1)  # polling interval while uvicorn binds (not synchronisation)
        record = read_rows(run).iloc[0].record
        page = requests.get(f"{url}/run/0/episode", params={"record": record}, timeout=10)
        assert page.status_code == 200 and "gripper.move_world" in page.text and "policy" in page.text
        assert "policy" in json.dumps(rows)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


# -- the wire: openpi's frames both ways ------------------------------------------------------------


def test_the_frames_are_openpi_clients_byte_for_byte():
    image = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    obs = {"observation/image": image, "observation/state": np.ones(11, np.float32), "prompt": "lift",
           "n": np.int64(3), "nested": {"a": np.zeros((2, 7))}}  # fmt: skip
    assert policy_wire.pack(obs) == msgpack_numpy.packb(obs)
    back = policy_wire.unpack(msgpack_numpy.packb(obs))
    assert (
        back["prompt"] == "lift"
        and back["n"] == 3
        and np.array_equal(back["observation/image"], obs["observation/image"])
    )
    assert msgpack_numpy.unpackb(policy_wire.pack(obs))["nested"]["a"].shape == (2, 7)


def test_openpi_clients_own_client_reads_vabench_serve_policy():
    server = PolicyServer(ZeroPolicy(horizon=5), port=0).start()
    try:
        client = WebsocketClientPolicy(f"ws://127.0.0.1:{server.port}")
        assert client.get_server_metadata()["policy"] == "zero"
        reply = client.infer({"observation/state": np.zeros(22, np.float32), "prompt": "x"})
        assert reply["actions"].shape == (5, 14) and "infer_ms" in reply["server_timing"]
        assert requests.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5).status_code == 200
    finally:
        server.shutdown()


# -- a vector becomes the paper's commands ----------------------------------------------------------


class Proprio:
    def __init__(self, closed=False, rx=(0, 0, -1), ry=(1, 0, 0), rz=(0, -1, 0)):
        self.gripper_closed, self.rx, self.ry, self.rz = closed, rx, ry, rz


def test_a_vector_becomes_one_command_per_axis_then_the_gripper():
    maker = CommandMaker(ActionMapping(), ("right",))
    got = maker.commands(np.array([0.02, 0, -0.005, np.radians(30), 0, 0, 1.0]), {"right": Proprio()})
    assert got == [
        {"action": "gripper.move_world", "axis": "x", "sign": "+", "distance_mm": 20.0},
        {"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 5.0},
        {"action": "gripper.rotate_local", "axis": "rx", "sign": "+", "angle_deg": pytest.approx(30.0)},
        {"action": "gripper.close"},
    ]
    for c in got:
        parse_action(c, ("right",))  # each one the env accepts


def test_an_all_zero_vector_is_one_no_op_step_and_small_steps_add_up():
    maker = CommandMaker(ActionMapping(), ("right",))
    hold = [{"action": "gripper.open"}]
    assert maker.commands(np.zeros(7), {"right": Proprio()}) == hold
    held = np.array([0, 0, 0, 0, 0, 0, 1.0])  # no motion, the gripper as it is (closed): a no-op too
    assert maker.commands(held, {"right": Proprio(closed=True)}) == [{"action": "gripper.close"}]
    steps = [maker.commands(np.array([0.0004, 0, 0, 0, 0, 0, 0]), {"right": Proprio()}) for _ in range(5)]
    assert steps[:2] == [hold, hold] and steps[2][0]["distance_mm"] == pytest.approx(1.2)  # 0.4 mm x 3
    big = maker.commands(np.array([0, 0.25, 0, 0, 0, 0, 0]), {"right": Proprio()})  # past the paper's 100 mm: dropped
    assert big == [{"action": "gripper.move_world", "axis": "y", "sign": "+", "distance_mm": 100.0}]
    assert maker.commands(np.zeros(7), {"right": Proprio()}) == hold


def test_world_rotations_turn_about_the_local_axes_that_point_there_and_two_arms_name_the_arm():
    maker = CommandMaker(ActionMapping(rotation_frame="world"), ("left", "right"))
    vec = np.zeros(14)
    vec[5] = np.radians(20)  # the left arm: yaw about world z, its approach axis rx points down
    vec[13] = 1.0  # the right arm: close
    got = maker.commands(vec, {"left": Proprio(), "right": Proprio()})
    assert got == [{"action": "gripper.rotate_local", "axis": "rx", "sign": "-", "angle_deg": pytest.approx(20.0),
                    "arm": "left"}, {"action": "gripper.close", "arm": "right"}]  # fmt: skip


def test_the_experts_commands_survive_becoming_vectors():
    decisions = [
        {"action": "gripper.open"},
        {"action": "gripper.move_world", "axis": "y", "sign": "-", "distance_mm": 42.5},
        {"action": "gripper.rotate_local", "axis": "rz", "sign": "+", "angle_deg": 12.0},
        {"action": "gripper.close"},
        {"action": "gripper.move_world", "axis": "z", "sign": "+", "distance_mm": 80},
    ]
    vectors, state, maker = (
        vectors_of(decisions, ("right",)),
        {"right": Proprio()},
        CommandMaker(ActionMapping(), ("right",)),
    )
    for decision, vector in zip(decisions, vectors, strict=True):
        (command,) = maker.commands(vector, state)
        assert command == {k: pytest.approx(v) if isinstance(v, float) else v for k, v in decision.items()}
        state["right"].gripper_closed = command["action"] == "gripper.close" or state["right"].gripper_closed


# -- configuration, a dead server, a misbehaving one ------------------------------------------------


@pytest.mark.parametrize(
    "overrides,line",
    [
        (["model.extra.url=http://x:1"], "'model.extra.url' must be a ws:// or wss:// URL, got 'http://x:1'"),
        (
            ["+model.extra.chunk=4"],
            "'model.extra.chunk' is not a policy setting (did you mean 'model.extra.chunk_steps'?)",
        ),
        (["model.extra.rotation_frame=base"], "'model.extra.rotation_frame' must be one of local, world, got 'base'"),
    ],
)
def test_a_policy_config_mistake_is_one_line(overrides, line):
    with pytest.raises(ConfigError) as e:
        validate("model=policy", *overrides)
    assert str(e.value) == f"'model': {line}"


def test_a_dead_server_is_refused_in_one_line_before_any_work(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{s.getsockname()[1]}"
    done = launch(tmp_path / "r", "model=policy", f"model.extra.url={url}", f"tasks=[{TASK}]", "seeds=1", run_id="dead")
    assert done.returncode == Exit.REFUSED, done.stderr[-2000:]
    assert (done.stdout + done.stderr).strip().splitlines() == [
        f"endpoint: model.extra.url={url}: connection refused (nothing listens there); start it (e.g. python -m "
        "vabench.serve_policy --demo) or fix model.extra.url"
    ]
    assert not (tmp_path / "r").exists()


def test_a_server_that_is_not_a_websocket_policy_server_is_named():
    class NotFound(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 (the stdlib's name)
            self.send_error(404)

        def log_message(self, *args):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        url = f"ws://127.0.0.1:{web.server_address[1]}"
        line = probe(policy(url))
        assert line.startswith(f"model.extra.url={url}: not a websocket policy server (HTTP 404 to the handshake)")
    finally:
        web.shutdown()
    served = OpenpiServer(Scripted(np.zeros((1, 7))))
    assert probe(policy(served.url)) is None and served.received == []  # metadata only: nothing inferred
    served.shutdown()


class Raising(Scripted):
    def infer(self, obs):
        raise RuntimeError("CUDA out of memory")


class NoActions(Scripted):
    def infer(self, obs):
        return {"action": np.zeros((4, 7), np.float32)}


@pytest.mark.parametrize(
    "served,kind,error",
    [
        (
            Raising(np.zeros((1, 7))),
            "infra",
            "model: policy server ws://127.0.0.1:{port} failed: RuntimeError: CUDA out of memory",
        ),
        (
            NoActions(np.zeros((1, 7))),
            "permanent",
            "model: policy server: its reply has no 'actions' (it has action, server_timing); set model.extra",
        ),
    ],
)
def test_a_misbehaving_server_ends_the_episode_as_infra_or_permanent(tmp_path, served, kind, error):
    server = OpenpiServer(served)
    try:
        env = small_env()
        row = run_episode(
            env, make_model(policy(server.url)), Episode.of(TASK, eval_seeds(TASK)[0], env=env), tmp_path / "ep"
        )
    finally:
        server.shutdown()
    assert (row.status, row.end_reason, row.error_kind, row.steps) == ("infra_error", "infra_error", kind, 0)
    assert row.error.startswith(error.format(port=server.port))


def test_passive_sends_the_five_views_under_their_keys(tmp_path):
    server = OpenpiServer(Scripted(np.zeros((0, 7))), {})
    agent = make_model(policy(server.url, image_keys={"topdown": "cam/top"}))
    try:
        env = small_env()
        episode = Episode.of(TASK, eval_seeds(TASK)[0], protocol="passive", env=env, budget_scale=0.04)  # 2 steps
        row = run_episode(env, agent, episode, tmp_path / "ep")
    finally:
        server.shutdown()
    assert (row.success, row.end_reason, row.steps, row.budget, row.model_calls) == (False, "budget", 2, 2, 1)
    names = ["cam/top", "observation/image_front_side_45", "observation/image_oblique_45", "observation/image_side",
             "observation/image_side_top_45", "observation/state", "prompt"]  # fmt: skip
    assert sorted(server.received[0]) == names and server.received[0]["cam/top"].shape == (240, 320, 3)


def test_the_step_budget_is_a_condition_key_a_policy_defaults_to_10():
    """A policy's budget is the condition key budget_scale (10 unless set; any other agent's: 1), in
    the row and the label, never in the model's name; the old model.extra key is moved (a kept
    _run.json) or, on the command line, refused naming the new key; a policy's settings need no +."""
    from vabench.launch.words import misspelt

    assert (validate("model=policy").condition.budget_scale, validate().condition.budget_scale) == (10.0, 1.0)
    run = validate("model=policy", "budget_scale=20", "model.extra.position_scale=2")
    assert (run.condition.model, run.condition.budget_scale, run.model.extra["position_scale"]) == ("policy", 20.0, 2)
    assert run.condition.label == "policy | active | summary none | budget_scale 20"
    assert run.condition.budget(50) == 1000 and run.condition.folders() == ("budget_scale_20",)
    assert validate("model=policy", "+model.extra.budget_scale=0.5").condition.budget_scale == 0.5
    with pytest.raises(ConfigError, match=r"^'budget_scale': must be a number > 0, got 0$"):
        validate("model=policy", "budget_scale=0")
    line = "'model.extra.budget_scale' is now 'budget_scale': budget_scale=0.5"
    assert misspelt(["model=policy", "+model.extra.budget_scale=0.5"]) == line
    assert misspelt(["model=policy", "model.extra.positon_scale=2"]) == (
        "unknown config key 'model.extra.positon_scale'; did you mean 'model.extra.position_scale'?"
    )
    assert make_model(ModelConfig(id="policy", name="pi0", extra={"url": "ws://h:1"})).name == "pi0"
