"""control=ee_delta (vabench.envs.control): the condition key in the label, the run path, the row
and the analysis (never pooled with the paper's commands); the controller moving the TCP by the
commanded amount, clipping, holding an unreachable target, refusing bad vectors as invalid actions;
the Gym env's Box; a policy passing its chunk's vectors straight through; a chat model refused."""

from __future__ import annotations

import math
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gymnasium.utils.env_checker import check_env

import vabench.gym
from tests.openpi_server import OpenpiServer, Scripted
from tests.test_launch import validate
from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.models.offline import replay
from vabench.analysis.load import load_runs, prepare
from vabench.analysis.tables import success_matrix
from vabench.core.boundary import Agent, Control, answer_of, payload
from vabench.core.condition import Condition
from vabench.core.errors import ConfigError
from vabench.envs import RENDER_PRESETS, EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.control import CHAT_CONTROL, MAX_STEP_M, control_budget
from vabench.envs.seeds import eval_seeds
from vabench.envs.sim.controller import rotation_error
from vabench.envs.tasks import task_class
from vabench.results.episodes import EpisodeSpec
from vabench.results.media import VIDEO_NAME, video_info
from vabench.results.outcomes import OutcomeRow, write_row
from vabench.results.recordfile import FRAMES, read_events

TASK = "grasp_single_cube"
SEED = eval_seeds(TASK)[0]
TOLERANCE_M = 0.003  # the TCP's end position against the commanded sum, over a 10 cm path
NO_RECORDING = RecordingConfig(enabled=False, video=False)


@pytest.fixture(scope="module")
def env():
    env = VABenchEnv(EnvConfig(render=False, control="ee_delta"))
    yield env
    env.close()


def tcp(env) -> np.ndarray:
    return env.world.arms["right"].tcp.entity_pose.to_transformation_matrix()


def step(env, *numbers):
    return env.step({"ee_delta": {"right": list(numbers)}})


def test_the_key_names_its_mode_in_the_label_path_and_row_and_the_analysis_never_pools_the_two(tmp_path):
    paper = Condition("policy", budget_scale=1.0)
    control = paper.but(control="ee_delta")
    assert paper.label == "policy | active | summary none" and paper.folders() == ()
    assert control.label == "policy | active | summary none | control ee_delta"
    assert control.folders() == ("control_ee_delta",) and Condition.of_row(control.columns()) == control
    done = dict(status="ok", success=True, end_reason="success", steps=3)
    for name, cond in (("paper", paper), ("control", control)):
        write_row(tmp_path / f"{name}.parquet", OutcomeRow(**EpisodeSpec(cond, TASK, SEED).identity(), **done))
    old = OutcomeRow(**EpisodeSpec(paper, TASK, SEED).identity(), **done).row()
    del old["control"]  # a row written before the key: the paper's commands
    pq.write_table(pa.Table.from_pylist([old]), tmp_path / "old.parquet")
    p, _ = prepare(load_runs(tmp_path))
    assert sorted(p["control"]) == ["commands", "commands", "ee_delta"]
    m = success_matrix(p)
    assert sorted(set(m["condition"])) == sorted([paper.label, control.label])


def test_ten_steps_of_a_centimetre_move_the_tcp_ten_centimetres(env):
    obs = env.reset(TASK, SEED)
    assert obs.budget == control_budget(task_class(TASK).budget, TASK)
    start = tcp(env)
    for _ in range(10):
        result = step(env, 0.01, 0, 0, 0, 0, 0, 0)
        assert result.action_valid and result.planner_success, result.feedback
    moved = tcp(env)[:3, 3] - start[:3, 3]
    assert np.abs(moved - [0.1, 0, 0]).max() < TOLERANCE_M, moved
    turned = tcp(env)
    for _ in range(5):
        step(env, 0, 0, 0, 0, 0, 0.1, 0)
    about = rotation_error(tcp(env)[:3, :3], turned[:3, :3])  # world axes
    assert np.abs(about - [0, 0, 0.5]).max() < 0.01, about
    assert np.linalg.norm(tcp(env)[:3, 3] - turned[:3, 3]) < 0.002  # about the TCP: it stays put


def test_the_robot_state_is_read_anew_whenever_the_hand_fingers_or_gripper_command_change(env):
    """Arm.proprio keeps its reading while nothing it reads changed (an observation, the record's
    state and the overlay each ask every step): a step, a finger's motion alone and a gripper command
    alone each give a new reading, equal to one made from scratch."""
    env.reset(TASK, SEED)
    arm = env.world.arms["right"]

    def fresh():
        arm._proprio = None
        return arm.proprio()

    first = arm.proprio()
    assert arm.proprio() is first  # nothing moved: the same reading
    step(env, 0.01, 0, 0, 0, 0, 0, 0)
    moved = arm.proprio()
    assert moved.ee_position[0] == pytest.approx(first.ee_position[0] + 0.01, abs=0.002) and moved == fresh()
    q = arm.qpos
    q[arm.dof] = 0.0  # one finger shut by hand, the command unchanged: the pads' midpoint moves
    arm.robot.set_qpos(q)
    shut = arm.proprio()
    assert not shut.gripper_closed and np.linalg.norm(np.subtract(shut.gc, moved.gc)) > 0.005 and shut == fresh()
    arm.closed = True  # the command alone changes: read anew
    assert arm.proprio().gripper_closed is True


def test_a_step_beyond_the_limits_is_clipped_and_the_feedback_says_so(env):
    env.reset(TASK, SEED)
    start = tcp(env)[:3, 3]
    result = step(env, 0, 0, 0.5, 0, 0, 0, 0)
    assert result.action_valid and "translation clipped from 0.5 to 0.02 m" in result.feedback
    assert abs(tcp(env)[2, 3] - start[2] - MAX_STEP_M) < 0.002


def test_a_target_out_of_reach_holds_the_arm_and_reports_it(env):
    env.reset(TASK, SEED)
    held = None
    for _ in range(60):  # turning about the world x axis runs a joint into its limit or out of reach
        result = step(env, 0, 0, 0, 0.1, 0, 0, 0)
        if not result.planner_success:
            held = result
            break
    assert held is not None and held.action_valid
    assert held.feedback.startswith("held: right arm held: ")
    before = tcp(env)
    again = step(env, 0, 0, 0, 0.1, 0, 0, 0)
    assert not again.planner_success and np.linalg.norm(tcp(env)[:3, 3] - before[:3, 3]) < 0.002


@pytest.mark.parametrize(
    "decision, words",
    [
        ({"ee_delta": {"right": [0, 0, math.nan, 0, 0, 0, 0]}}, "must be finite numbers"),
        ({"ee_delta": {"right": [0, 0, math.inf, 0, 0, 0, 0]}}, "must be finite numbers"),
        ({"ee_delta": {"right": [0, 0, 0, 0, 0, 0]}}, "must be 7 numbers"),
        ({"ee_delta": {"left": [0] * 7}}, "must map each controlled arm (right) to 7 numbers"),
        ({"ee_delta": "up"}, "must map each controlled arm"),
        ({"action": "gripper.open"}, "this episode takes control=ee_delta steps"),
    ],
)
def test_a_bad_vector_is_an_invalid_step_with_feedback_and_the_world_untouched(env, decision, words):
    env.reset(TASK, SEED)
    before = env.world.arms["right"].qpos
    result = env.step(decision)
    assert (result.action_valid, result.kind, result.step) == (False, "invalid", 1)
    assert words in result.feedback
    assert np.array_equal(env.world.arms["right"].qpos, before)


def test_the_paper_commands_env_refuses_a_control_step(physics_env):
    physics_env.reset(TASK, SEED)
    result = physics_env.step({"ee_delta": [0.01, 0, 0, 0, 0, 0, 0]})
    assert not result.action_valid and "need control=ee_delta" in result.feedback


def test_a_control_answer_is_kept_as_json_and_read_back():
    answer = Control({"right": (0.01, 0.0, 0.0, 0.0, 0.0, 0.1, 1.0)}, "why")
    kept = payload(answer)
    assert kept == {"ee_delta": {"right": [0.01, 0.0, 0.0, 0.0, 0.0, 0.1, 1.0]}, "reason": "why"}
    again = answer_of(kept)
    assert isinstance(again, Control) and payload(again) == kept


def test_the_gym_env_takes_a_box_passes_check_env_and_moves_by_the_commanded_amount():
    env = gym.make(vabench.gym.gym_id(TASK), control="ee_delta", render="small", max_episode_steps=-1)
    try:
        assert env.action_space.shape == (7,) and env.action_space.dtype == np.float32
        assert sorted(env.observation_space["pixels"]) == ["active", "wrist"]  # the wrist view: ee_delta only
        check_env(env.unwrapped)
        obs, info = env.reset(seed=0)
        start = obs["agent_pos"][:3].copy()  # the EE position (no rotation: every point moves alike)
        for _ in range(5):
            obs, _, terminated, truncated, info = env.step(np.array([0, 0.01, 0.005, 0, 0, 0, 0], np.float32))
            assert info["action_valid"] and info["planner_success"] and not terminated and not truncated
        moved = obs["agent_pos"][:3] - start
        assert np.abs(moved - [0, 0.05, 0.025]).max() < TOLERANCE_M, moved
        assert info["budget_left"] == control_budget(task_class(TASK).budget, TASK) - 5
    finally:
        env.close()


def served(server: OpenpiServer, steps: int, folder, again=None, **extra) -> tuple:
    """An episode of ``steps`` control steps under ee_delta against ``server`` (shut down after)
    in ``folder``, and with ``again`` a folder, its replay there: (row, the replay's row or None)."""
    agent = make_model(ModelConfig(id="policy", timeout_s=30, extra={"url": server.url, **extra}))
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=NO_RECORDING, control="ee_delta"))
    try:
        budget = steps / control_budget(task_class(TASK).budget, TASK)
        episode = Episode.of(TASK, SEED, env=env, control="ee_delta", budget_scale=budget)
        row = run_episode(env, agent, episode, folder)
        replayed = run_episode(env, replay(folder / "events.jsonl"), episode, again) if again else None
        return row, replayed
    finally:
        agent.close()
        server.shutdown()
        env.close()


def test_a_policy_passes_each_vector_of_its_chunk_straight_to_the_controller(tmp_path):
    vectors = np.array([[0.01, 0, 0, 0, 0, 0, 0]] * 3 + [[0, 0, -0.01, 0, 0, 0, 1]] * 3, np.float32)
    row, again = served(OpenpiServer(Scripted(vectors, horizon=4), {}), 6, tmp_path / "ep", tmp_path / "again")
    assert (row.control, row.steps, row.robot_actions, row.invalid_actions, row.model_calls) == ("ee_delta", 6, 6, 0, 2)
    events = read_events(tmp_path / "ep" / "events.jsonl")
    answers = [e["payload"]["ee_delta"]["right"] for e in events if e["type"] == "answer"]
    assert np.allclose(answers, vectors)  # one answer per vector, as the server sent it
    actions = [e for e in events if e["type"] == "action"]
    assert [a["payload"] for a in actions] == [{"ee_delta": {"right": list(map(float, v))}} for v in vectors]
    assert "control ee_delta" in row.condition
    replayed = [e["payload"] for e in read_events(tmp_path / "again" / "events.jsonl") if e["type"] == "action"]
    assert replayed == [a["payload"] for a in actions] and again.steps == 6  # replay (and verify) send them again


@pytest.mark.parametrize(
    ("metadata", "sent"),
    [
        ({}, ["observation/image", "observation/image_wrist"]),  # says nothing (openpi's servers): every image
        ({"images": ["observation/image"]}, ["observation/image"]),  # vabench's BC: the active camera only
        ({"images": "the wrist"}, ["observation/image", "observation/image_wrist"]),  # not a list: read as nothing said
        ({"images": []}, []),  # a state-only policy: no image
    ],
)
def test_a_policy_is_sent_and_the_record_keeps_only_the_images_its_metadata_says_it_reads(tmp_path, metadata, sent):
    server = OpenpiServer(Scripted(np.zeros((2, 7), np.float32), horizon=1), metadata)
    row, again = served(server, 2, tmp_path / "ep", tmp_path / "again")
    assert (row.status, row.steps, row.invalid_actions) == ("ok", 2, 0)
    assert [sorted(k for k in obs if "image" in k) for obs in server.received] == [sent, sent]
    views = {"observation/image": "active", "observation/image_wrist": "wrist"}
    kept = sorted(p.name for p in (tmp_path / "ep" / FRAMES).iterdir())
    assert kept == sorted(f"step_{k:03d}_{views[key]}.jpg" for k in range(2) for key in sent), kept
    assert again.steps == 2 and sorted(p.name for p in (tmp_path / "again" / FRAMES).iterdir()) == kept  # replay too


def test_a_policy_that_reads_an_image_the_episode_does_not_offer_is_refused_in_one_line(tmp_path):
    server = OpenpiServer(Scripted(np.zeros((2, 7), np.float32), horizon=1), {"images": ["observation/image_top"]})
    row, _ = served(server, 2, tmp_path / "ep")
    assert (row.status, row.end_reason, row.error_kind, row.steps) == ("infra_error", "infra_error", "permanent", 0)
    assert row.error == (
        "model: policy server: its metadata's images lists observation/image_top, which this episode does not offer "
        "(it offers observation/image, observation/image_wrist); serve the policy with another condition, or set "
        "model.extra.image_keys"
    )
    assert server.received == []


class Square(Agent):
    """1 cm moves round a square, one Control answer per observation."""

    name = "square"

    def start(self, brief) -> None:
        self.k = 0

    def act(self, obs) -> Control:
        self.k += 1
        d = [(0.01, 0, 0), (0, 0.01, 0), (-0.01, 0, 0), (0, -0.01, 0)][self.k % 4]
        return Control({"right": (*d, 0.0, 0.0, 0.0, 0.0)})


def test_at_control_rate_the_recording_view_is_taken_in_real_time_and_after_the_last_step(tmp_path):
    recording = RecordingConfig(fps=2.0)  # one view per 5 control steps (0.5 s at 10 Hz)
    env = VABenchEnv(EnvConfig(preset=RENDER_PRESETS["small"], recording=recording, control="ee_delta", wrist=False))
    try:
        budget = 12 / control_budget(task_class(TASK).budget, TASK)  # twelve control steps
        episode = Episode.of(TASK, SEED, env=env, control="ee_delta", budget_scale=budget)
        row = run_episode(env, Square(), episode, tmp_path / "ep")
    finally:
        env.close()
    states = [e for e in read_events(tmp_path / "ep" / "events.jsonl") if e["type"] == "state"]
    assert row.steps == 12 and [e["step"] for e in states] == list(range(13))  # the state after every step
    assert [e["step"] for e in states if e["recording"]] == [0, 5, 10, 12]
    assert video_info(tmp_path / "ep" / VIDEO_NAME)["frames"] == 4
    commands = RecordingConfig(fps=2.0)
    assert all(commands.due(k, False, "commands") for k in range(1, 13))  # the paper's: one per command


def test_at_control_rate_the_recording_view_is_the_active_picture_of_now_not_a_third_render():
    clean = RecordingConfig(overlay=False)
    small, fast = (EnvConfig(preset=RENDER_PRESETS[p], recording=clean, wrist=False) for p in ("small", "fast"))
    envs = [
        VABenchEnv(replace(small, control="ee_delta")),
        VABenchEnv(small),
        VABenchEnv(replace(fast, control="ee_delta")),
    ]
    try:
        control, paper, larger = envs
        obs = control.reset(TASK, SEED)
        assert np.array_equal(control.recording_view(), obs.images["active"])
        moved = control.step({"ee_delta": [0.02, 0, 0, 0, 0, 0, 0]}).observation
        assert not np.array_equal(moved.images["active"], obs.images["active"])
        assert np.array_equal(control.recording_view(), moved.images["active"])  # the picture of now
        first = paper.reset(TASK, SEED).images["active"]
        view = paper.recording_view()  # the paper's commands: the gripper-following view of its own
        assert view.shape == first.shape and not np.array_equal(view, first)
        assert larger.reset(TASK, SEED).images["active"].shape == (480, 640, 3)
        assert larger.recording_view().shape == (240, 320, 3)  # at the recording's size
        passive = control.reset(TASK, SEED, "passive").images  # no active picture: the view is rendered
        assert control.camera.shown is None and control.recording_view().shape == (240, 320, 3)
        assert not any(np.array_equal(control.recording_view(), rgb) for rgb in passive.values())
    finally:
        for env in envs:
            env.close()


def test_a_chat_model_is_refused_under_ee_delta(physics_env, tmp_path):
    with pytest.raises(ConfigError, match="control=ee_delta is for agents that read observations"):
        validate("model=openai", "control=ee_delta", f"tasks=[{TASK}]", "seeds=1")
    assert validate("model=random", "control=ee_delta", f"tasks=[{TASK}]", "seeds=1").condition.control == "ee_delta"
    served = ("model=policy", "model.extra.url=ws://localhost:1", f"tasks=[{TASK}]", "seeds=1")
    assert validate(*served, "control=ee_delta").condition.budget_scale == 1  # its budget counts control steps
    assert validate(*served).condition.budget_scale == 10  # a policy's own default, for the paper's commands
    env = VABenchEnv(EnvConfig(render=False, control="ee_delta"))
    model = make_model(ModelConfig(id="openai/gpt-4o"))
    with pytest.raises(ValueError, match="a chat model acts through the paper's commands"):
        run_episode(env, model, Episode.of(TASK, SEED, env=env), tmp_path)
    assert CHAT_CONTROL.count("\n") == 0


def test_a_wrist_view_per_arm_is_offered_under_ee_delta_only():
    small = RENDER_PRESETS["small"]
    for control, one, two in (("ee_delta", ["active", "wrist"], ["active", "wrist_left", "wrist_right"]),
                              ("commands", ["active"], ["active"])):  # fmt: skip
        env = VABenchEnv(EnvConfig(preset=small, recording=NO_RECORDING, control=control))
        try:
            obs = env.reset(TASK, SEED)
            assert list(obs.images) == one and obs.images[one[-1]].shape == (240, 320, 3)
            assert list(env.reset("lift_pot", eval_seeds("lift_pot")[0]).images) == two
            passive = env.reset(TASK, SEED, "passive").images
            assert ("wrist" in passive) == (control == "ee_delta") and len(passive) == 5 + (control == "ee_delta")
        finally:
            env.close()
    env = VABenchEnv(EnvConfig(preset=small, recording=NO_RECORDING, control="ee_delta", wrist=False))
    assert list(env.reset(TASK, SEED).images) == ["active"]
    env.close()
