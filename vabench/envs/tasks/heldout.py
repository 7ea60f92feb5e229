"""Held-out variants (paper 5.1, Table 15; track ``transfer``): a base family re-grounded in changed
geometry or layout. Each keeps its base task's instruction, predicate and summary
(``summary_task``); only what the docstring lists changes. No new demonstration exists.
"""

from __future__ import annotations

import numpy as np

from ..objects import BLUE, RED, BodySpec, Part, bowl, cube
from ..scene import World
from .base import SPAWN_Z
from .grasp_single_cube import GraspSingleCube
from .place_cube_in_bowl import PlaceCubeInBowl

SAGE = (0.55, 0.68, 0.52)


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))


class GraspSingleCubeHeldout(GraspSingleCube):
    """Unseen cube sizes and a distractor. Changes: the red cube's edge is 4 or 6 cm (the base
    task's is 5 cm); a blue cylinder (3 cm radius, 6 cm tall) stands in the free table area to the
    cube's left, x in [0.04, 0.10], y in [-0.16, -0.06]. Unchanged: the cube's position and yaw
    ranges, and the predicate (the red cube lifted > 50 mm, right gripper closed)."""

    name = "grasp_single_cube_heldout"
    summary_task = "grasp_single_cube"
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


class PlaceCubeInBowlHeldout(PlaceCubeInBowl):
    """Another bowl in a mirrored layout. Changes: a wider, shallower sage-green bowl (floor radius
    5.5 cm, rim radius 7.5 cm, 4 cm deep; the base bowl is 4.5 / 6.5 / 5.5 cm, blue) now stands to
    the right, x in [0.20, 0.24], y in [0.02, 0.06], and the cube starts to the left, x in
    [0.10, 0.15], y in [-0.17, -0.10] (the base task has the bowl left and the cube right).
    Unchanged: the cube, its yaw range, and the predicate (previously lifted >= 50 mm; centre
    distance < 55 mm; 15-95 mm above the bowl's bottom; bowl moved < 5 mm; contact; gripper open)."""

    name = "place_cube_in_bowl_heldout"
    summary_task = "place_cube_in_bowl"
    CUBE_X, CUBE_Y = (0.10, 0.15), (-0.17, -0.10)
    BOWL_X, BOWL_Y = (0.20, 0.24), (0.02, 0.06)

    def build(self, world: World, rng: np.random.Generator) -> None:
        bx, by = rng.uniform(*self.BOWL_X), rng.uniform(*self.BOWL_Y)
        cx, cy = rng.uniform(*self.CUBE_X), rng.uniform(*self.CUBE_Y)
        self.yaw = np.radians(rng.uniform(-self.YAW_DEG, self.YAW_DEG))
        wide = bowl("bowl", floor_radius=0.055, rim_radius=0.075, height=0.04, color=SAGE)
        world.add(wide, (bx, by, SPAWN_Z))
        world.add(cube("cube", self.HALF, RED, 0.01), (cx, cy, SPAWN_Z + self.HALF), _yaw_quat(self.yaw))
