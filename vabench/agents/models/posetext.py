"""The posetext agent (``model=posetext``; issue 27): an offline agent that reads only the numbers
an observation carries under ``intervention=object_poses`` (the robot state and the task objects'
centres, yaws and sizes), never an image, never the simulator.

Under the paper's boundary it sees no poses and stops at once (the floor of its attribution row).
It proves that the object_poses manifest carries what it claims: with perception removed, a fixed
procedure per task family (grasp from above across the object, lift; carry over the destination,
lower, release; press) solves the single-arm tasks from the request alone. The motions are the
scripted experts' own helpers (vabench.envs.tasks.expert), fed a state rebuilt from the observation.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from vabench.agents.chat.model import ModelError
from vabench.core.boundary import Agent, Answer, Brief, Observation, Stop, answer_of
from vabench.core.vocab import RIGHT
from vabench.envs.tasks import expert, task_class

PRESS_BELOW_TIP = 0.0092 - 0.004  # closed top-down fingertips sit 9.2 mm below GC; press 4 mm into the knob
NO_POSES = "posetext: the request states no object poses (intervention=object_poses gives them)"


class PoseState:
    """What the expert helpers read (GC, gripper axes, jaw command, body positions), rebuilt from
    the newest observation's robot state and stated object poses only."""

    def __init__(self):
        self.arms: dict[str, tuple[bool, np.ndarray, np.ndarray]] = {}
        self.bodies: dict[str, dict] = {}
        self.first: dict[str, dict] = {}  # each body as the first observation stated it
        self.controlled: tuple[str, ...] = ()

    def read(self, obs: Observation) -> None:
        self.arms = {
            arm: (p.gripper_closed, np.array(p.gc), np.column_stack([np.array(v) for v in (p.rx, p.ry, p.rz)]))
            for arm, p in obs.arms.items()
        }
        self.controlled = tuple(self.arms)
        self.bodies = {
            o["name"]: {
                "centre": np.array(o["centre"]),
                "yaw": math.radians(float(o["yaw_deg"])),
                "size": np.array(o["size"]),
            }
            for o in obs.objects or ()
        }
        self.first = self.first or dict(self.bodies)

    def gc(self, arm: str) -> np.ndarray:
        return self.arms[arm][1].copy()

    def gripper_rotation(self, arm: str) -> np.ndarray:
        return self.arms[arm][2]

    def closed(self, arm: str) -> bool:
        return self.arms[arm][0]

    def position(self, name: str) -> np.ndarray:
        return self.bodies[name]["centre"].copy()

    def yaw(self, name: str) -> float:
        return self.bodies[name]["yaw"]

    def top(self, name: str) -> float:
        return float(self.bodies[name]["centre"][2] + self.bodies[name]["size"][2] / 2)

    def bottom(self, name: str) -> float:
        return float(self.bodies[name]["centre"][2] - self.bodies[name]["size"][2] / 2)


def _body(o) -> dict:
    return {"centre": np.array(o["centre"]), "yaw": math.radians(float(o["yaw_deg"])), "size": np.array(o["size"])}


def _grasp(s: PoseState, name: str, shape: str, avoid: tuple[str, ...] = ()) -> Iterator[dict]:
    """Top-down across the object: a box across two faces, a long body across its axis, an upright
    bottle around its cap."""
    if shape == "box":
        yield from expert.grasp_from_above(s, RIGHT, name, s.yaw(name), s.position(name)[2], avoid=avoid)
    elif shape == "long":
        across = s.yaw(name) + math.pi / 2
        yield from expert.grasp_from_above(s, RIGHT, name, across, s.position(name)[2], symmetry_deg=180.0)
    else:
        yield from expert.grasp_from_above(s, RIGHT, name, 0.0, s.top(name) - 0.012)


def _place(s: PoseState, name: str, where: str, release_z: float) -> Iterator[dict]:
    """Carry the held body over ``where``, lower its centre to ``release_z``, let go, back off."""
    yield from expert.carry_over(s, RIGHT, name, s.position(where)[:2])
    yield from expert.lower_body_to(s, RIGHT, name, release_z)
    yield {"action": "gripper.open"}
    yield from expert.lift(s, RIGHT, 0.05)


def _rest(s: PoseState, name: str, on: str) -> float:
    """The height of ``name``'s centre resting on top of ``on``."""
    return s.top(on) + float(s.first[name]["size"][2]) / 2


def _press(s: PoseState, name: str) -> Iterator[dict]:
    yield from expert.to_topdown(s, RIGHT)
    yield {"action": "gripper.close"}
    p = s.position(name)
    yield from expert.move_gc(s, RIGHT, (p[0], p[1], s.top(name) + 0.05), axes="zxy")
    yield from expert.move_gc(s, RIGHT, (p[0], p[1], s.top(name) + PRESS_BELOW_TIP), axes="xyz")
    yield from expert.lift(s, RIGHT, 0.05)


def _eye(s: PoseState) -> np.ndarray:
    """The hammer's eye (where the handle meets the head): 16 mm in from the head's end of the long
    side. The family lays the hammer grip toward the arm (+x), so the head's end is the -x one."""
    b = s.bodies["hammer"]
    d = np.array([math.cos(b["yaw"]), math.sin(b["yaw"]), 0.0])
    return b["centre"] - d * (b["size"][0] / 2 - 0.016)


def _hammer(s: PoseState) -> Iterator[dict]:
    """Grip the handle 16.6 cm from the head, lift, roll the face (toward the robot) down, carry
    the face over the block's top centre and lower it onto it."""
    yaw = s.yaw("hammer")
    yield from expert.to_topdown(s, RIGHT)
    yield from expert.align_closing_axis(s, RIGHT, yaw + math.pi / 2, symmetry_deg=180.0)
    grip = _eye(s) + np.array([math.cos(yaw), math.sin(yaw), 0.0]) * 0.15
    yield from expert.move_gc(s, RIGHT, (grip[0], grip[1], grip[2] + 0.09), axes="zxy")
    yield from expert.move_gc(s, RIGHT, grip, axes="xyz")
    yield {"action": "gripper.close"}
    yield from expert.lift(s, RIGHT, 0.12)
    face = np.array([math.sin(yaw), -math.cos(yaw), 0.0])  # the handle's perpendicular toward -y
    rz = s.gripper_rotation(RIGHT)[:, 2]
    yield from expert.rotate(s, RIGHT, "rz", expert.signed_angle_deg(face, expert.DOWN, rz))
    block = s.position("block")
    yield from expert.lift(s, RIGHT, s.top("block") + 0.04 - s.bottom("hammer"))
    for _ in range(3):
        d = block[:2] - _eye(s)[:2]
        if np.max(np.abs(d)) < 0.003:
            break
        gc = s.gc(RIGHT)
        yield from expert.move_gc(s, RIGHT, (gc[0] + d[0], gc[1] + d[1], gc[2]), axes="yx")
    yield from expert.lift(s, RIGHT, s.top("block") - 0.004 - s.bottom("hammer"))


def procedure(family: str, s: PoseState) -> Iterator[dict]:
    """The fixed procedure of one single-arm family, from the stated poses."""
    grasps = {
        "grasp_single_cube": ("cube", "box"),
        "grasp_single_bottle": ("bottle", "long"),
        "grasp_single_bottle_upright": ("bottle", "upright"),
        "grasp_single_pen": ("pen", "long"),
        "grasp_pen_leaning_cube": ("pen", "long"),
    }
    if family in grasps:
        yield from _grasp(s, *grasps[family])
        yield from expert.lift(s, RIGHT, 0.12)
    elif family == "click_bell_right":
        yield from _press(s, "bell")
    elif family == "beat_block_hammer_right":
        yield from _hammer(s)
    elif family == "place_single_cube":
        yield from _grasp(s, "cube", "box")
        yield from expert.lift(s, RIGHT, 0.12)
        yield from _place(s, "cube", "target_pad", _rest(s, "cube", "target_pad") + 0.004)
    elif family == "place_cube_in_bowl":
        yield from _grasp(s, "cube", "box", avoid=("bowl",))
        yield from expert.lift(s, RIGHT, 0.12)
        yield from _place(s, "cube", "bowl", s.bottom("bowl") + 0.05)
    elif family == "place_cube_on_cube":
        yield from _grasp(s, "cube", "box", avoid=("base_cube",))
        yield from expert.lift(s, RIGHT, 0.12)
        yield from _place(s, "cube", "base_cube", _rest(s, "cube", "base_cube") + 0.003)
    elif family == "place_single_bottle_upright":
        yield from _grasp(s, "bottle", "upright")
        yield from expert.lift(s, RIGHT, 0.06)
        yield from expert.lower_body_to(s, RIGHT, "bottle", _rest(s, "bottle", "target_pad") + 0.015)
        yield from _place(s, "bottle", "target_pad", _rest(s, "bottle", "target_pad") + 0.003)


class PosetextAgent(Agent):
    privileged = False
    plays_commands = True  # the experts' helpers it drives plan paper commands: control=ee_delta is refused

    def __init__(self, name: str = "posetext"):
        self.name = name
        self.state = PoseState()
        self._steps: Iterator[dict] | None = None
        self.family = ""

    def refuses(self, task: str, arms: tuple[str, ...], seed: int, protocol: str) -> str | None:
        if len(arms) > 1:
            return f"posetext controls one arm; {task} needs two ({', '.join(arms)}): leave it out of tasks="
        return None

    def start(self, brief: Brief) -> None:
        why = self.refuses(brief.task, brief.arms, brief.seed, brief.protocol)
        if why:
            raise ModelError(why, permanent=True)
        self.family = task_class(brief.task).summary_task  # a held-out variant plays its family's procedure
        self.state, self._steps = PoseState(), None

    def act(self, obs: Observation) -> Answer:
        if obs.objects is None:  # the paper's boundary: it cannot perceive, so it gives up (0 %)
            return Stop(NO_POSES)
        self.state.read(obs)
        if self._steps is None:
            self._steps = procedure(self.family, self.state)
        try:
            decision = next(self._steps)
        except (StopIteration, KeyError) as end:  # KeyError: a body the procedure needs is not stated
            why = f"a body is not stated: {end}" if isinstance(end, KeyError) else "procedure finished"
            decision = {"stop": True, "reason": f"posetext: {why}"}
        return answer_of({**decision, "reason": decision.get("reason", "posetext")})
