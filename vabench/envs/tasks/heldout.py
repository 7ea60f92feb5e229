"""Held-out variants (paper 5.1, Table 15; track ``transfer``): a base family re-grounded in changed
geometry or layout. Each keeps its base task's instruction, predicate and summary
(``summary_task``); only what the docstring lists changes. No new demonstration exists.
"""

from __future__ import annotations

import numpy as np

from vabench.core.vocab import RIGHT, Track

from ..objects.common import BLUE, GREEN, PAD_HALF_HEIGHT, RED, BottleModel, bowl, cube, target_pad
from ..privileged import PrivilegedState
from ..sim.bodies import BodySpec, Part
from ..sim.scene import TABLE_TOP_Z, World
from . import expert
from .base import SPAWN_Z
from .grasp_single_bottle import GraspSingleBottle
from .grasp_single_bottle_upright import GraspSingleBottleUpright, add_upright_bottle
from .grasp_single_cube import GraspSingleCube
from .place_cube_in_bowl import PlaceCubeInBowl
from .place_cube_on_cube import PlaceCubeOnCube
from .place_single_bottle_upright import PlaceSingleBottleUpright
from .place_single_cube import PlaceSingleCube
from .registry import register_task

SAGE = (0.55, 0.68, 0.52)


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))


@register_task(Track.TRANSFER, summary_task="grasp_single_cube")
class GraspSingleCubeHeldout(GraspSingleCube):
    """Unseen cube sizes and a distractor. Changes: the red cube's edge is 4 or 6 cm (the base
    task's is 5 cm); a blue cylinder (3 cm radius, 6 cm tall) stands in the free table area to the
    cube's left, x in [0.04, 0.10], y in [-0.16, -0.06]. Unchanged: the cube's position and yaw
    ranges, and the predicate (the red cube lifted > 50 mm, right gripper closed)."""

    name = "grasp_single_cube_heldout"
    HALVES = (0.02, 0.03)
    DISTRACTOR_X, DISTRACTOR_Y = (0.04, 0.10), (-0.16, -0.06)

    def build(self, world: World, rng: np.random.Generator) -> None:
        self.HALF = float(rng.choice(self.HALVES))
        x, y = rng.uniform(*self.X), rng.uniform(*self.Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        world.add(cube("cube", self.HALF, RED, self.MASS), (x, y, SPAWN_Z + self.HALF), _yaw_quat(self.yaw))
        dx, dy = rng.uniform(*self.DISTRACTOR_X), rng.uniform(*self.DISTRACTOR_Y)
        distractor = BodySpec("distractor", (Part("cylinder", (0.03, 0.03), color=BLUE),), mass=0.05, friction=0.6)
        world.add(distractor, (dx, dy, SPAWN_Z + 0.03))


@register_task(Track.TRANSFER, summary_task="place_cube_in_bowl")
class PlaceCubeInBowlHeldout(PlaceCubeInBowl):
    """Another bowl in a mirrored layout. Changes: a wider, shallower sage-green bowl (floor radius
    5.5 cm, rim radius 7.5 cm, 4 cm deep; the base bowl is 4.5 / 6.5 / 5.5 cm, blue) now stands to
    the right, x in [0.20, 0.24], y in [0.02, 0.06], and the cube starts to the left, x in
    [0.10, 0.15], y in [-0.17, -0.10] (the base task has the bowl left and the cube right).
    Unchanged: the cube, its yaw range, and the predicate (previously lifted >= 50 mm; centre
    distance < 55 mm; 15-95 mm above the bowl's bottom; bowl moved < 5 mm; contact; gripper open)."""

    name = "place_cube_in_bowl_heldout"
    CUBE_X, CUBE_Y = (0.10, 0.15), (-0.17, -0.10)
    BOWL_X, BOWL_Y = (0.20, 0.24), (0.02, 0.06)

    def build(self, world: World, rng: np.random.Generator) -> None:
        bx, by = rng.uniform(*self.BOWL_X), rng.uniform(*self.BOWL_Y)
        cx, cy = rng.uniform(*self.CUBE_X), rng.uniform(*self.CUBE_Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        wide = bowl("bowl", floor_radius=0.055, rim_radius=0.075, height=0.04, color=SAGE)
        world.add(wide, (bx, by, SPAWN_Z))
        world.add(cube("cube", self.HALF, RED, 0.01), (cx, cy, SPAWN_Z + self.HALF), _yaw_quat(self.yaw))


@register_task(Track.TRANSFER, summary_task="place_single_cube")
class PlaceSingleCubeHeldout(PlaceSingleCube):
    """A smaller green pad in a mirrored layout, beside a blue decoy pad. Changes: the green target
    pad is 8 cm square (half 0.04; the base pad is 12 cm) and now lies to the right, x in
    [0.20, 0.24], y in [0.00, 0.04]; the red cube starts to the left, x in [0.10, 0.15], y in
    [-0.16, -0.08] (the base task has the pad left and the cube right); a static blue decoy pad of
    the same size lies where the base task's pad was, x in [0.04, 0.08], y in [0.00, 0.04].
    Unchanged: the instruction (the green target area), the red cube and its yaw range, and the
    predicate (previously lifted >= 50 mm; |dx|, |dy| to the green pad's centre <= 35 mm; within
    35 mm of the resting height on it; pad moved <= 2 mm; contact with the green pad; gripper open)."""

    name = "place_single_cube_heldout"
    labels = {**PlaceSingleCube.labels, "decoy_pad": "the blue pad"}
    PAD_HALF = 0.04
    CUBE_X, CUBE_Y = (0.10, 0.15), (-0.16, -0.08)
    PAD_X, PAD_Y = (0.20, 0.24), (0.00, 0.04)
    DECOY_X, DECOY_Y = (0.04, 0.08), (0.00, 0.04)

    def build(self, world: World, rng: np.random.Generator) -> None:
        super().build(world, rng)
        dx, dy = rng.uniform(*self.DECOY_X), rng.uniform(*self.DECOY_Y)
        decoy = target_pad("decoy_pad", (self.PAD_HALF, self.PAD_HALF), color=BLUE)
        world.add(decoy, (dx, dy, TABLE_TOP_Z + PAD_HALF_HEIGHT))


@register_task(Track.TRANSFER, summary_task="place_cube_on_cube")
class PlaceCubeOnCubeHeldout(PlaceCubeOnCube):
    """A bigger base cube and a turned red cube. Changes: the green base cube's edge is 6 cm
    (``BASE_HALF`` 0.03; the base task's is 5 cm), so the red cube rests 55 mm above its centre, not
    50; the red cube starts turned by 15-40 deg either way about z (the base task's starts
    axis-aligned). Unchanged: both cubes' position ranges, the base cube's colour, mass and +-45 deg yaw
    range, the red cube, and the predicate with the same meaning and thresholds (previously lifted
    >= 50 mm; top faces overlap >= 2 mm on both world axes, i.e. |dx|, |dy| <= red half + base half
    - 2 mm; red centre within 12 mm of the base cube's top + the red half; base moved <= 12 mm;
    contact; gripper open)."""

    name = "place_cube_on_cube_heldout"
    BASE_HALF = 0.03
    RED_YAW_DEG = (15.0, 40.0)  # magnitude; the sign is drawn too

    def build(self, world: World, rng: np.random.Generator) -> None:
        rx, ry = rng.uniform(*self.RED_X), rng.uniform(*self.RED_Y)
        bx, by = rng.uniform(*self.BASE_X), rng.uniform(*self.BASE_Y)
        yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        self.red_yaw = np.radians(rng.uniform(*self.RED_YAW_DEG) * rng.choice((-1.0, 1.0)))
        world.add(cube("cube", self.HALF, RED, self.RED_MASS), (rx, ry, SPAWN_Z + self.HALF), _yaw_quat(self.red_yaw))
        world.add(
            cube("base_cube", self.BASE_HALF, GREEN, self.BASE_MASS), (bx, by, SPAWN_Z + self.BASE_HALF), _yaw_quat(yaw)
        )

    def _overlaps(self, s: PrivilegedState) -> bool:
        d = s.position("cube") - s.position("base_cube")
        return bool(max(abs(d[0]), abs(d[1])) <= self.HALF + self.BASE_HALF - self.OVERLAP_M)

    def _stack_z(self, s: PrivilegedState) -> float:
        """Red cube centre height when resting on the base cube's top."""
        return s.position("base_cube")[2] + self.BASE_HALF + self.HALF

    def conditions(self, s: PrivilegedState) -> dict[str, bool]:
        out = super().conditions(s)
        out["height"] = bool(abs(s.position("cube")[2] - self._stack_z(s)) <= self.HEIGHT_TOL_M)
        return out

    def expert(self, s: PrivilegedState):
        yield from expert.grasp_from_above(
            s, RIGHT, "cube", self.red_yaw, grasp_z=s.position("cube")[2], avoid=("base_cube",)
        )
        yield from expert.lift(s, RIGHT, 0.12)
        yield from expert.carry_over(s, RIGHT, "cube", s.position("base_cube")[:2])
        yield from expert.lower_body_to(s, RIGHT, "cube", self._stack_z(s) + 0.003)
        yield {"action": "gripper.open"}
        yield from expert.lift(s, RIGHT, 0.05)


# Unseen bottles (not in BOTTLE_MODELS, whose bodies are 5.8-6.4 cm across, 18.5-19.3 cm tall, caps red/white/green).
SQUAT_BOTTLE = BottleModel(  # juice, 15.2 cm, 7 cm across: orange body, cream label, purple cap
    0.035, 0.090, 0.015, 0.015, 0.019, 0.018, (0.25, 0.75), (0.95, 0.55, 0.10), (0.96, 0.92, 0.78), (0.45, 0.20, 0.60)
)
SLIM_BOTTLE = BottleModel(  # sports drink, 22.1 cm, 5 cm across: silver-grey body, magenta label, orange cap
    0.025, 0.165, 0.010, 0.022, 0.012, 0.014, (0.40, 0.60), (0.80, 0.82, 0.86), (0.85, 0.15, 0.55), (1.0, 0.50, 0.05)
)


@register_task(Track.TRANSFER, summary_task="grasp_single_bottle")
class GraspSingleBottleHeldout(GraspSingleBottle):
    """Unseen bottle geometry. Changes: the lying bottle is one of two models not in the base set
    (per seed): a squat juice bottle (7 cm across its flat faces, 15.2 cm long, orange with a
    purple cap) or a tall slim sports bottle (5 cm across, 22.1 cm long, silver-grey with a
    magenta label and an orange cap); the base task's one bottle, as in the reference, is the cola
    bottle (6.4 cm across, 19.2 cm long, red cap), and neither is any of BOTTLE_MODELS (5.8-6.4 cm
    across, 18.5-19.3 cm long, red, white or dark green caps). Unchanged: the bottle lies on a flat
    face, cap away from the robot, with the base task's position and yaw ranges, mass and friction;
    the expert; the predicate (the bottle lifted > 50 mm, right gripper closed)."""

    name = "grasp_single_bottle_heldout"
    MODELS = (SQUAT_BOTTLE, SLIM_BOTTLE)
    MODEL_ID = None  # drawn per seed (the base task's bottle is fixed)


@register_task(Track.TRANSFER, summary_task="grasp_single_bottle_upright")
class GraspSingleBottleUprightHeldout(GraspSingleBottleUpright):
    """Unseen bottle geometry. Changes: the standing bottle is, per seed, the squat juice bottle
    (15.2 cm tall, 7 cm across, a 3.8 cm purple cap about 4 cm lower than the base bottle's)
    or the tall slim sports bottle (22.1 cm tall, 5 cm across, a 2.4 cm orange cap about 3 cm
    higher); the base task always stands its one cola bottle, and neither is any of BOTTLE_MODELS.
    The expert is the base one, grasping the cap at the unseen model's cap height. Unchanged: the
    position ranges (upright, no yaw), mass, the predicate (the bottle lifted > 50 mm, right
    gripper closed)."""

    name = "grasp_single_bottle_upright_heldout"
    MODELS = (SQUAT_BOTTLE, SLIM_BOTTLE)
    MODEL_ID = None  # drawn per seed (the base task's bottle is fixed)


@register_task(Track.TRANSFER, summary_task="place_single_bottle_upright")
class PlaceSingleBottleUprightHeldout(PlaceSingleBottleUpright):
    """An unseen bottle and a decoy pad. Changes: the bottle is the squat juice bottle (15.2 cm
    tall, 7 cm across, orange, purple cap; the tall slim one is left out: carried by its cap over
    the far pads it is beyond the arm's reach); a blue pad the size of the target (13 x 13 cm)
    lies beside the green one, its centre 16 cm toward -x or +x (the robot's left or right, per
    seed), a 3 cm gap between them. The expert is the base one, grasping the cap at the unseen
    model's cap height. Unchanged: the bottle's and the green pad's position ranges, and the
    predicate (previously lifted >= 50 mm; |dx|, |dy| <= 40 mm from the green pad's centre; height
    within 35 mm of resting on it; green pad moved <= 2 mm; touching the green pad; gripper open)."""

    name = "place_single_bottle_upright_heldout"
    labels = {"target_pad": "the green target pad", "decoy_pad": "the blue pad"}
    MODELS = (SQUAT_BOTTLE,)
    MODEL_ID = None  # drawn per seed, as the other variants (a draw among one uses no randomness)
    DECOY_DX = 0.16

    def build(self, world: World, rng: np.random.Generator) -> None:
        add_upright_bottle(self, world, rng, self.BOTTLE_X, self.BOTTLE_Y, GraspSingleBottleUpright.MASS)
        px, py = rng.uniform(*self.PAD_X), rng.uniform(*self.PAD_Y)
        world.add(target_pad("target_pad", (self.PAD_HALF, self.PAD_HALF)), (px, py, TABLE_TOP_Z + PAD_HALF_HEIGHT))
        self.decoy_side = int(rng.choice((-1, 1)))  # -1: left of the target (-x), +1: right
        decoy = target_pad("decoy_pad", (self.PAD_HALF, self.PAD_HALF), color=BLUE)
        world.add(decoy, (px + self.decoy_side * self.DECOY_DX, py, TABLE_TOP_Z + PAD_HALF_HEIGHT))
