"""Reply policies for measured episodes behind a priced fake provider (``tests/openai_server.py``):
what the plan's priors (``benchmarks/plan_priors.py``) and its check (``benchmarks/cost_control.py``)
stand on. No real model answers here, so an episode of "today's models" is one of two kinds, mixed
at the paper's success rate for its protocol, track and task (docs/plan.md):

- :class:`Failing`: a model that never succeeds and spends the whole step budget, as most of the
  paper's episodes do (its 12 primary conditions succeed in 21 % of base episodes on average): small
  moves about the start pose, a look every sixth step in the active protocol, the gripper now and
  then, and one invalid reply in twenty (a repair, so about 1.05 calls per step);
- :class:`ServoReplies`: a model that succeeds, taking the steps the servo agent (``model=servo``)
  takes: it sees what a model sees and looks and probes as a model would, so its decisions stand
  for a successful model's.

Both are deterministic functions of the request (a resumed attempt asks the same) and write the same
kind of reason with each decision, about 70 tokens, as a model's decision with its reason does.
"""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
from PIL import Image

from vabench.agents.models.servo import ServoAgent
from vabench.core.boundary import ArmProprio, Brief, Feedback, Frame, Observation, payload
from vabench.envs.actions import SEMANTIC_VIEWS

MOVES = ("x", "y", "z")
LOOK_EVERY = 6  # active: one camera action in six steps
REPAIR_EVERY = 20  # one invalid reply in twenty calls
REASONS = (
    "The gripper is still above and to the side of the target; I move it along {axis} to line the fingers up "
    "with the object's faces before descending, keeping clear of the other objects on the table.",
    "The last move brought the fingers closer but the offset along {axis} is still visible in the image; I "
    "correct it with a small step so the grasp closes on the middle of the object rather than its edge.",
    "I cannot judge the height of the fingers above the object from this angle, so I check the scene from "
    "another view before committing to the descent; the arm state shows the gripper open and free.",
)


def _calls(body: dict) -> int:
    """The call's number in its episode (1 for the first request): earlier replies plus one."""
    return 1 + sum(m.get("role") == "assistant" for m in body.get("messages", []))


def reason(n: int, axis: str = "x") -> str:
    return REASONS[n % len(REASONS)].format(axis=axis)


class Failing:
    """A model that never completes the task and uses its whole budget (module docstring)."""

    def __init__(self, arms: tuple[str, ...], active: bool, look_every=LOOK_EVERY, repair_every=REPAIR_EVERY, words=1):
        """``look_every``, ``repair_every`` and ``words`` (each reason said that many times) make other
        models than the priors' (benchmarks/calibration.py)."""
        self.arms, self.active = arms, active
        self.look_every, self.repair_every, self.words = look_every, repair_every, words

    def __call__(self, body: dict) -> str:
        n = _calls(body)
        axis, sign = MOVES[n % 3], "+-"[(n // 3) % 2]
        decision: dict = {"action": "gripper.move_world", "axis": axis, "sign": sign, "distance_mm": 20}
        if n % self.repair_every == 0:
            decision["distance_mm"] = 250  # out of range (1-100 mm): the harness asks again
        elif self.active and n % self.look_every == 1:
            view = SEMANTIC_VIEWS[(n // self.look_every) % len(SEMANTIC_VIEWS)]
            decision = {"action": f"camera.view_{'both_' if len(self.arms) == 2 else ''}{view}"}
        elif n % 9 in (4, 5):
            decision = {"action": "gripper.close" if n % 9 == 4 else "gripper.open"}
        if len(self.arms) == 2 and decision["action"].startswith("gripper."):
            decision["arm"] = self.arms[n % 2]
        decision["reason"] = " ".join([reason(n, axis)] * self.words)
        return json.dumps(decision)


_VEC = r"\[([-0-9.,\s]+)\]"
_ARM = re.compile(
    rf"(left|right) arm: gripper (open|closed); GC {_VEC}; end-effector {_VEC}, quat_wxyz {_VEC}, "
    rf"rpy_deg {_VEC}; rx {_VEC}, ry {_VEC}, rz {_VEC}"
)
_FEEDBACK = re.compile(r"last_action_valid: (true|false); last_planner_success: (true|false)")
_TASK = re.compile(r"^Task: (.*)$", re.MULTILINE)


def _vec(text: str) -> tuple:
    return tuple(float(v) for v in text.split(","))


def _image(url: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2]))).convert("RGB"))


def observation(messages: list[dict], protocol: str) -> Observation:
    """The newest observation of a request as it arrived over HTTP, read back from its text and
    images as a model on the other side reads them (this stands in for a model, not for vabench)."""
    for message in reversed(messages):
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        text = "\n".join(p.get("text") or "" for p in parts if p.get("type") == "text")
        if message.get("role") != "user" or "Robot state" not in text:
            continue
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        images = [
            np.asarray(Image.open(io.BytesIO(base64.b64decode(u.partition(",")[2]))).convert("RGB")) for u in urls
        ]
        arms = {
            m[1]: ArmProprio(
                _vec(m[4]), _vec(m[5]), _vec(m[6]), m[2] == "closed", _vec(m[3]), *map(_vec, m.groups()[6:])
            )
            for m in _ARM.finditer(text)
        }
        fb = _FEEDBACK.search(text)
        feedback = Feedback("", fb[1] == "true", fb[2] == "true") if fb else None
        return Observation(
            0, _TASK.search(text)[1], protocol, tuple(Frame("", i) for i in images), arms, (), 0, (), (), feedback
        )
    raise ValueError("no observation with a robot state in the request")


class ServoReplies:
    """The servo agent's decisions, read from the request as it arrived over HTTP (the servo keeps
    its own state per episode: a request with no earlier reply starts a new one)."""

    def __init__(self, protocol: str, task: str = ""):
        self.protocol, self.task = protocol, task
        self.agent: ServoAgent | None = None

    def __call__(self, body: dict) -> str:
        messages, n = body["messages"], _calls(body)
        seen = observation(messages, self.protocol)
        if n == 1 or self.agent is None:
            self.agent = ServoAgent()
            self.agent.start(Brief(self.task, 0, tuple(sorted(seen.arms)), self.protocol))
        decision = payload(self.agent.act(seen))
        decision["reason"] = reason(n, str(decision.get("axis", "x")))
        return json.dumps(decision)
