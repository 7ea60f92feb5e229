"""What a judge is shown of one episode, and how it is asked: the request is built from that
episode's record alone (nothing from other episodes, no key, no simulator state), with the rubric,
gates and applicability rules of ``vabench.analysis.labels`` (composed here, never restated).

The evidence, in step order: the task and instruction; the dialogue (the harness's user turns but
the system prompt, the model's replies or an agent's answers); every action with its validity, the
planner's verdict, the feedback and the checker's subtask progress after it; and the recording views (the evaluator's
camera, which the paper's annotators watched) at the decision steps, at most ``max_frames`` of them
spread evenly. A record without recording views is judged on the dialogue alone, and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.chat.model import image_part
from vabench.analysis import labels as L
from vabench.results.recordfile import Event, read_events

TEXT_MAX = 1500  # characters of one turn or reply shown to the judge; the rest is cut and marked
NO_VIEWS = "judged on the dialogue alone: the record has no recording views"


def system_prompt() -> str:
    """The judge's instructions: the nine criteria, the two gates and which criteria each gates."""
    crit = "\n".join(f"- {c} ({name}): 1 when {text[0].lower()}{text[1:]}" for c, (name, text) in L.RUBRIC.items())
    gates = "\n".join(
        f"- {g}: {L.GATE_TEXT[g]} Gates {', '.join(c for c, v in L.GATED.items() if v == g)}." for g in L.GATES
    )
    always = ", ".join(c for c in L.CRITERIA if c not in L.GATED)
    example = {
        "gates": dict.fromkeys(L.GATES, False),
        "labels": {c: (None if c in L.GATED else 1) for c in L.CRITERIA},
        "steps": {c: 1 for c in L.CRITERIA if c not in L.GATED},
    }
    return (
        "You annotate one episode of a robot-manipulation agent for trajectory diagnostics. Judge only what the "
        "episode below shows.\n\nGates (true or false for the whole episode):\n"
        f"{gates}\n\nCriteria (1 = the behaviour is present, 0 = absent, null = not applicable):\n{crit}\n\n"
        f"{always} always apply. A gated criterion is null when its gate is false, and 0 or 1 when it is true.\n"
        "For every 0 or 1, give in steps the step number the label rests on.\n"
        f"Answer with exactly one JSON object and nothing else, shaped like:\n{json.dumps(example)}"
    )


@dataclass(frozen=True)
class Evidence:
    messages: list[dict]  # the request: system + one user message (text and images)
    views: int  # recording views shown
    last_step: int  # the episode's last env step: a cited step must not exceed it
    note: str  # what the label's notes say about the evidence ("" when the views were there)


def _cut(text) -> str:
    text = str(text or "")
    return text if len(text) <= TEXT_MAX else text[:TEXT_MAX] + f" [... {len(text) - TEXT_MAX} characters cut]"


def _line(e: dict) -> str | None:
    kind, step = e.get("type"), e.get("step", 0)
    if kind == Event.TURN and e.get("kind") != "system":
        return f"[step {step}] harness ({e.get('kind')}): {_cut(e.get('text'))}"
    if kind == Event.REPLY:  # a chat model's reply
        return f"[step {step}] agent: {_cut(e.get('text'))}"
    if kind == Event.ANSWER:  # the answer of an agent that reads observations (vabench.core.boundary)
        return f"[step {step}] agent: {_cut(json.dumps(e.get('payload')))}"
    if kind == Event.ACTION:
        done = [k for k, v in (e.get("checkpoints") or {}).items() if v]
        total = len(e.get("checkpoints") or {})
        return (
            f"[step {step}] ACTION {e.get('label')} ({e.get('kind')}): valid={e.get('valid')} "
            f"planner_success={e.get('planner_success')} feedback: {_cut(e.get('feedback'))} | checker: "
            f"{len(done)}/{total} subtasks done{' (' + ', '.join(done) + ')' if done else ''}"
        )
    if kind in (Event.STOP, Event.TIMEOUT):
        return f"[step {step}] episode ends: {kind} {_cut(e.get('reason') or e.get('error') or '')}".rstrip()
    return None


def _views(events: list[dict], folder: Path, max_frames: int) -> list[tuple[int, Path]]:
    """(step, file) of the recording views at the decision steps (after reset and after each action)."""
    acted = {0} | {int(e["step"]) for e in events if e.get("type") == Event.ACTION and "step" in e}
    found = []
    for e in events:
        rec = e.get("recording")
        if e.get("type") == Event.STATE and rec and e.get("step") in acted:
            path = (folder / rec).resolve()
            if path.is_relative_to(folder.resolve()) and path.is_file():  # a record names files inside itself
                found.append((int(e["step"]), path))
    if len(found) <= max_frames:
        return found
    pick = (
        sorted({round(i * (len(found) - 1) / (max_frames - 1)) for i in range(max_frames)}) if max_frames > 1 else [0]
    )
    return [found[i] for i in pick]


def evidence(record: Path, max_frames: int = 12) -> Evidence:
    """The judge's request for the episode whose ``events.jsonl`` is ``record``."""
    events = sorted(read_events(record), key=lambda e: e.get("seq", 0))
    start = next((e for e in events if e.get("type") == Event.EPISODE_START), {})
    views = _views(events, record.parent, max_frames)
    steps = [int(e["step"]) for e in events if e.get("type") == Event.ACTION and "step" in e]
    head = f"Task: {start.get('task')}\nInstruction: {_cut(start.get('instruction'))}\nArms: {start.get('arms')}\n"
    lines = [x for x in map(_line, events) if x]
    note = "" if views else NO_VIEWS
    content: list[dict] = [{"type": "text", "text": head + ("\n" + note if note else "") + "\n\n" + "\n".join(lines)}]
    for step, path in views:
        content += [{"type": "text", "text": f"Recording view after step {step}:"}, image_part(path.read_bytes())]
    messages = [{"role": "system", "content": system_prompt()}, {"role": "user", "content": content}]
    return Evidence(messages, len(views), max(steps, default=0), note)
