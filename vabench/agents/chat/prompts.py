"""Every text the harness shows a model, in one place and versioned.

Prompt text is data: a run records :data:`PROMPT_VERSION` and :func:`prompt_digest` (a hash of
every agent-side text source), so two runs with the same version string but edited texts can
still be told apart. Bump the version whenever a text changes meaning.

The rules paraphrase the paper's generic manipulation and safety constraints (Appendix D.3) and
the reference harness's rule set; the task profiles exist only where the paper says they are
needed (dual-arm roles, handover, pot, basket). Nothing here may contain object coordinates:
every number a model sees about the scene comes from the robot's own proprioception.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from vabench.core.boundary import Observation
from vabench.core.interventions import ALL_VIEWS, manifest
from vabench.core.vocab import Intervention, ObservationProfile, protocol_named
from vabench.envs import action_names

PROMPT_VERSION = "vabench-prompts-v2"  # v2: observation profiles (paper | explained); interventions add texts only
PASSIVE_VIEWS = ALL_VIEWS
CAMERA_CHAIN_LIMIT = 5

HEADER = """You control a robot in a physics simulation. You see RGB images and the robot's own \
state, and you act by sending exactly one JSON object per reply. A fixed motion planner executes \
only what you command; it never chooses an object, a grasp or a waypoint for you. You are never \
given object positions: infer them from the images and from how the robot moves."""

RULES = [
    (
        "one_json",
        "Reply with exactly one JSON object (a fenced ```json block is fine). Robot and camera "
        "actions advance the episode by one step; tool calls and repairs do not.",
    ),
    (
        "clean_images",
        "Images are clean renders with no drawn markers, axes or labels. Reason from the "
        "pixels together with the numeric robot state.",
    ),
    (
        "world_axes",
        "World frame: +z is up, +x is the robot's right, +y points away from the robot across the table. "
        "Translations move along these fixed world axes whatever the camera shows.",
    ),
    (
        "local_axes",
        "Gripper-local axes (given in world coordinates each step): rx points from the wrist "
        "toward the fingertips (approach), ry is the finger-closing axis, rz = rx x ry is the palm normal. "
        "A local rotation turns about one of them by the right-hand rule and keeps GC (the point between "
        "the finger pads) fixed.",
    ),
    ("no_hidden_state", "Never assume object coordinates you have not inferred from evidence."),
    (
        "plan_grasp",
        "Before the first move, state in 'reason' which part of the object you will grasp, "
        "which regions you reject, and how you will approach.",
    ),
    ("centre_grasp", "Grasp the centre of a broad, regular region of the object; avoid ends, edges and transitions."),
    (
        "verify_depth",
        "Overlap in one image is not proof of alignment: confirm height and depth from a "
        "second viewpoint before closing.",
    ),
    (
        "insert_to_gc",
        "Before closing, bring the object deep between the pads, near GC. Fingertip contact "
        "alone means: keep inserting.",
    ),
    ("low_objects", "For low or lying objects, descend until the fingertips near the table or the object reaches GC."),
    ("wrap_before_close", "Close only when the pads are on opposite sides of the object with substantial overlap."),
    (
        "complete_lift",
        "After closing, lift far enough for the task to count (several centimetres), not a 2 cm test lift.",
    ),
    (
        "change_hypothesis",
        "If a grasp or lift fails, open, back off and change one clear geometric "
        "hypothesis instead of repeating the same motion.",
    ),
    (
        "read_feedback",
        "After every action the next observation says whether it was valid (last_action_valid) and "
        "whether the planner found and executed a motion (last_planner_success); judge the rest from "
        "the images and the robot state.",
    ),
    (
        "stop",
        'Send {"stop": true, "reason": "..."} only when you give up: a stop ends the episode as a '
        "failure. Success is detected automatically after every action.",
    ),
]

ACTIVE_CAMERA = f"""Camera (active protocol): one camera image per observation. Camera actions change only \
the viewpoint, never the robot or the meaning of world axes, and each costs one step. Semantic views \
are centred on the gripper (GC): view_topdown (world XY offsets and yaw; hides height), view_side \
(height, clearance, insertion; hides offsets along its line of sight), view_front_side_45, \
view_side_top_45 and view_oblique_45 (break occlusions, show the 3D configuration). Incremental: \
move_left/right/up/down (5 cm in the image plane), zoom_in/out (8 cm along the view), yaw_left/right \
(10 deg about world z), pitch_up/down (10 deg). Choose a view to resolve a specific uncertainty; prefer \
a semantic view over long chains of small moves. At most {CAMERA_CHAIN_LIMIT} camera actions in a row: \
after that the next step must be a robot action or a stop (tool calls do not reset the count)."""

DUAL_CAMERA = """With two arms, view_<name> centres on the midpoint of both grippers; view_left_<name>, \
view_right_<name> and view_both_<name> choose the target explicitly."""

PASSIVE_CAMERA = """Camera (passive protocol): every observation carries five images of the same moment, \
always in this order: 1 topdown (the whole table from above), 2 side, 3 front_side_45, 4 side_top_45, \
5 oblique_45 (these four follow the gripper). There are no camera actions in this protocol."""

ACTIONS = """Robot actions (JSON):
{"action": "gripper.move_world", "axis": "x|y|z", "sign": "+|-", "distance_mm": 1..100, "reason": "..."}
{"action": "gripper.rotate_local", "axis": "rx|ry|rz", "sign": "+|-", "angle_deg": 1..90, "reason": "..."}
{"action": "gripper.open"}   {"action": "gripper.close"}
Translations are clamped to the robot workspace; rotations are split into waypoints of at most 10 deg. \
"+" is the positive direction of the axis (right-hand rule for rotations)."""

DUAL_ACTIONS = """This task controls both arms ("left" and "right" mean the robot's arms, not image sides). \
Every gripper.move_world / gripper.rotate_local / gripper.open / gripper.close needs "arm": "left" or \
"right"; a numeric command without it is invalid. Also:
{"action": "left_gripper.close"}   {"action": "right_gripper.open"}   (one gripper)
{"action": "dual_gripper.open"}   {"action": "dual_gripper.close"}   (both grippers in one step)
{"action": "dual_gripper.move_world", "left": {"axis": "z", "sign": "+", "distance_mm": 50}, \
"right": {"axis": "z", "sign": "+", "distance_mm": 50}}   (both arms move together; if either arm \
cannot move, neither moves). There is no dual rotation."""

TOOLS = """Tools (do not advance the episode):
{"tool": "camera.history", "args": {"step": 3}}   an earlier image of this episode (passive: add "view")
{"tool": "geometry.verify", "args": {}}   the gripper's own geometry: approach direction, angle to \
straight down, jaw state"""

OTHER = """Other decisions: {"stop": true, "reason": "..."}"""

# Interventions (vabench.core.interventions): the only texts they add; under none nothing here is sent.
OBJECT_POSES_RULE = (
    "Intervention object_poses: every observation also lists the task objects' world centres, yaws and sizes, "
    "measured by the simulator. You may use them instead of inferring positions from the images."
)
OBJECT_POSES_HEAD = (
    "Task objects (world frame, metres; yaw_deg: the long horizontal side's angle from +x; size: extent along "
    "and across that side, and height):"
)
DEPTH_TOOL = (
    '{"tool": "perception.depth_point", "args": {"u": 320, "v": 240}}   the world point [x, y, z] under pixel '
    '(u: column, v: row, from the top left) of the current image (with several images add "view"); free'
)
VIEWS_PASSIVE = """Camera (passive protocol): every observation carries {n} of the same moment, always in \
this order: {views}. There are no camera actions in this protocol."""
VIEWS_ACTIVE = (
    "Intervention views_5: after the active camera's image, every observation also carries the five fixed "
    "observer views of the same moment, in this order: {views}."
)

TASK_PROFILES: dict[str, list[str]] = {
    "handover_horizontal_block": [
        "The giver is the arm on the block's side of the table; the other arm receives.",
        "Lift the block and turn its long axis vertical in free space before the handover.",
        "The receiver approaches a separate exposed segment from the opposite side with a horizontal side grasp.",
        "If the arms or the block collide, withdraw completely before trying again.",
        "The receiver closes before the giver opens.",
    ],
    "lift_pot": [
        "Use one handle per arm: the left arm takes the left handle, the right arm the right handle.",
        "Use mirrored, outside-in postures; make large rotations high up, away from the pot.",
        "Reach handle height outside the pot, then move in toward the handle.",
        "Check each grasp separately before closing; close both together and lift level with equal +z moves.",
    ],
    "put_everything_in_basket": [
        "Place every object on the table into the basket, one at a time.",
        "The learning demonstrations show single skills; this scene has its own objects, so do not assume "
        "the demonstrations' inventory.",
        "Look at the whole table before and after each placement to find what is left.",
        "Release each object inside the basket and lift clear before the next one.",
    ],
}

TRANSFER_POLICY = """This scene may differ from the demonstration (object shape, container, layout). Use \
the summary as transferable experience, not as a replay; do not assume colours, sizes or positions \
from it."""

LEARNING_SYSTEM = """You are preparing to control a robot. Before acting you study an RGB-only video \
of a successful demonstration of the task and write a structured summary of what must be done. The \
video has no poses, actions, joint states, object coordinates or phase labels. Reply with exactly one \
JSON tool call per message:
{"tool": "expert.retrieve", "args": {"mode": "trajectory"}}   the frame index (call this first)
{"tool": "expert.frame", "args": {"steps": [0, 40, 80]}}   up to 8 frames per call ("demo" when there \
are several demonstrations)
{"tool": "expert.learn", "args": {SUMMARY FIELDS}}   save the summary; allowed only after you have \
inspected at least 3 distinct frames (of each demonstration)
Summary fields (strings unless noted): grasp_object_part, grasp_region, grasp_height_or_depth, \
finger_placement, approach_strategy, posture_or_rotation, pre_close_checks (list of strings), \
test_lift_rule (how far to lift after closing to complete the task); optional: task_stage, \
post_grasp_goal, functional_constraints (list), safety_notes (list), required_arms (1 or 2), \
arm_assignment, coordination_sequence, synchronized_actions, release_or_completion_rule (two-arm tasks), \
affordance_profile (object: part_shape, symmetry_class, centering_tolerance, vertical_tolerance, avoid_ends, \
requires_bilateral_contact, requires_dual_arm), object_strategies (object: one strategy per object type, when \
there are several demonstrations). Describe what is visible and transferable; do not invent metric \
coordinates, and do not count or label the demonstration's objects (a new scene has its own)."""

LEARNING_TASK = """Task: {instruction}
Study the demonstration and save your summary with expert.learn."""

REPAIR = "{error}\nOutput one corrected JSON object."
TOOL_RESULT = "Tool {tool} result (no environment action was executed):\n{text}"
CAMERA_CHAIN = (
    f"camera chain limit: this would be camera action number {CAMERA_CHAIN_LIMIT + 1} in a row; at most "
    f"{CAMERA_CHAIN_LIMIT} consecutive camera actions are allowed. Send a robot action (or a stop) next."
)
COMPACTED = """Earlier steps were compacted to save context. What happened in steps {first}..{last} \
(written by the harness from the episode record):"""


TABLE_HEIGHT = "The table top is at z = 0.74 m."  # explained only: the paper leaves scene geometry to inference
EXPLAINED_FEEDBACK = (  # explained only: the env's reasons reach the model
    "Read the feedback after every action: it says whether the action was valid, whether the planner "
    "found a motion, and why a motion was clamped, stopped short or refused."
)


def _rules(observation: str = ObservationProfile.PAPER) -> str:
    explained = observation != ObservationProfile.PAPER
    lines = []
    for key, text in RULES:
        if explained and key == "world_axes":
            text = f"{text} {TABLE_HEIGHT}"
        elif explained and key == "read_feedback":
            text = EXPLAINED_FEEDBACK
        lines.append(f"- [{key}] {text}")
    return "Rules:\n" + "\n".join(lines)


def system_prompt(
    task: str,
    arms: tuple[str, ...],
    protocol: str,
    summary: str | None = None,
    transfer: bool = False,
    observation: str = ObservationProfile.PAPER,
    intervention: str = Intervention.NONE,
) -> str:
    """The first message of every evaluation episode (summary included once, not every step); an
    intervention adds exactly its manifest's system-prompt text."""
    parts = [HEADER, _rules(observation)]
    if intervention == Intervention.OBJECT_POSES:
        parts[-1] += f"\n- [object_poses] {OBJECT_POSES_RULE}"
    camera, views = protocol_named(protocol).camera_actions, manifest(intervention).views
    if camera:
        parts.append(ACTIVE_CAMERA + (" " + DUAL_CAMERA if len(arms) == 2 else ""))
        if views:
            parts.append(VIEWS_ACTIVE.format(views=", ".join(views)))
    elif views:
        n = "one image" if len(views) == 1 else f"{len(views)} images"
        parts.append(VIEWS_PASSIVE.format(n=n, views=", ".join(f"{i} {v}" for i, v in enumerate(views, 1))))
    else:
        parts.append(PASSIVE_CAMERA)
    parts.append(ACTIONS)
    if len(arms) == 2:
        parts.append(DUAL_ACTIONS)
    names = [n for n in action_names(arms, camera=camera) if n.startswith("camera.")]
    if names:
        parts.append('Camera actions (JSON {"action": name}): ' + ", ".join(names))
    parts += [TOOLS + (f"\n{DEPTH_TOOL}" if intervention == Intervention.DEPTH_POINT else ""), OTHER]
    profile = TASK_PROFILES.get(task)
    if profile:
        parts.append("Task profile:\n" + "\n".join(f"- {line}" for line in profile))
    if transfer:
        parts.append(TRANSFER_POLICY)
    if summary:
        parts.append(summary)
    return "\n\n".join(parts)


def _vec(v) -> str:
    return "[" + ", ".join(f"{float(x):.4f}" for x in v) + "]"


def proprio_text(proprio: dict) -> str:
    """Robot state with 4-digit precision (metres, unit vectors, degrees)."""
    lines = []
    for arm, p in proprio.items():
        lines.append(
            f"{arm} arm: gripper {'closed' if p.gripper_closed else 'open'}; GC {_vec(p.gc)}; "
            f"end-effector {_vec(p.ee_position)}, quat_wxyz {_vec(p.ee_quat_wxyz)}, rpy_deg {_vec(p.ee_rpy_deg)}; "
            f"rx {_vec(p.rx)}, ry {_vec(p.ry)}, rz {_vec(p.rz)}"
        )
    return "\n".join(lines)


def objects_text(objects: list[dict]) -> str:
    """The object_poses block of an observation (env.object_poses)."""
    lines = [OBJECT_POSES_HEAD]
    for o in objects:
        kind = "static" if o["static"] else "movable"
        lines.append(
            f"- {o['name']}: centre {_vec(o['centre'])}, yaw_deg {o['yaw_deg']:.1f}, size {_vec(o['size'])}, {kind}"
        )
    return "\n".join(lines)


def step_text(
    obs: Observation,
    history_steps: int = 20,
    observation: str = ObservationProfile.PAPER,
    views: tuple[str, ...] | None = None,
) -> str:
    """The text of one observation turn (images follow it): a pure rendering of ``obs``.

    ``paper`` (the default; paper 3.4, D.1-D.2, reference harness 2.2 and 5.6): the step count, the
    instruction, the previous action's validity and planner outcome as two booleans, each arm's
    proprioception, the executed actions; no budget, no reason text. ``explained`` (an ablation)
    adds the budget left, why an action was invalid, clamped, refused or stopped short (texts that
    may name task objects and distances) and the consecutive-camera count. ``obs.objects``
    (object_poses) follow the robot state; ``views`` (a view intervention) name the images that follow."""
    explained = observation == ObservationProfile.EXPLAINED
    if explained:
        lines = [f"Observation step {obs.step} of {obs.budget} ({obs.budget_left} steps left)."]
    else:
        lines = [f"Observation step {obs.step}."]
    lines.append(f"Task: {obs.instruction}")
    fb = obs.feedback
    if fb is not None and explained:
        valid = "valid" if fb.valid else "INVALID"
        planned = "planner succeeded" if fb.planner_success else "planner FAILED"
        lines.append(f"Last action: {fb.action} ({valid}; {planned}).")
        if fb.text:
            lines.append(f"Feedback: {fb.text}")
    elif fb is not None:
        lines.append(
            f"last_action_valid: {json.dumps(bool(fb.valid))}; "
            f"last_planner_success: {json.dumps(bool(fb.planner_success))}"
        )
    lines.append("Robot state (world frame, metres):\n" + proprio_text(obs.arms))
    if obs.objects is not None:
        lines.append(objects_text(obs.objects))
    executed = list(obs.executed)
    shown = executed[-history_steps:]
    more = f" (last {len(shown)} of {len(executed)})" if len(executed) > len(shown) else ""
    lines.append(f"Executed actions{more}: " + (json.dumps(shown) if shown else "none yet"))
    if protocol_named(obs.protocol).camera_actions:
        if explained:
            lines.append(f"Consecutive camera actions: {obs.camera_chain} of {CAMERA_CHAIN_LIMIT}.")
        lines.append("Image: the current camera view." + (f" Then the views {', '.join(views)}." if views else ""))
    else:
        lines.append(
            f"Images: {_count(views or PASSIVE_VIEWS)} in the fixed order " + ", ".join(views or PASSIVE_VIEWS) + "."
        )
    lines.append("Output exactly one JSON object.")
    return "\n".join(lines)


def observation_text(obs: Observation, history_actions: int, observation: str, intervention: str) -> str:
    """The paper's text of one observation turn under a condition (its images follow it)."""
    return step_text(obs, history_actions, observation, manifest(intervention).views)


def _count(views) -> str:
    return {1: "one view", 3: "three views", 5: "five views"}.get(len(views), f"{len(views)} views")


@functools.cache
def prompt_digest() -> str:
    """A short hash of every agent-side source of text a model sees (these templates and step
    texts, the protocol's error texts, the tools' and the demo tools' outputs, the summary
    rendering), recorded with each episode: editing any of them changes the digest."""
    here = Path(__file__).parents[1]  # vabench/agents
    h = hashlib.sha256()
    sources = ("chat/prompts.py", "chat/protocol.py", "chat/tools.py", "summaries/demo_tools.py")
    sources += ("summaries/summary_schema.py", "summaries/summary_store.py")
    sources += ("summaries/expert_summaries.py",)  # summary=expert: the text those summaries carry
    sources += ("chat/history.py", "chat/agent.py", "episode.py", "chat/dialogue.py")  # a request's parts, digests
    for name in sources:
        h.update((here / name).read_bytes())
    return h.hexdigest()[:12]
