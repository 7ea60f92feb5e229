"""The env's action vocabulary (paper Tables 26-27): typed actions and a strict parser.

The parser turns one decision object (already JSON-decoded; untrusted) into a typed action or
raises :class:`ActionError` with a message that names the field, the value and what is
allowed. Unknown fields (``reason`` and the like) are ignored. Nothing is ever evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from vabench.core.errors import VabenchError
from vabench.core.vocab import LEFT, RIGHT

MOVE_MM = (1.0, 100.0)
ROTATE_DEG = (1.0, 90.0)
MOVE_AXES = ("x", "y", "z")  # gripper.move_world's world axes
ROTATE_AXES = ("rx", "ry", "rz")  # gripper.rotate_local's gripper-local axes
SIGNS = ("+", "-")  # the 'sign' field's words (the parser also takes the aliases below)
SEMANTIC_VIEWS = ("topdown", "side", "front_side_45", "side_top_45", "oblique_45")
INCREMENTAL_CAMERA = (
    "move_left",
    "move_right",
    "move_up",
    "move_down",
    "zoom_in",
    "zoom_out",
    "yaw_left",
    "yaw_right",
    "pitch_up",
    "pitch_down",
)
_POS = {"+", "pos", "positive", "+1", "1", "plus"}
_NEG = {"-", "neg", "negative", "-1", "minus"}
MAX_TEXT = 200  # longest string value echoed back in an error


class ActionError(VabenchError, ValueError):
    """A decision that is not a valid action; the message is meant for the model."""


def sign_word(amount: float) -> str:
    """The 'sign' field of a signed amount: '+' above zero, else '-'."""
    return SIGNS[0] if amount > 0 else SIGNS[1]


@dataclass(frozen=True)
class MoveWorld:
    arm: str
    axis: str  # x | y | z
    sign: int  # +1 | -1
    distance_mm: float

    @property
    def label(self) -> str:
        return f"{self.arm}.move_world {self.axis}{sign_word(self.sign)} {self.distance_mm:g}mm"


@dataclass(frozen=True)
class RotateLocal:
    arm: str
    axis: str  # rx | ry | rz
    sign: int
    angle_deg: float

    @property
    def label(self) -> str:
        return f"{self.arm}.rotate_local {self.axis}{sign_word(self.sign)} {self.angle_deg:g}deg"


@dataclass(frozen=True)
class Gripper:
    arm: str
    close: bool

    @property
    def label(self) -> str:
        return f"{self.arm}.gripper {'close' if self.close else 'open'}"


@dataclass(frozen=True)
class DualMoveWorld:
    left: MoveWorld
    right: MoveWorld

    @property
    def label(self) -> str:
        return f"dual.move_world [{self.left.label}, {self.right.label}]"


@dataclass(frozen=True)
class DualGripper:
    close: bool

    @property
    def label(self) -> str:
        return f"dual.gripper {'close' if self.close else 'open'}"


@dataclass(frozen=True)
class CameraAction:
    name: str  # e.g. "view_topdown", "view_left_side", "zoom_in"

    @property
    def label(self) -> str:
        return f"camera.{self.name}"


Action = Union[MoveWorld, RotateLocal, Gripper, DualMoveWorld, DualGripper, CameraAction]


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "...'"


def _number(obj: dict, key: str, lo: float, hi: float, unit: str) -> float:
    if key not in obj:
        raise ActionError(f"missing field '{key}': a number of {unit} in [{lo:g}, {hi:g}]")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ActionError(f"field '{key}' must be a number of {unit} in [{lo:g}, {hi:g}], got {_show(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ActionError(f"field '{key}' must be a number of {unit} in [{lo:g}, {hi:g}], got {_show(value)}") from None
    if not math.isfinite(number):
        raise ActionError(f"field '{key}' must be a finite number of {unit}, got {_show(value)}")
    if not lo <= number <= hi:
        raise ActionError(f"field '{key}' = {number:g} {unit} is outside the allowed range [{lo:g}, {hi:g}] {unit}")
    return number


def sign_of(obj: dict) -> int:
    """+1 or -1 from a decision's 'sign' field, its aliases included (ActionError otherwise): the
    one reading of it, for the parser and for whoever turns recorded commands into vectors."""
    value = obj.get("sign")
    token = str(value).strip().lower() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if token in _POS:
        return 1
    if token in _NEG:
        return -1
    raise ActionError(f"field 'sign' must be '{SIGNS[0]}' or '{SIGNS[1]}', got {_show(value)}")


def _choice(obj: dict, key: str, allowed: tuple[str, ...], aliases: dict[str, str] | None = None) -> str:
    value = obj.get(key)
    token = value.strip().lower() if isinstance(value, str) else None
    if aliases and token in aliases:
        token = aliases[token]
    if token not in allowed:
        what = "missing" if key not in obj else f"got {_show(value)}"
        raise ActionError(f"field '{key}' must be one of {', '.join(allowed)}; {what}")
    return token


def _arm(obj: dict, arms: tuple[str, ...], name: str) -> str:
    value = obj.get("arm")
    if value is None:
        if len(arms) == 1:
            return arms[0]
        raise ActionError(f"'{name}' needs an 'arm' field ('left' or 'right') because this task controls both arms")
    token = value.strip().lower() if isinstance(value, str) else None
    if token not in arms:
        allowed = " or ".join(f"'{a}'" for a in arms)
        raise ActionError(f"field 'arm' must be {allowed} in this task, got {_show(value)}")
    return token


def _move(obj: dict, arm: str) -> MoveWorld:
    return MoveWorld(arm, _choice(obj, "axis", MOVE_AXES), sign_of(obj), _number(obj, "distance_mm", *MOVE_MM, "mm"))


def camera_action_names(arms: tuple[str, ...]) -> tuple[str, ...]:
    views = [f"view_{v}" for v in SEMANTIC_VIEWS]
    if len(arms) == 2:
        views += [f"view_{who}_{v}" for who in (LEFT, RIGHT, "both") for v in SEMANTIC_VIEWS]
    return tuple(views) + INCREMENTAL_CAMERA


def action_names(arms: tuple[str, ...], camera: bool) -> tuple[str, ...]:
    """Every action name the env accepts in this configuration (for prompts and errors)."""
    names = ["gripper.move_world", "gripper.rotate_local", "gripper.open", "gripper.close"]
    if len(arms) == 2:
        names += [
            "left_gripper.open",
            "left_gripper.close",
            "right_gripper.open",
            "right_gripper.close",
            "dual_gripper.move_world",
            "dual_gripper.open",
            "dual_gripper.close",
        ]
    if camera:
        names += [f"camera.{n}" for n in camera_action_names(arms)]
    return tuple(names)


def parse_action(obj, arms: tuple[str, ...], camera: bool = True) -> Action:
    """Validate one decision object into a typed action (see module docstring)."""
    if not isinstance(obj, dict):
        raise ActionError(f"an action must be a JSON object, got {type(obj).__name__}")
    name = obj.get("action")
    if not isinstance(name, str) or not name.strip():
        raise ActionError("missing field 'action': a string naming the action, e.g. \"gripper.move_world\"")
    name = name.strip().lower()
    if len(name) > MAX_TEXT:
        raise ActionError(f"unknown action {_show(name)}")
    if name == "gripper.move_world":
        return _move(obj, _arm(obj, arms, name))
    if name == "gripper.rotate_local":
        aliases = dict(zip(MOVE_AXES, ROTATE_AXES, strict=True))  # "x" for "rx"
        return RotateLocal(
            _arm(obj, arms, name),
            _choice(obj, "axis", ROTATE_AXES, aliases),
            sign_of(obj),
            _number(obj, "angle_deg", *ROTATE_DEG, "deg"),
        )
    if name in ("gripper.open", "gripper.close"):
        return Gripper(_arm(obj, arms, name), name.endswith("close"))
    side, _, op = name.partition("_gripper.")
    if side in (LEFT, RIGHT) and op in ("open", "close"):
        if len(arms) != 2:
            raise ActionError(f"'{name}' is for two-arm tasks; here use 'gripper.{op}'")
        return Gripper(side, op == "close")
    if name.startswith("dual_gripper."):
        if len(arms) != 2:
            raise ActionError(f"'{name}' needs two controlled arms; this task controls only the {arms[0]} arm")
        if name in ("dual_gripper.open", "dual_gripper.close"):
            return DualGripper(name.endswith("close"))
        if name == "dual_gripper.move_world":
            moves = {}
            for side in (LEFT, RIGHT):
                sub = obj.get(side)
                if not isinstance(sub, dict):
                    raise ActionError(
                        f"'dual_gripper.move_world' needs a '{side}' object with axis, sign and distance_mm, "
                        f"got {_show(sub)}"
                    )
                try:
                    moves[side] = _move(sub, side)
                except ActionError as e:
                    raise ActionError(f"in '{side}': {e}") from None
            return DualMoveWorld(moves["left"], moves["right"])
    if name.startswith("camera."):
        if not camera:
            raise ActionError("camera actions are disabled in the passive five-view protocol")
        short = name[len("camera.") :]
        short = short[: -len(".small")] if short.endswith(".small") else short
        if short in camera_action_names(arms):
            return CameraAction(short)
    raise ActionError(f"unknown action {_show(name)}; allowed: {', '.join(action_names(arms, camera))}")
