"""Every spawn range of the paper's Tables 22-25 is reachable by the arm that works there, from
above (top-down, at four wrist yaws) and from the side (a horizontal approach).

Points are the corners and centre of each range at the height where that task grasps, presses
or releases. IK is collision-checked against the table, wall and pedestals (the planner's
world), so "reachable" means a real, collision-free arm configuration exists.
"""

import itertools

import mplib
import numpy as np
import pytest

from vabench.envs.sim import assets
from vabench.envs.sim.geometry import HAND_TO_GRIPPER, frame_from_axes
from vabench.envs.sim.planner import ArmPlanner, Obstacle
from vabench.envs.sim.robot import HOME_QPOS
from vabench.envs.sim.scene import World

TD_YAWS = (0, 45, 90, 135)  # closing-axis headings; with the 180-degree symmetry this covers every yaw

# (task, arm, x range, y range, top-down GC height, side GC height)
RANGES = [
    ("grasp_single_bottle", "right", (0.20, 0.28), (-0.16, -0.04), 0.775, 0.80),
    ("grasp_single_bottle_upright", "right", (0.20, 0.28), (-0.16, -0.04), 0.93, 0.84),
    ("grasp_single_cube", "right", (0.18, 0.26), (-0.16, -0.06), 0.765, 0.80),
    ("grasp_single_pen", "right", (0.18, 0.26), (-0.20, -0.10), 0.757, 0.80),
    ("grasp_pen_leaning_cube", "right", (0.16, 0.22), (-0.24, -0.20), 0.795, 0.80),
    ("place_cube_in_bowl/bowl", "right", (0.10, 0.14), (0.00, 0.04), 0.80, 0.84),
    ("place_cube_in_bowl/cube", "right", (0.22, 0.27), (-0.17, -0.10), 0.76, 0.80),
    ("place_cube_on_cube/red", "right", (0.20, 0.26), (-0.14, -0.06), 0.765, 0.80),
    ("place_cube_on_cube/base", "right", (0.10, 0.14), (0.00, 0.04), 0.815, 0.84),
    ("place_single_cube/target", "right", (0.10, 0.14), (0.00, 0.04), 0.77, 0.80),
    ("place_single_bottle_upright/target", "right", (0.03, 0.09), (0.07, 0.13), 0.94, 0.84),
    ("click_bell_right", "right", (0.12, 0.26), (-0.18, -0.04), 0.79, 0.82),
    ("beat_block_hammer_right/hammer", "right", (0.02, 0.06), (-0.10, -0.04), 0.76, 0.80),
    ("beat_block_hammer_right/block", "right", (0.14, 0.22), (0.06, 0.13), 0.84, 0.84),
    ("place_shoe/left", "left", (-0.25, -0.15), (-0.10, 0.05), 0.80, 0.82),
    ("place_shoe/right", "right", (0.15, 0.25), (-0.10, 0.05), 0.80, 0.82),
    ("place_shoe/mat by left", "left", (-0.05, 0.05), (-0.10, -0.06), 0.80, 0.82),
    ("place_shoe/mat by right", "right", (-0.05, 0.05), (-0.10, -0.06), 0.80, 0.82),
    ("handover/left giver", "left", (-0.20, -0.15), (-0.05, 0.00), 0.76, 0.80),
    ("handover/right giver", "right", (0.15, 0.20), (-0.05, 0.00), 0.76, 0.80),
    ("handover/mid-air by left", "left", (-0.02, 0.02), (-0.07, -0.03), 0.90, 0.90),
    ("handover/mid-air by right", "right", (-0.02, 0.02), (-0.07, -0.03), 0.90, 0.90),
    ("lift_pot/left handle", "left", (-0.19, -0.09), (-0.10, 0.10), 0.83, 0.83),
    ("lift_pot/right handle", "right", (0.09, 0.19), (-0.10, 0.10), 0.83, 0.83),
]


@pytest.fixture(scope="module")
def planners():
    world = World(render=False)
    out = {}
    for arm in ("left", "right"):
        p = ArmPlanner(assets.panda_files(), arm, None)  # the other arm is parked elsewhere
        p.set_static_obstacles([Obstacle(n, n, spec, m) for n, spec, m in world.fixture_obstacles()])
        out[arm] = p
    world.close()
    return out


def reachable(planner: ArmPlanner, gc, grip_rot) -> bool:
    goal = np.eye(4)
    goal[:3, :3] = grip_rot @ HAND_TO_GRIPPER.T  # gripper frame -> hand (= TCP) frame
    goal[:3, 3] = gc  # TCP and GC differ by 0.3 mm
    mplib.set_global_seed(1)
    q0 = np.concatenate([HOME_QPOS, [0.04, 0.04]])
    return any(not planner.collisions(c[:7]) for c in planner.ik_candidates(goal, q0, n=30))


def points(xr, yr):
    return [(x, y) for x, y in itertools.product(xr, yr)] + [((xr[0] + xr[1]) / 2, (yr[0] + yr[1]) / 2)]


def side_frames():
    """Horizontal approach, palm up, from any of eight headings (forward first)."""
    return [frame_from_axes((np.sin(a), np.cos(a), 0), (0, 0, 1)) for a in np.radians(np.arange(0, 360, 45))]


@pytest.mark.parametrize("name,arm,xr,yr,z_td,z_side", RANGES, ids=[r[0] for r in RANGES])
def test_spawn_range_is_reachable_top_down_and_from_the_side(planners, name, arm, xr, yr, z_td, z_side):
    planner = planners[arm]
    for x, y in points(xr, yr):
        for yaw in TD_YAWS:
            a = np.radians(yaw)
            rot = frame_from_axes((0, 0, -1), (-np.sin(a), np.cos(a), 0))
            assert reachable(planner, (x, y, z_td), rot), f"{name}: top-down at ({x:.2f}, {y:.2f}, {z_td}) yaw {yaw}"
        assert any(reachable(planner, (x, y, z_side), r) for r in side_frames()), (
            f"{name}: no horizontal approach reaches ({x:.2f}, {y:.2f}, {z_side})"
        )
