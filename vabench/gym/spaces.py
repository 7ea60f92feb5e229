"""The Gym env's spaces: the paper's metric action space (Tables 26-27) as a ``Dict``, and the
observation as a ``Dict`` of the protocol's images and the named robot state (docs/gym.md).

An action is one paper command, exactly what a model's decision names:

- ``command``: an index into :func:`commands` (the env's ``commands``): per controlled arm
  ``gripper.move_world``, ``gripper.rotate_local``, ``gripper.open``, ``gripper.close``; on a two-arm
  task also ``dual_gripper.move_world``, ``dual_gripper.open``, ``dual_gripper.close``; under the active
  protocol every camera action of Table 27 (``camera.view_topdown``, ..., ``camera.pitch_down``);
- ``axis``, ``sign``, ``distance_mm``, ``angle_deg``: one entry per controlled arm (left before right),
  read only by the commands that take them: a move reads its arm's ``axis`` (x, y, z), ``sign``
  (0 ``+``, 1 ``-``) and ``distance_mm`` in [1, 100]; a rotation its ``axis`` (rx, ry, rz), ``sign``
  and ``angle_deg`` in [1, 90]; the dual move reads both arms' entries.

Every action of the space is a valid command (the planner may still refuse its target). Distances
and angles are float64, so a decision survives ``encode`` then ``decision`` bit for bit.

Under ``control="ee_delta"`` the action is a ``Box`` of 7 numbers per controlled arm (left before
right; vabench.envs.control states the frame and units): bounded by the per-step limits (metres,
radians) and the gripper's 0..1, so every action of the space is taken as it is, unclipped.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from vabench.core.boundary import EE_DELTA
from vabench.core.vocab import ACTIVE
from vabench.envs.actions import (
    MOVE_AXES,
    MOVE_MM,
    ROTATE_AXES,
    ROTATE_DEG,
    SIGNS,
    Action,
    CameraAction,
    DualGripper,
    DualMoveWorld,
    Gripper,
    MoveWorld,
    RotateLocal,
    camera_action_names,
    parse_action,
)
from vabench.envs.control import MAX_STEP_M, MAX_STEP_RAD, PER_ARM
from vabench.envs.render import RenderPreset
from vabench.envs.sim.camera import PASSIVE_ORDER, WRIST
from vabench.envs.state import state_bounds

MOVE, ROTATE, OPEN, CLOSE = "gripper.move_world", "gripper.rotate_local", "gripper.open", "gripper.close"
DUAL_MOVE, DUAL_OPEN, DUAL_CLOSE = "dual_gripper.move_world", "dual_gripper.open", "dual_gripper.close"
CAMERA_PREFIX = "camera."


def commands(arms: tuple[str, ...], camera: bool) -> tuple[tuple[str, str | None], ...]:
    """The command table: (decision name, arm or None), in the order of the ``command`` index."""
    table = [(name, arm) for arm in arms for name in (MOVE, ROTATE, OPEN, CLOSE)]
    if len(arms) == 2:
        table += [(DUAL_MOVE, None), (DUAL_OPEN, None), (DUAL_CLOSE, None)]
    if camera:
        table += [(CAMERA_PREFIX + name, None) for name in camera_action_names(arms)]
    return tuple(table)


def command_labels(table) -> tuple[str, ...]:
    """Readable names of the table's commands (``gripper.move_world arm=left`` on a two-arm task)."""
    arms = {arm for _, arm in table if arm}
    return tuple(f"{name} arm={arm}" if arm and len(arms) == 2 else name for name, arm in table)


def action_space(arms: tuple[str, ...], camera: bool) -> spaces.Dict:
    n = len(arms)
    return spaces.Dict(
        {
            "command": spaces.Discrete(len(commands(arms, camera))),
            "axis": spaces.MultiDiscrete([3] * n),
            "sign": spaces.MultiDiscrete([2] * n),
            "distance_mm": spaces.Box(*MOVE_MM, shape=(n,), dtype=np.float64),
            "angle_deg": spaces.Box(*ROTATE_DEG, shape=(n,), dtype=np.float64),
        }
    )


def control_space(arms: tuple[str, ...]) -> spaces.Box:
    """The ee_delta action: per arm dx dy dz (within +-MAX_STEP_M), rx ry rz (+-MAX_STEP_RAD), gripper 0..1."""
    low = np.array([-MAX_STEP_M] * 3 + [-MAX_STEP_RAD] * 3 + [0.0], dtype=np.float32)
    high = np.array([MAX_STEP_M] * 3 + [MAX_STEP_RAD] * 3 + [1.0], dtype=np.float32)
    return spaces.Box(np.tile(low, len(arms)), np.tile(high, len(arms)), dtype=np.float32)


def control_decision(action, arms: tuple[str, ...]) -> dict:
    """The control step a Box action stands for: ``{"ee_delta": {arm: [7 numbers]}}``."""
    v = np.asarray(action, dtype=float).reshape(-1)
    return {EE_DELTA: {arm: v[PER_ARM * k : PER_ARM * (k + 1)].tolist() for k, arm in enumerate(arms)}}


def image_sizes(preset: RenderPreset, protocol: str, wrists: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
    """(height, width) of each image the protocol gives, by view name, then the wrist views
    (``wrists``, control=ee_delta only; at the observer's size)."""
    width, height = preset.observer_size
    wrist = {view: (height, width) for view in wrists}
    if protocol == ACTIVE.name:
        return {ACTIVE.name: (preset.active.height, preset.active.width), **wrist}
    return {**{view: (height, width) for view in PASSIVE_ORDER}, **wrist}


def wrist_views(arms: tuple[str, ...]) -> tuple[str, ...]:
    """The wrist views' names of a task controlling ``arms`` (vabench.envs.sim.camera.wrist_views)."""
    return (WRIST,) if len(arms) == 1 else tuple(f"{WRIST}_{arm}" for arm in arms)


def observation_space(preset: RenderPreset, protocol: str, arms: tuple[str, ...], wrist: bool = False) -> spaces.Dict:
    """``pixels``: the protocol's images (uint8 HxWx3, by view), and under ``wrist`` the wrist
    views; ``agent_pos``: the named state (vabench.envs.state), as LeRobot's Gym envs name them."""
    sizes = image_sizes(preset, protocol, wrist_views(arms) if wrist else ())
    pixels = {v: spaces.Box(0, 255, (h, w, 3), np.uint8) for v, (h, w) in sizes.items()}
    low, high = state_bounds(arms)
    return spaces.Dict({"pixels": spaces.Dict(pixels), "agent_pos": spaces.Box(low, high, dtype=np.float32)})


def _params(action: dict, k: int, rotate: bool) -> dict:
    axes, amount = (ROTATE_AXES, "angle_deg") if rotate else (MOVE_AXES, "distance_mm")
    return {
        "axis": axes[int(action["axis"][k])],
        "sign": SIGNS[int(action["sign"][k])],
        amount: float(action[amount][k]),
    }


def decision(action: dict, table, arms: tuple[str, ...]) -> dict:
    """The protocol decision (the JSON a model would send) that a Gym action encodes."""
    index = int(action["command"])
    if not 0 <= index < len(table):
        raise ValueError(f"command {index} is outside the command table (0..{len(table) - 1})")
    name, arm = table[index]
    out: dict = {"action": name}
    if arm is not None and len(arms) == 2:
        out["arm"] = arm
    if name in (MOVE, ROTATE):
        out.update(_params(action, arms.index(arm), name == ROTATE))
    elif name == DUAL_MOVE:
        out.update({side: _params(action, k, False) for k, side in enumerate(arms)})
    return out


def encode(act: Action | dict, table, arms: tuple[str, ...], camera: bool) -> dict:
    """The Gym action of a typed action, or of a decision dict (parsed as the env would)."""
    if isinstance(act, dict):
        act = parse_action(act, arms, camera)
    n = len(arms)
    out = {
        "axis": np.zeros(n, np.int64),
        "sign": np.zeros(n, np.int64),
        "distance_mm": np.full(n, MOVE_MM[0]),
        "angle_deg": np.full(n, ROTATE_DEG[0]),
    }

    def put(mv: MoveWorld | RotateLocal) -> None:
        k = arms.index(mv.arm)
        rotate = isinstance(mv, RotateLocal)
        out["axis"][k] = (ROTATE_AXES if rotate else MOVE_AXES).index(mv.axis)
        out["sign"][k] = 0 if mv.sign > 0 else 1
        out["angle_deg" if rotate else "distance_mm"][k] = mv.angle_deg if rotate else mv.distance_mm

    if isinstance(act, MoveWorld | RotateLocal):
        put(act)
        key = (MOVE if isinstance(act, MoveWorld) else ROTATE, act.arm)
    elif isinstance(act, Gripper):
        key = (CLOSE if act.close else OPEN, act.arm)
    elif isinstance(act, DualMoveWorld):
        put(act.left)
        put(act.right)
        key = (DUAL_MOVE, None)
    elif isinstance(act, DualGripper):
        key = (DUAL_CLOSE if act.close else DUAL_OPEN, None)
    elif isinstance(act, CameraAction):
        key = (CAMERA_PREFIX + act.name, None)
    else:
        raise TypeError(f"not an action: {act!r}")
    return {"command": table.index(key), **out}
