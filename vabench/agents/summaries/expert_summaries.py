"""The expert-written procedure summaries (``summary=expert``; issue 27): one per base task, in the
learned summaries' schema (:mod:`vabench.agents.summaries.summary_schema`), written from the scripted
experts' procedures (vabench/envs/tasks/<task>.py ``expert``), so they say what the demonstration
shows and nothing a seed fixes: no positions, yaws or sizes of one scene, only the procedure and
the task's own thresholds. Held-out variants read their base task's; the basket reads one made of
its four atomic tasks'. The control separates summary quality from the rest of the model (the
paper: "Fully separating these factors requires no-summary and expert-written summary controls").
"""

from __future__ import annotations

from vabench.core.vocab import SummaryKind

from .demo_tools import summary_task, task_demos
from .summary_schema import validate_summary

AUTHOR = SummaryKind.EXPERT  # the row's summary_model

_TOPDOWN = "Turn the gripper to point straight down (rotate about ry) before approaching."
_CHECKS = [
    "GC is level with the middle of the part to be grasped (check from a side view)",
    "the part lies between the open pads, centred along the closing axis ry",
]


def _s(part, region, height, fingers, approach, posture, lift, checks=(), **more) -> dict:
    return {
        "grasp_object_part": part,
        "grasp_region": region,
        "grasp_height_or_depth": height,
        "finger_placement": fingers,
        "approach_strategy": approach,
        "posture_or_rotation": posture,
        "test_lift_rule": lift,
        "pre_close_checks": [*_CHECKS, *checks],
        **more,
    }


_LIFT = "After closing, lift straight up by about 10 cm; the task counts once the object is more than 5 cm up."
_CUBE = _s(
    "the cube's body",
    "the centre of two opposite side faces",
    "close at the cube's mid-height",
    "one pad on each of two opposite vertical faces",
    "from above: move over the cube at a safe height, then descend vertically",
    _TOPDOWN + " Then rotate about rx so ry is perpendicular to a pair of faces (four-fold symmetric).",
    _LIFT,
)
_UPRIGHT = _s(
    "the upright bottle's upper body near the cap",
    "just below the cap, centred on the bottle's vertical axis",
    "close a little below the top of the bottle",
    "pads on opposite sides of the neck or upper body",
    "from above: move over the bottle's axis at a safe height, then descend until the top is between the pads",
    _TOPDOWN + " Any yaw works (the bottle is round).",
    _LIFT,
)
_PLACE = (
    "Carry the held object at a safe height until its centre is over the target, lower it until it rests "
    "on (or just above) the target surface, open the gripper, then lift the gripper clear."
)

EXPERT: dict[str, dict] = {
    "grasp_single_cube": _CUBE,
    "grasp_single_bottle": _s(
        "the bottle's body, lying on its side",
        "the middle of the body, away from the cap and the base",
        "close at the height of the body's axis",
        "pads on either side of the body, the closing axis across the bottle's long axis",
        "from above: move over the middle of the body, then descend vertically",
        _TOPDOWN + " Then rotate about rx so ry is perpendicular to the bottle's long axis (two-fold symmetric).",
        _LIFT,
    ),
    "grasp_single_bottle_upright": _UPRIGHT,
    "grasp_single_pen": _s(
        "the pen's barrel",
        "slightly behind the middle of the pen, away from both ends",
        "close at the barrel's height, with the fingertips close to the table",
        "pads on either side of the barrel, the closing axis across the pen",
        "from above: move over the grasp point, then descend until the fingertips nearly touch the table",
        _TOPDOWN + " Then rotate about rx so ry is perpendicular to the pen (two-fold symmetric).",
        _LIFT,
    ),
    "grasp_pen_leaning_cube": _s(
        "the pen's barrel where it rises from the table toward the cube",
        "the lower half of the pen, clear of the cube",
        "close at the barrel's height there",
        "pads on either side of the barrel, the closing axis across the pen",
        "from above: move over the grasp point on the pen, never over the cube, then descend",
        _TOPDOWN + " Then rotate about rx so ry is perpendicular to the pen's horizontal direction.",
        _LIFT,
        ("the pads do not touch the supporting cube",),
        functional_constraints=["grasp the pen, never the cube"],
    ),
    "click_bell_right": _s(
        "the bell's top knob",
        "the top centre of the bell, on its vertical axis",
        "press until the closed fingertips meet the knob top",
        "both fingers closed together, pressing with the fingertips",
        "close the gripper first, move above the knob, then descend vertically onto it",
        _TOPDOWN,
        "No lift: the press itself completes the task; lift away after the contact.",
        functional_constraints=["press with the closed gripper on the top centre, not the rim"],
    ),
    "beat_block_hammer_right": _s(
        "the hammer's handle",
        "the handle, between its end and the head",
        "close at the handle's height, fingertips near the table",
        "pads on either side of the handle, the closing axis across it",
        "from above: move over the handle, descend, close, then lift the hammer well clear of the table",
        _TOPDOWN + " Align ry across the handle; after lifting, rotate about the palm normal rz until the head's face "
        "points down.",
        "Lift about 10 cm after closing; then carry the head over the block and lower it until it touches the "
        "block's top.",
        post_grasp_goal="the hammer head's face touches the top of the block",
    ),
    "place_single_cube": {
        **_CUBE,
        "post_grasp_goal": "the cube resting on the green target area, gripper open",
        "task_stage": _PLACE,
    },
    "place_cube_in_bowl": {
        **_CUBE,
        "post_grasp_goal": "the cube inside the bowl, gripper open",
        "task_stage": "Carry the cube above the bowl's centre, lower it a little above the bowl's rim, open, lift.",
    },
    "place_cube_on_cube": {
        **_CUBE,
        "grasp_object_part": "the red cube's body (never the green base cube)",
        "post_grasp_goal": "the red cube stacked flat on the green cube, gripper open",
        "task_stage": "Carry the red cube over the green cube's centre, lower it until it rests on its top "
        "face, open, lift clear without pushing the stack.",
    },
    "place_single_bottle_upright": {
        **_UPRIGHT,
        "test_lift_rule": "After closing, lift the bottle about 6 cm, then lower it to carry it low, a couple of "
        "centimetres above the table (a top-down hand high over the far target is out of reach).",
        "post_grasp_goal": "the bottle standing upright on the green target area, gripper open",
        "task_stage": "Carry the bottle upright and low over the target's centre, lower it until its base is just "
        "above the target, open, lift clear.",
    },
    "handover_horizontal_block": _s(
        "the block's end nearest the giver arm",
        "one end segment of the block for the giver; a separate exposed segment for the receiver",
        "close at the block's mid-height",
        "giver: pads across the block's width; receiver: a horizontal side grasp on another segment",
        "the giver (the arm on the block's side) grasps from above, lifts and turns the long axis vertical in "
        "free space; the receiver approaches from the opposite side",
        _TOPDOWN + " The giver rotates so the block's long axis becomes vertical before the handover.",
        "Giver lifts about 20 cm after closing (room to turn the block upright); the handover completes when the "
        "receiver holds the block and the giver has opened.",
        required_arms=2,
        arm_assignment="the arm on the block's side of the table gives; the other arm receives",
        coordination_sequence=[
            "giver grasps and lifts",
            "giver turns the block vertical",
            "receiver grasps a separate segment",
            "receiver closes, then giver opens",
        ],
        release_or_completion_rule="the giver opens only after the receiver has closed on the block",
    ),
    "lift_pot": _s(
        "the pot's two side handles",
        "the middle of each handle",
        "close at handle height",
        "each gripper's pads on either side of its handle, the closing axis across the handle",
        "both arms together: move above their handles at a safe height, then descend vertically onto them",
        _TOPDOWN + " Then rotate each gripper about rx so ry runs across its handle and the palms face in at the "
        "pot, mirrored; make large rotations high up, away from the pot.",
        "Close both grippers together, then lift both arms together with equal +z moves of about 8 cm, keeping "
        "the pot level.",
        required_arms=2,
        arm_assignment="left arm on the left handle, right arm on the right handle",
        synchronized_actions=["close both grippers together", "lift both arms with equal moves"],
        release_or_completion_rule="the pot is lifted level; no release needed",
    ),
    "place_shoe": _s(
        "the shoe's body around its middle",
        "the middle of the shoe, between toe and heel",
        "close at the sole's mid-height, fingertips near the table",
        "pads on either side of the shoe, the closing axis across it",
        "use the arm on the shoe's side; from above move over the grasp point, descend, close, lift",
        _TOPDOWN + " After lifting, rotate about rx until the toe points toward -x.",
        "Lift about 7 cm after closing; then turn, carry over the mat's centre, lower until the sole is just "
        "above the mat and open.",
        required_arms=1,
        arm_assignment="the arm on the shoe's side of the table; the other arm stays still",
        post_grasp_goal="the shoe flat and centred on the blue mat, toe toward -x, both grippers open",
    ),
}
ATOMIC = ("place_single_cube", "grasp_single_bottle", "grasp_single_bottle_upright", "grasp_single_pen")
BASKET = {
    **_s(
        "each object's graspable body, one object at a time",
        "the middle of a broad regular region of the object",
        "close at the object's mid-height",
        "one pad on each side of the object, the closing axis across its narrow dimension",
        "from above: move over the object at a safe height, then descend vertically",
        _TOPDOWN + " Rotate about rx to align ry across the object.",
        "Lift each object clear of the basket rim before carrying it.",
    ),
    "task_stage": "Look at the whole table, pick the next object, place it in the basket, repeat until the table "
    "is empty.",
    "object_strategies": {
        "cube": EXPERT["place_single_cube"]["approach_strategy"],
        "lying bottle": EXPERT["grasp_single_bottle"]["approach_strategy"],
        "upright bottle": EXPERT["grasp_single_bottle_upright"]["approach_strategy"],
        "pen": EXPERT["grasp_single_pen"]["approach_strategy"],
    },
}


def expert_fields(task: str) -> tuple[str, dict]:
    """The base task and the validated expert summary an episode of ``task`` reads: its base
    task's (for the basket, the one made of its atomic tasks'), checked as a learned one is."""
    base = summary_task(task)
    fields = BASKET if len(task_demos(base)) > 1 else EXPERT[base]
    return base, validate_summary(fields, base)
