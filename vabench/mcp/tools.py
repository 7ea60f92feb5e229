"""The MCP tools of one episode and what they answer, as plain data (no MCP types here).

One tool per paper command and camera action the episode allows (paper Tables 26-27), named as
the paper names it with the dot as an underscore (``gripper.move_world`` is ``gripper_move_world``,
``camera.view_topdown`` is ``camera_view_topdown``), its arguments the paper's fields with their
ranges as a JSON schema; one per tool the episode offers (``camera.history``,
``geometry.verify``, under ``intervention=depth_point`` ``perception.depth_point``), named the
same way; ``observe``; and ``stop``, the paper's stop decision. Every action tool takes an
optional ``reason``, kept in the record as a model's is.

The texts are the paper's: an observation is :func:`vabench.agents.chat.prompts.observation_text`
under the episode's condition (so ``observation=paper`` shows no budget and no feedback text,
``explained`` shows both), a refusal is the protocol's error text, a tool's answer is the tool's.

Under ``summary=own`` a session whose client has not written its summary yet first lists only the
summary stage's tools (:mod:`vabench.run.study`): ``demonstration`` (the frame index; with
``steps``, the frames as a model is shown them) and ``write_summary`` (the summary's fields, as a
model's ``expert.learn``); the episode's tools follow once the summary is stored. The summary an
episode carries (own, expert or shared) is shown by ``observe``, as a model's system prompt carries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vabench.agents.chat import prompts
from vabench.agents.summaries.demo_tools import MAX_FRAMES_PER_CALL
from vabench.agents.summaries.summary_schema import REQUIRED_LIST, REQUIRED_TEXT
from vabench.core.boundary import Answer, Command, Observation, Stop, ToolCall
from vabench.core.vocab import LEFT, RIGHT, ObservationProfile
from vabench.envs.actions import MOVE_AXES, MOVE_MM, ROTATE_AXES, ROTATE_DEG, SIGNS, action_names
from vabench.envs.render import render_preset, sent_bytes
from vabench.run.seat import ENDS, Seat, Turn
from vabench.run.study import DEMONSTRATION, WRITE_SUMMARY

OBSERVE = "observe"
STOP = "stop"  # the paper's stop decision ({"stop": true}): the episode ends, judged as it stands
REASON = {"reason": {"type": "string", "description": "why (kept in the episode record, as a model's reason is)"}}
SIGN = {"type": "string", "enum": list(SIGNS)}
MOVE = {
    "axis": {"type": "string", "enum": list(MOVE_AXES), "description": "a world axis"},
    "sign": SIGN,
    "distance_mm": {"type": "number", "minimum": MOVE_MM[0], "maximum": MOVE_MM[1]},
}
ROTATE = {
    "axis": {"type": "string", "enum": list(ROTATE_AXES), "description": "a gripper-local axis"},
    "sign": SIGN,
    "angle_deg": {"type": "number", "minimum": ROTATE_DEG[0], "maximum": ROTATE_DEG[1]},
}
ABOUT = {
    "gripper.move_world": "Move the gripper centre along one world axis (metres frame) by distance_mm.",
    "gripper.rotate_local": "Rotate the gripper about one of its own axes (rx, ry, rz) by angle_deg.",
    "gripper.open": "Open the gripper.",
    "gripper.close": "Close the gripper.",
    "dual_gripper.move_world": "Move both grippers at once, each along one world axis.",
}


def tool_name(name: str) -> str:
    """The MCP name of a paper action or tool: the dot as an underscore."""
    return name.replace(".", "_")


def every_action() -> dict[str, str]:
    """MCP name -> paper action, for every action of any episode (two arms, camera on): a call of one
    the episode does not allow reaches the loop, which refuses it with the paper's text."""
    return {tool_name(a): a for a in action_names((LEFT, RIGHT), camera=True)}


def _schema(action: str, arms: tuple[str, ...]) -> dict:
    props: dict = {}
    required: list[str] = []
    if action in ("gripper.move_world", "gripper.rotate_local"):
        props, required = dict(MOVE if action.endswith("move_world") else ROTATE), ["axis", "sign"]
        required.append("distance_mm" if action.endswith("move_world") else "angle_deg")
    elif action == "dual_gripper.move_world":
        side = {"type": "object", "properties": MOVE, "required": list(MOVE), "additionalProperties": False}
        props, required = {LEFT: side, RIGHT: side}, [LEFT, RIGHT]
    if action.startswith("gripper.") and len(arms) == 2:
        props["arm"], required = {"type": "string", "enum": list(arms)}, [*required, "arm"]
    return {"type": "object", "properties": {**props, **REASON}, "required": required}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    schema: dict


def stage_tools(seat: Seat) -> list[Tool]:
    """The summary stage's tools (``observe`` tells what the stage is)."""
    steps = {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": MAX_FRAMES_PER_CALL}
    demos = list(seat.study.demos.demos)
    look = {"steps": {**steps, "description": "frame indices to show"}, "demo": {"type": "string", "enum": demos}}
    fields = {name: {"type": "string"} for name in REQUIRED_TEXT}
    fields[REQUIRED_LIST] = {"type": "array", "items": {"type": "string"}}
    about = "Save your procedure summary (the episode's tools follow). " + seat.study.intro
    return [
        Tool(OBSERVE, "What this stage is: study the demonstration, then write your summary.", {}),
        Tool(
            DEMONSTRATION,
            "No arguments: the task and the demonstration's frame index; steps: those frames.",
            {"type": "object", "properties": look},
        ),
        Tool(
            WRITE_SUMMARY, about, {"type": "object", "properties": fields, "required": [*REQUIRED_TEXT, REQUIRED_LIST]}
        ),
    ]


def tools_of(seat: Seat) -> list[Tool]:
    """The episode's tools: its actions, its paper tools, ``observe`` (in a summary stage, its tools)."""
    if seat.study is not None:
        return stage_tools(seat)
    brief = seat.brief
    out = [Tool(OBSERVE, "The current images, robot state and feedback; advances nothing, costs nothing.", {})]
    for action in brief.actions:
        about = ABOUT.get(action) or f"The paper's action {action}; uses one step of the budget."
        out.append(Tool(tool_name(action), about, _schema(action, brief.arms)))
    for name in brief.tools:
        out.append(Tool(tool_name(name), f"The paper's tool {name}; advances nothing.", {"type": "object"}))
    out.append(Tool(STOP, "End the episode now (the paper's stop decision), judged as it stands.", _schema("", ())))
    return [Tool(t.name, t.description, t.schema or {"type": "object", "properties": {}}) for t in out]


def answer_of(name: str, args: Mapping, seat: Seat) -> Answer:
    """The typed answer a tool call stands for (``observe`` is answered without the loop)."""
    args = dict(args or {})
    reason = args.pop("reason", "")
    reason = reason if isinstance(reason, str) else str(reason)
    paper_tools = {tool_name(t): t for t in seat.brief.tools}
    if name == STOP:
        return Stop(reason)
    if name in paper_tools:
        return ToolCall(paper_tools[name], args, reason)
    action = every_action().get(name, name)  # an unknown name: the loop refuses it as an unknown action
    return Command({**args, "action": action}, reason)


def status(turn: Turn, seat: Seat) -> str:
    """The line every result starts with: the step, the budget left (as the condition shows it) and,
    once over, how the episode ended."""
    shown = seat.spec.condition.observation != ObservationProfile.PAPER
    budget = f"{turn.budget_left} of {turn.budget} steps left" if shown else "not shown under observation=paper"
    line = f"Step {turn.step}; budget: {budget}."
    if turn.over:
        line += f" The episode is over: {turn.end} ({ENDS.get(turn.end, 'it could not be judged')})."
    return line


def summary_text(seat: Seat) -> str:
    """The summary the episode carries, as a model's system prompt carries it ("" where none)."""
    summary = seat.brief.summary if seat.brief is not None else None
    return f"The demonstration summary (a model's system prompt carries it):\n{summary}" if summary else ""


def observation_text(obs: Observation, seat: Seat) -> str:
    """The paper's text of an observation under the episode's condition, without the JSON instruction
    (a tool call is the answer here)."""
    c, cfg = seat.spec.condition, seat.seats.run.harness
    text = prompts.observation_text(obs, cfg.history_actions, c.observation, c.intervention)
    return "\n".join(line for line in text.splitlines() if line != "Output exactly one JSON object.")


def images_of(obs: Observation, seat: Seat) -> list[bytes]:
    """The observation's images as the bytes a chat model is sent (the render preset's JPEG)."""
    return [sent_bytes(seat.spec.condition.render, f.view, f.pixels, obs.protocol) for f in obs.images]


def tool_images(obs: Observation, seat: Seat) -> list[bytes]:
    """A tool's images (camera.history's frames): as arrays in its data for an agent that reads
    observations, encoded as the episode's active view is."""
    arrays = ((obs.tool_result.data or {}).get("images") or []) if obs.tool_result is not None else []
    encoding = render_preset(seat.spec.condition.render).encoding(False)
    return [encoding.encode(a) for a in arrays]


def result_text(turn: Turn, seat: Seat, answer: Answer | None = None) -> str:
    """What a tool call comes to, as text: the status line, then the refusal, the tool's answer, the
    next observation, or the row's outcome."""
    lines = [status(turn, seat)]
    if turn.refused:
        lines.append(f"Refused (it cost one of this step's repairs): {turn.refused}")
    obs = turn.observation
    if isinstance(answer, ToolCall) and obs is not None and obs.tool_result is not None and not turn.refused:
        lines.append(f"Tool {answer.name}: {obs.tool_result.text}")
    elif turn.over:
        fb = turn.feedback
        if fb is not None:
            lines.append(
                f"Last action: {fb.action} (valid: {_yes(fb.valid)}; planner succeeded: {_yes(fb.planner_success)})."
            )
            lines += [f"Feedback: {fb.text}"] if fb.text else []
        row = turn.row
        lines.append(f"Outcome: success {_yes(row['success'])} after {row['steps']} steps.")
        lines += [f"Why: {row['error']}"] if row.get("error") else []
    elif obs is not None:
        lines.append(observation_text(obs, seat))
    return "\n".join(lines)


def _yes(value) -> str:
    return "true" if value else "false"
