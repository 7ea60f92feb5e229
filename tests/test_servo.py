"""The servo agent (model=servo): it acts from exactly what a model sees.

Default run: the servo package imports no simulator, its perception reads real frames and robot-state
text, and real episodes (active and passive) succeed while the env's privileged accessors raise
whenever they are called from servo code or while the agent is deciding. Nightly (slow): per-task
success on the manifest seeds stays within binomial noise of the stored rates.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from pathlib import Path

import numpy as np
import pytest

from vabench.agents.chat.model import ModelConfig
from vabench.agents.episode import Episode, run_episode
from vabench.agents.models.kinds import make_model
from vabench.agents.models.servo import ServoAgent
from vabench.agents.models.servo.basket import loose_objects, teal
from vabench.agents.models.servo.dual import dark_bars
from vabench.agents.models.servo.perception import (
    Seen,
    colour_mask,
    find,
    goal_from_instruction,
    long_ends,
    near_edge,
    seen_of,
)
from vabench.agents.models.servo.shoe import shoe_blob
from vabench.agents.models.servo.skills import PASSIVE_COLUMNS, Servo
from vabench.agents.models.servo.tool import handle_ends
from vabench.analysis.stats import wilson_interval
from vabench.core.boundary import ArmProprio, observation_of
from vabench.envs.objects.common import BOTTLE_MODELS
from vabench.envs.seeds import eval_seeds
from vabench.envs.sim.scene import TABLE_COLOR
from vabench.envs.tasks import task_class

SERVO_DIR = Path(inspect.getfile(ServoAgent)).parent
FORBIDDEN = ("vabench.envs", "sapien", "mplib", "vabench.agents.episode", "vabench.agents.chat.prompts")

# Success rates measured on the manifest seeds with benchmarks/servo_rates.py, per (task, protocol);
# the issue-28 additions on the first seeds only (the count says how many), the rest on all 20. The
# two-arm and basket skills measure in the active camera and stop at once in the passive protocol.
EXPECTED: dict[tuple[str, str], float] = {
    ("beat_block_hammer_right", "active"): 1.00,  # 10/10
    ("beat_block_hammer_right", "passive"): 0.00,  # stops at once
    ("handover_horizontal_block", "active"): 1.00,  # 10/10
    ("handover_horizontal_block", "passive"): 0.00,  # stops at once
    ("place_shoe", "active"): 1.00,  # 10/10
    ("place_shoe", "passive"): 0.00,  # stops at once
    ("lift_pot", "active"): 0.90,  # 9/10
    ("lift_pot", "passive"): 0.00,  # stops at once
    ("put_everything_in_basket", "active"): 0.00,  # 0/10: all five rarely; see PLACED
    ("put_everything_in_basket", "passive"): 0.00,  # stops at once
    ("grasp_single_cube_heldout", "active"): 1.00,  # 10/10
    ("grasp_single_cube_heldout", "passive"): 1.00,  # 3/3
    ("grasp_single_bottle_heldout", "active"): 0.00,  # 0/10
    ("grasp_single_bottle_heldout", "passive"): 0.33,  # 1/3
    ("place_cube_in_bowl_heldout", "active"): 0.00,  # 0/10 (the sage bowl is not blue)
    ("place_cube_in_bowl_heldout", "passive"): 0.00,  # 0/2
    ("grasp_single_bottle_upright_heldout", "active"): 0.10,  # 1/10
    ("place_cube_on_cube_heldout", "active"): 1.00,  # 10/10
    ("place_single_bottle_upright_heldout", "active"): 0.10,  # 1/10
    ("place_single_cube_heldout", "active"): 1.00,  # 10/10
    ("click_bell_right", "active"): 0.95,  # 19/20
    ("click_bell_right", "passive"): 0.55,  # 11/20
    ("grasp_pen_leaning_cube", "active"): 0.80,  # 16/20
    ("grasp_pen_leaning_cube", "passive"): 0.00,  # 0/20
    ("grasp_single_bottle", "active"): 0.95,  # 19/20 (the whole-bottle mask)
    ("grasp_single_bottle", "passive"): 1.00,  # 20/20 (the whole-bottle mask)
    ("grasp_single_bottle_upright", "active"): 0.25,  # 5/20
    ("grasp_single_bottle_upright", "passive"): 0.90,  # 18/20
    ("grasp_single_cube", "active"): 1.00,  # 20/20
    ("grasp_single_cube", "passive"): 1.00,  # 20/20
    ("grasp_single_pen", "active"): 1.00,  # 20/20
    ("grasp_single_pen", "passive"): 0.65,  # 13/20
    ("place_cube_in_bowl", "active"): 1.00,  # 20/20
    ("place_cube_in_bowl", "passive"): 1.00,  # 20/20
    ("place_cube_on_cube", "active"): 1.00,  # 20/20
    ("place_cube_on_cube", "passive"): 1.00,  # 20/20
    ("place_single_bottle_upright", "active"): 0.00,  # 0/20
    ("place_single_bottle_upright", "passive"): 0.10,  # 2/20
    ("place_single_cube", "active"): 1.00,  # 20/20
    ("place_single_cube", "passive"): 1.00,  # 20/20
}


# The basket's mean objects placed per episode (10 episodes on seeds 1000-1009: 2, 2, 1, 2, 0, 3, 2,
# 2, 1, 2), and how far below it the nightly mean may fall.
PLACED: dict[tuple[str, str], float] = {("put_everything_in_basket", "active"): 1.7}
PLACED_SLACK = 0.75


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "vabench.agents." * (node.level == 1) + "vabench." * (node.level == 2) + (node.module or "")
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def test_servo_package_imports_no_simulator():
    files = sorted(SERVO_DIR.glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "agent.py", "perception.py", "skills.py"}
    for f in files:
        for name in _imports(f):
            assert not any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN), f"{f.name} imports {name}"


def test_servo_is_a_registered_unprivileged_offline_agent():
    model = make_model(ModelConfig(id="servo"))
    assert isinstance(model, ServoAgent) and model.privileged is False and model.name == "servo"


def test_instruction_names_the_goal():
    assert goal_from_instruction("Use the right arm to grasp the red cube and lift it off the table.").kind == "grasp"
    g = goal_from_instruction("Use the right arm to pick up the red cube and place it inside the bowl.")
    assert (g.target, g.destination, g.dest_kind) == ("red", "blue", "bowl")
    assert goal_from_instruction("Use the right arm to press the top centre of the bell ...").kind == "press"
    assert goal_from_instruction("Grasp one side handle of the pot with each arm, then lift ...").kind == "pot"
    assert goal_from_instruction(task_class("place_shoe").instruction).kind == "shoe"
    assert goal_from_instruction(task_class("handover_horizontal_block").instruction).kind == "handover"
    assert goal_from_instruction("Use the right arm to grasp the hammer by its handle ...").kind == "strike"
    assert goal_from_instruction("Use the right arm to put every object on the table into the basket.").kind == "basket"


def test_servo_refuses_only_the_two_arm_tasks_it_has_no_skill_for():
    agent = ServoAgent()
    for task in ("place_shoe", "handover_horizontal_block", "lift_pot"):
        assert agent.refuses(task, ("left", "right"), 1000, "active") is None
    assert "no two-arm skill" in agent.refuses("a_new_two_arm_task", ("left", "right"), 1000, "active")
    assert agent.refuses("lift_pot", ("left", "right"), 1000, "passive") is None  # plays it (and stops at once)
    assert agent.refuses("beat_block_hammer_right", ("right",), 1000, "active") is None


class WristedTopdown:
    """A synthetic active topdown, 0.7 m above GC as ``view_topdown`` is (700 px/m, +x right, +y up):
    a red cube on a beige table, and a grey wrist fixed in the image over the hand and the whole left
    of it, as the UR5's hides the table. Moves are carried out exactly; the servo sees only images
    and the robot-state text's numbers."""

    PX_PER_M, WRIST_U = 700.0, 380

    def __init__(self, gc, cube):
        self.gc, self.cube = np.array(gc, float), np.array(cube, float)

    def seen(self) -> Seen:
        img = np.zeros((480, 640, 3), np.uint8)
        img[...] = (190, 175, 150)
        u, v = np.array([320, 240]) + self.PX_PER_M * (self.cube[:2] - self.gc[:2]) * (1, -1)
        img[max(0, int(v) - 15) : max(0, int(v) + 15), max(0, int(u) - 15) : max(0, int(u) + 15)] = (200, 30, 30)
        img[:, : self.WRIST_U] = (90, 90, 95)
        down = np.array([0.0, 0.0, -1.0])
        arm = ArmProprio(
            self.gc + (0, 0, 0.1), np.zeros(4), np.zeros(3), False, self.gc.copy(), down, np.array([-1.0, 0, 0]),
            np.array([0, 1.0, 0]),
        )  # fmt: skip
        return Seen(
            "Use the right arm to grasp the red cube and lift it off the table.", {"right": arm}, [img], True, True
        )

    def run(self, skill):
        """Drive a skill generator to its end, carrying out its decisions; its return value."""
        try:
            decision = next(skill)
            while True:
                if decision.get("action") == "gripper.move_world":
                    axis = "xyz".index(decision["axis"])
                    self.gc[axis] += (1 if decision["sign"] == "+" else -1) * decision["distance_mm"] / 1000
                decision = skill.send(self.seen())
        except StopIteration as end:
            return end.value


def test_a_target_the_wrist_hides_is_found_from_beside_and_reached_by_dead_reckoning():
    """The UR5's wrist hides the cube from where the servo first looks (seed 1000 of its
    grasp_single_cube stopped after 3 looks): it moves the hand aside until the cube shows, measures
    the image Jacobian there, and one Newton step takes GC over the cube, hidden again under the hand."""
    world = WristedTopdown(gc=(0.30, -0.10, 1.06), cube=(0.22, -0.10, 0.765))
    s = Servo(world.seen(), goal_from_instruction(world.seen().instruction), active=True)
    m, blob = world.run(s.calibrate("red"))
    assert m is not None and blob is not None and s.J is not None
    assert np.allclose(s.J, -world.PX_PER_M * np.diag([1.0, -1.0]), rtol=0.05)
    world.run(s.align("red", m, blob))
    assert find(world.seen().images[0], "red") is None  # under the hand
    assert np.linalg.norm(world.gc[:2] - world.cube[:2]) < 0.005


def test_a_hidden_static_target_is_dead_reckoned_from_its_last_sighting():
    """Once the Jacobian is known, the measurement of a static target the arm hides is its last one
    plus the Jacobian times the hand's move since (the camera moves with GC)."""
    world = WristedTopdown(gc=(0.30, -0.10, 1.06), cube=(0.22, -0.10, 0.765))
    s = Servo(world.seen(), goal_from_instruction(world.seen().instruction), active=True)
    world.run(s.calibrate("red"))
    world.run(s.move("x", 0.12))
    m, blob = world.run(s.seek("red", recall=True))
    assert blob is None and find(world.seen().images[0], "red") is None
    truth = world.PX_PER_M * (world.cube[:2] - world.gc[:2]) * (1, -1)
    assert np.linalg.norm(m - truth) < 2.0, (m, truth)


def test_a_blob_at_the_image_edge_is_near_it_only_for_a_shift_toward_it():
    img = np.zeros((480, 640, 3), np.uint8)
    img[200:230, 10:40] = (200, 30, 30)  # at the left edge
    blob = find(img, "red")
    assert near_edge(blob, img.shape, np.array([-1.0, 0.0])) and not near_edge(blob, img.shape, np.array([1.0, 0.0]))
    assert not near_edge(blob, img.shape, np.array([0.0, 1.0]))


DOWN = {"action": "gripper.rotate_local", "axis": "ry", "sign": "-", "angle_deg": 90}  # the right hand, from home
BACK = {"action": "gripper.move_world", "axis": "y", "sign": "-", "distance_mm": 100}


def _view(env, task: str, actions: list[dict], index: int = 0) -> np.ndarray:
    """The active image after the given actions on a manifest seed (default the first)."""
    env.reset(task, eval_seeds(task)[index])
    obs = None
    for a in actions:
        obs = env.step(a).observation
    return obs.images["active"]


def test_two_dark_bars_are_the_pot_handles(render_env):
    """Both handles, left to right, lying on a line through the pot (the bars point away from it)."""
    img = _view(render_env, "lift_pot", [{"action": "camera.view_both_topdown"}])
    left, right = dark_bars(img)
    assert left.centre[0] < 320 < right.centre[0] and left.area > 200 and right.area > 200
    joining = np.degrees(np.arctan2(*(right.centre - left.centre)[::-1])) % 180
    assert min(abs(joining - left.long_angle_deg), 180 - abs(joining - left.long_angle_deg)) < 10


def test_the_shoe_is_the_hole_in_the_table_that_is_not_the_mat(render_env):
    """Seed 1000: a black boot right of the mat; seed 1003: a pink one touching the mat's left end
    (pink is nearly as unsaturated as the table's beige, told apart by its low green)."""
    both = [{"action": "camera.view_both_topdown"}]
    for index, right in ((0, True), (3, False)):
        img = _view(render_env, "place_shoe", both, index)
        shoe = shoe_blob(img)
        assert shoe is not None and shoe.elongation > 2.0 and shoe.area > 3000, index
        assert (shoe.centre[0] > 320) == right and not colour_mask(img, "blue")[tuple(shoe.centre[::-1].astype(int))]


def test_the_handover_block_lies_along_y_in_the_view_between_the_hands(render_env):
    img = _view(render_env, "handover_horizontal_block", [{"action": "camera.view_both_topdown"}])
    a, b, _ = long_ends(img, "red", 60)
    assert abs(a[1] - b[1]) > 80 and abs(a[0] - b[0]) < 10  # the block lies along world y: image v


def test_the_hammer_grip_end_is_the_one_with_black_beyond(render_env):
    img = _view(render_env, "beat_block_hammer_right", [DOWN, BACK, {"action": "camera.view_topdown"}])
    eye, grip = handle_ends(img)
    # the hammer lies with its head away from the robot and left, its grip toward the right arm
    assert grip[0] > eye[0] and grip[1] > eye[1] and np.linalg.norm(grip - eye) > 60


def test_loose_objects_are_the_five_outside_the_basket(render_env):
    img = _view(render_env, "put_everything_in_basket", [DOWN, BACK, {"action": "camera.view_topdown"}])
    assert teal(img).sum() > 20000
    found = loose_objects(img)
    assert 3 <= len(found) <= 5  # the hand may hide one or two
    assert not any(teal(img)[int(b.centre[1]), int(b.centre[0])] for b in found)


def test_perception_reads_a_real_observation(render_env):
    """The robot state, feedback and topdown image of a real observation, and the red cube in it."""
    task = "grasp_single_cube"
    render_env.reset(task, eval_seeds(task)[0])
    render_env.step({"action": "gripper.move_world", "axis": "y", "sign": "-", "distance_mm": 100})
    obs = render_env.step({"action": "camera.view_topdown"}).observation
    seen = seen_of(observation_of(obs))
    assert np.allclose(seen.arms["right"].gc, obs.proprio["right"].gc, atol=1e-4)
    assert np.allclose(seen.arms["right"].ry, obs.proprio["right"].ry, atol=1e-4)
    assert seen.valid is True and seen.planned is True and "red cube" in seen.instruction
    assert len(seen.images) == 1 and seen.images[0].shape == (480, 640, 3)
    blob = find(seen.images[0], "red")
    assert blob is not None and 100 < blob.area < 5000
    # the cube lies in front of (+y) and left of (-x) the gripper: above and left of the image centre
    assert blob.centre[1] < 240 and blob.centre[0] < 320
    assert find(seen.images[0], "blue") is None


def _shaded(colours, shades) -> np.ndarray:
    """Linear colours lit at ``shades`` of full light, gamma-encoded as the renderer does (1/2.2)."""
    linear = np.array([[np.asarray(c) * k for k in shades] for c in colours])
    return np.round(255 * linear ** (1 / 2.2))


def test_the_bottle_mask_holds_every_shade_of_the_bottle_and_one_grey_level_either_way():
    """Diffuse light keeps a colour's saturation in the gamma-encoded image, so the cola's dark body
    sits at 0.45 in every face: a threshold there splits it by one grey level (the lean shader v2
    rounds differently from v1 by at most one, and that broke passive grasp_single_bottle)."""
    cola, shades = BOTTLE_MODELS[0], np.linspace(0.3, 1.0, 15)
    bottle = _shaded((cola.color, cola.label_color, cola.cap_color), shades)
    table = _shaded((TABLE_COLOR,), shades)
    for d in itertools.product((-1, 0, 1), repeat=3):
        assert colour_mask(np.clip(bottle + d, 0, 255).astype(np.uint8), "dark_red").all(), d
        assert not colour_mask(np.clip(table + d, 0, 255).astype(np.uint8), "dark_red").any(), d


def test_the_bottle_blob_of_a_real_passive_request_is_stable_to_a_grey_level(render_env):
    """Seed 1000, passive: the bottle's centre in the two views the servo measures in does not move when
    every pixel is one grey level off (green up, blue down: how the lean shader v2 differs from v1)."""
    task = "grasp_single_bottle"
    obs = render_env.reset(task, eval_seeds(task)[0], "passive")
    seen = seen_of(observation_of(obs))
    assert len(seen.images) == 5
    for img in (seen.images[i] for i in PASSIVE_COLUMNS):
        off = np.clip(img.astype(int) + (0, 1, -1), 0, 255).astype(np.uint8)
        a, b = find(img, "dark_red"), find(off, "dark_red")
        assert a is not None and b is not None
        assert np.linalg.norm(a.centre - b.centre) < 1.0 and abs(a.area - b.area) < 0.03 * a.area, (a, b)


class Guard:
    """Makes the env's privileged accessors raise when servo code calls them, or while the agent decides."""

    def __init__(self, env, agent, monkeypatch):
        self.deciding, self.violations, self.calls = False, [], 0
        for name in ("privileged", "evaluator_state", "expert"):
            monkeypatch.setattr(env, name, self._wrap(getattr(env, name), name))
        act = agent.act

        def guarded(obs):
            self.deciding = True
            try:
                return act(obs)
            finally:
                self.deciding = False

        monkeypatch.setattr(agent, "act", guarded)

    def _wrap(self, fn, name):
        def checked(*args, **kwargs):
            self.calls += 1
            servo = any(Path(f.filename).resolve().is_relative_to(SERVO_DIR) for f in inspect.stack(0))
            if servo or self.deciding:
                self.violations.append(name)
                raise AssertionError(f"servo reached env.{name}()")
            return fn(*args, **kwargs)

        return checked


@pytest.mark.parametrize(
    ("task", "protocol"),
    [
        ("grasp_single_cube", "active"),
        ("grasp_single_cube", "passive"),
        ("lift_pot", "active"),
        ("beat_block_hammer_right", "active"),
        ("place_shoe", "active"),
        ("handover_horizontal_block", "active"),
    ],
    ids=["active", "passive", "two-arm", "tool", "shoe", "handover"],
)
def test_servo_episode_without_privilege(render_env, tmp_path, monkeypatch, task, protocol):
    agent = ServoAgent()
    guard = Guard(render_env, agent, monkeypatch)
    row = run_episode(render_env, agent, Episode.of(task, eval_seeds(task)[0], protocol, env=render_env), tmp_path)
    assert guard.violations == [] and guard.calls > 0  # the harness itself did read the evaluator state
    assert row.status == "ok" and row.privileged is False and row.model == "servo"
    assert row.success, (row.end_reason, row.error)
    assert row.repairs == 0 and row.invalid_actions == 0
    assert (row.camera_actions > 0) == (protocol == "active")
    assert (tmp_path / row.record).exists()


def test_guard_catches_a_cheating_agent(render_env, tmp_path, monkeypatch):
    """The guard is not vacuous: an agent that reads env.privileged() while deciding is caught."""

    class Cheat(ServoAgent):
        def act(self, obs):
            render_env.privileged()
            return super().act(obs)

    agent = Cheat("cheat")
    guard = Guard(render_env, agent, monkeypatch)
    row = run_episode(
        render_env, agent, Episode.of("grasp_single_cube", eval_seeds("grasp_single_cube")[0], env=render_env), tmp_path
    )
    assert guard.violations and not row.success


# -- nightly regression guard ---------------------------------------------------------------


def _within_noise(k: int, n: int, rate: float) -> bool:
    """``k`` of ``n`` lies inside the central 99% of Binomial(n, rate), the stored rate clipped to
    [0.05, 0.95] so that a stored 0% or 100% still allows the odd flip."""
    from scipy.stats import binom

    p = min(max(rate, 0.05), 0.95)
    return binom.ppf(0.005, n, p) <= k <= binom.ppf(0.995, n, p)


def test_noise_bound_is_binomial():
    assert _within_noise(18, 20, 1.0) and _within_noise(10, 20, 0.7) and not _within_noise(5, 20, 0.9)
    assert not _within_noise(20, 20, 0.4) and _within_noise(0, 20, 0.0)
    lo, hi = wilson_interval(18, 20)
    assert lo < 0.9 < hi


@pytest.mark.slow
@pytest.mark.parametrize(("task", "protocol"), sorted(EXPECTED), ids=lambda v: str(v))
def test_servo_rates_do_not_drift(render_env, tmp_path, task, protocol):
    seeds = eval_seeds(task)
    agent = ServoAgent()
    rows = [
        run_episode(render_env, agent, Episode.of(task, s, protocol, env=render_env), tmp_path / str(s)) for s in seeds
    ]
    wins = sum(r.success for r in rows)
    assert _within_noise(wins, len(seeds), EXPECTED[(task, protocol)]), (task, protocol, wins, EXPECTED)
    if (task, protocol) in PLACED:  # the basket: objects placed per episode, not only all five
        placed = [r.objects_placed for r in rows]
        assert sum(placed) / len(placed) >= PLACED[(task, protocol)] - PLACED_SLACK, placed
