"""Task families, by name. Each family is one small file that reads like its row in the paper."""

from __future__ import annotations

from .base import Task
from .beat_block_hammer_right import BeatBlockHammerRight
from .click_bell_right import ClickBellRight
from .grasp_pen_leaning_cube import GraspPenLeaningCube
from .grasp_single_bottle import GraspSingleBottle
from .grasp_single_bottle_upright import GraspSingleBottleUpright
from .grasp_single_cube import GraspSingleCube
from .grasp_single_pen import GraspSinglePen
from .handover_horizontal_block import HandoverHorizontalBlock
from .heldout import (
    GraspSingleBottleHeldout,
    GraspSingleBottleUprightHeldout,
    GraspSingleCubeHeldout,
    PlaceCubeInBowlHeldout,
    PlaceCubeOnCubeHeldout,
    PlaceSingleBottleUprightHeldout,
    PlaceSingleCubeHeldout,
)
from .lift_pot import LiftPot
from .place_cube_in_bowl import PlaceCubeInBowl
from .place_cube_on_cube import PlaceCubeOnCube
from .place_shoe import PlaceShoe
from .place_single_bottle_upright import PlaceSingleBottleUpright
from .place_single_cube import PlaceSingleCube
from .put_everything_in_basket import PutEverythingInBasket

TASKS: dict[str, type[Task]] = {
    cls.name: cls
    for cls in (
        GraspSingleCube,
        PlaceCubeInBowl,
        GraspSinglePen,
        PlaceSingleCube,
        PlaceCubeOnCube,
        GraspPenLeaningCube,
        ClickBellRight,
        BeatBlockHammerRight,
        GraspSingleBottle,
        GraspSingleBottleUpright,
        PlaceSingleBottleUpright,
        PlaceShoe,
        HandoverHorizontalBlock,
        LiftPot,
    )
}
TASKS.update(
    {
        cls.name: cls
        for cls in (
            GraspSingleCubeHeldout,
            PlaceCubeInBowlHeldout,
            PlaceSingleCubeHeldout,
            PlaceCubeOnCubeHeldout,
            GraspSingleBottleHeldout,
            GraspSingleBottleUprightHeldout,
            PlaceSingleBottleUprightHeldout,
        )
    }
)  # track transfer
TASKS[PutEverythingInBasket.name] = PutEverythingInBasket  # track long_horizon


def make_task(name: str) -> Task:
    try:
        return TASKS[name]()
    except KeyError:
        raise KeyError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}") from None


__all__ = ["TASKS", "Task", "make_task"]
