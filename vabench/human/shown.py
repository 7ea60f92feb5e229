"""What the person sees and may do, as data for the page: exactly what a model is shown (the step
text the chat harness renders from the same :class:`~vabench.core.boundary.Observation`, its
images encoded as a model's are, the robot state, the feedback, and the budget only where the
condition tells a model the budget) and one control per paper command and camera action the
episode allows, with the paper's ranges (:mod:`vabench.envs.actions`). In a summary stage
(``summary=own``): the demonstration's frames and a box per summary field (:func:`studied`)."""

from __future__ import annotations

from vabench.agents.chat import prompts
from vabench.agents.summaries.demo_tools import MAX_FRAMES_PER_CALL, MIN_DISTINCT_FRAMES
from vabench.agents.summaries.summary_schema import REQUIRED_LIST, REQUIRED_TEXT
from vabench.core.boundary import Brief, Observation
from vabench.core.vocab import LEFT, RIGHT, ObservationProfile
from vabench.envs.actions import MOVE_AXES, MOVE_MM, ROTATE_AXES, ROTATE_DEG, SIGNS
from vabench.run.study import Study

MOVE = ({"name": "axis", "choices": MOVE_AXES}, {"name": "sign", "choices": SIGNS})
ROTATE = ({"name": "axis", "choices": ROTATE_AXES}, {"name": "sign", "choices": SIGNS})


def _number(name: str, lo_hi: tuple[float, float], unit: str) -> dict:
    return {"name": name, "min": lo_hi[0], "max": lo_hi[1], "unit": unit}


def _fields(action: str, arms: tuple[str, ...]) -> list[dict]:
    """The fields of one command beside its name (``left.axis``: a dual move's left arm)."""
    arm = [{"name": "arm", "choices": arms}] if len(arms) == 2 else []
    if action == "gripper.move_world":
        return [*arm, *MOVE, _number("distance_mm", MOVE_MM, "mm")]
    if action == "gripper.rotate_local":
        return [*arm, *ROTATE, _number("angle_deg", ROTATE_DEG, "deg")]
    if action in ("gripper.open", "gripper.close"):
        return arm
    if action == "dual_gripper.move_world":
        one = [*MOVE, _number("distance_mm", MOVE_MM, "mm")]
        return [{**f, "name": f"{side}.{f['name']}"} for side in (LEFT, RIGHT) for f in one]
    return []


def controls(brief: Brief) -> dict:
    """The robot commands (each with its fields) and the camera actions the episode accepts."""
    robot = [{"action": a, "fields": _fields(a, brief.arms)} for a in brief.actions if not a.startswith("camera.")]
    camera = [a for a in brief.actions if a.startswith("camera.")]
    return {"robot": robot, "camera": camera}


def feedback(obs: Observation) -> dict | None:
    fb = obs.feedback
    if fb is None:
        return None
    return {"action": fb.action, "valid": fb.valid, "planner_success": fb.planner_success, "text": fb.text}


def seen(obs: Observation, brief: Brief, history_actions: int) -> dict:
    """One observation as the page shows it (its images are fetched by index)."""
    return {
        "step": obs.step,
        "instruction": obs.instruction,
        "text": prompts.observation_text(obs, history_actions, brief.observation, brief.intervention),
        "state": prompts.proprio_text(obs.arms),
        "feedback": feedback(obs),
        "budget": obs.budget,  # None unless the condition tells a model the budget (observation=explained)
        "budget_left": obs.budget_left,
        "views": [f.view for f in obs.images],
        "executed": list(obs.executed)[-history_actions:],  # as many as a model is shown
        "camera_chain": obs.camera_chain if brief.observation != ObservationProfile.PAPER else None,
        "chain_limit": prompts.CAMERA_CHAIN_LIMIT,
    }


def briefed(brief: Brief) -> dict:
    """The episode's brief as the page shows it: the instruction, the protocol, and the system
    prompt a model reads first (its rules, command forms and, where the condition has one, its
    summary); not the task's name or seed, which a model is not told."""
    system = prompts.system_prompt(
        brief.task, brief.arms, brief.protocol, brief.summary, brief.transfer, brief.observation, brief.intervention
    )
    return {
        "protocol": brief.protocol,
        "arms": list(brief.arms),
        "instruction": brief.instruction,
        "summary": brief.summary,
        "system": system,
        "controls": controls(brief),
    }


def studied(study: Study) -> dict:
    """The summary stage as the page shows it: the task, each demonstration with the frames shown
    first (evenly spaced, as many as a model may ask for in one call), the text a model is told,
    and the summary's fields (a list field is one item per line)."""
    demos = []
    for d in study.demos.demos.values():
        n = min(MAX_FRAMES_PER_CALL, len(d.frames))
        first = sorted({round(k * d.last / max(n - 1, 1)) for k in range(n)})
        demos.append({"name": d.name, "last": d.last, "fps": d.fps, "first": first})
    fields = [{"name": f, "list": False} for f in REQUIRED_TEXT] + [{"name": REQUIRED_LIST, "list": True}]
    model = f"{study.intro}\n\n{study.index_text()}"
    return {
        "instruction": study.instruction,
        "demos": demos,
        "gate": MIN_DISTINCT_FRAMES,
        "fields": fields,
        "model": model,
    }
