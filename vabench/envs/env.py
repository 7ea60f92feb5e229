"""The env API, which is the privilege boundary (docs/design.md).

``reset(task, seed, protocol)`` builds the scene from the seed and returns an
:class:`Observation`; ``step(action)`` dispatches one camera or robot action and returns a
:class:`StepResult`. Observations carry only what the paper lets a model see: clean RGB (one
active image, or the five fixed views in passive mode), proprioception of the controlled arms,
the step count and budget, and the executor's feedback on the previous action. Object poses,
contacts and checker state are reachable only through :meth:`VABenchEnv.privileged`.

Every call to ``step`` counts against the budget, also when the action is invalid (as in the
paper): an invalid action returns ``action_valid=False`` with its validation message as feedback
and leaves the world untouched. ``step`` always validates the decision (a dict, untrusted). An env
built for ``control=ee_delta`` (vabench.envs.control) takes control steps instead of robot commands,
and its observation adds a wrist view per controlled arm."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from vabench.core.vocab import ACTIVE, LEFT, RIGHT, ControlMode, Protocol, StepKind, protocol_named

from . import interventions, settle_cache
from .actions import (
    Action,
    ActionError,
    CameraAction,
    DualGripper,
    DualMoveWorld,
    Gripper,
    MoveWorld,
    RotateLocal,
    parse_action,
)
from .config import EnvConfig
from .control import EE_DELTA, EEDelta, parse_control, task_budget
from .observation import Observation, StepResult
from .perturb import perturb_image
from .perturb import rng as perturbation_rng
from .perturb import scene as look
from .privileged import PrivilegedState
from .sim import overlay
from .sim.camera import PASSIVE_ORDER, CameraRig, observer_pose
from .sim.controller import Controller
from .sim.embodiments import embodiment, robot_files
from .sim.executor import Executor, Outcome
from .sim.geometry import angle_between_deg
from .sim.planner import ArmPlanner
from .sim.robot import ARMS, ArmProprio
from .sim.scene import World
from .tasks import Task, make_task

STABILITY_TAIL = 200  # RoboTwin's stability check (config.SETTLE_STEPS): compare the last 200 poses with the final one
STABILITY_MAX_DEG = 3.0


@dataclass
class Stability:
    max_drift_deg: float
    worst_body: str | None

    @property
    def stable(self) -> bool:
        return self.max_drift_deg <= STABILITY_MAX_DEG


def action_seed(seed: int, robot_action: int) -> int:
    """Deterministic seed for the planner's random restarts, from the episode seed and the index
    of the robot action (camera actions do not shift it: active and passive runs plan alike)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{robot_action}".encode()).digest()[:4], "little")


class VABenchEnv:
    def __init__(self, config: EnvConfig | None = None):
        self.config = config or EnvConfig()
        body = embodiment(self.config.robot)  # ValueError names the robots
        files, pairs = robot_files(body), ((LEFT, RIGHT), (RIGHT, LEFT))
        self.planners = {arm: ArmPlanner(files, arm, other, body) for arm, other in pairs}
        self.executor = Executor(self.planners)
        self.controller = Controller(self.planners)  # control=ee_delta (vabench.envs.control)
        self.world: World | None = None
        self.task: Task | None = None
        self.camera: CameraRig | None = None
        self._state: PrivilegedState | None = None
        self.stability: Stability | None = None
        self.settled = settle_cache.SettleCache() if self.config.warm_reset else None

    # -- lifecycle -----------------------------------------------------------------------
    def reset(self, task: str | Task, seed: int, protocol: str = ACTIVE.name, budget: int | None = None) -> Observation:
        """``budget``: env steps the episode may take, a positive int (None: the task's under the env's
        control mode, vabench.envs.control.task_budget; a policy has its own)."""
        proto = protocol_named(protocol)  # ValueError names the allowed protocols
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        task = make_task(task) if isinstance(task, str) else task  # a bad name fails before anything closes
        self.close()
        try:
            self.budget = int(budget or task_budget(task, self.config.control))
            self._build(task, int(seed), proto)
        except BaseException:
            self.close()  # never leave a half-built episode behind
            raise
        return self._observe(None, None, None, "")

    def _build(self, task: Task, seed: int, protocol: Protocol) -> None:
        self.task, self.seed, self.protocol, self._protocol = task, seed, protocol.name, protocol
        start = None if self.settled is None else self._kept_start(task, seed)
        self._scene(task, seed)
        if start is None:
            self.stability = self._settle()
        else:  # the warm reset: the kept settled state instead of the settle
            settle_cache.restore(self.world, start)
            self.stability = Stability(start.drift_deg, start.worst_body)
        self._state.record_start()
        self.executor.bind(self.world, task.labels)
        self.controller.bind(self.world)
        if self.config.render:
            p = self.config.perturbation  # render state only, after the settle: the physics is untouched
            look.apply(self.world, p.kind, p.level, perturbation_rng(p, seed), task.instruction, self.controlled)
            rec, preset = self.config.recording, self.config.preset
            self.camera = CameraRig(
                self.world.scene, preset.active, self.config.hold_cameras, (rec.width, rec.height), preset.observer_size
            )
            self.camera.reset(self._gcs(), self.controlled)
        self.steps = self.robot_actions = 0
        self.done = self.success = False
        self.progress = task.checkpoints(self._state)

    def _settle(self) -> Stability:
        """Settle, then watch orientations (RoboTwin's check_stable; the screener reads it)."""
        self.world.step(self.config.settle_steps)
        dynamic = [b for b in self.world.bodies.values() if not b.static]
        tail: dict[str, list[np.ndarray]] = {b.name: [] for b in dynamic}
        for i in range(self.config.stability_window):
            self.world.step()
            if i >= self.config.stability_window - STABILITY_TAIL:
                for b in dynamic:
                    tail[b.name].append(b.matrix()[:3, :3])
        worst, drift = None, 0.0
        for b in dynamic:
            final = b.matrix()
            if not np.isfinite(final).all() or not all(np.isfinite(r).all() for r in tail[b.name]):
                return Stability(float("inf"), b.name)
            d = max((angle_between_deg(r, final[:3, :3]) for r in tail[b.name]), default=0.0)
            if d > drift:
                worst, drift = b.name, d
        return Stability(drift, worst)

    def _scene(self, task: Task, seed: int) -> None:
        """A new world with the robot (a parked arm folded away) and the task's bodies, unsettled."""
        compensate = self.config.control != ControlMode.EE_DELTA  # ee_delta: PhysX leaves the arms' gravity off
        self.world = World(render=self.config.render, robot=self.config.robot, compensate=compensate)
        self.controlled = tuple(task.arms)
        for arm in ARMS:
            if arm not in self.controlled:
                self.world.arms[arm].set_qpos(self.world.arms[arm].body.park, closed=False)
                if self.config.render:
                    _hide(self.world.arms[arm])
        task.build(self.world, np.random.default_rng(seed))
        self._state = PrivilegedState(self.world, self.controlled)

    def _kept_start(self, task: Task, seed: int) -> settle_cache.Settled:
        """The settled state kept for this scene (settle_cache). On a miss a scratch scene of the same
        construction settles first: the episode's scene is then restored on a hit and on a miss alike
        (restoring into a scene that has just settled keeps contact data a fresh one lacks)."""
        key = settle_cache.key(task, seed, self.config)
        start = self.settled.get(key)
        if start is None:
            self._scene(copy.deepcopy(task), seed)
            stability = self._settle()
            start = settle_cache.capture(self.world, stability.max_drift_deg, stability.worst_body)
            self.world.close()
            self.settled.put(key, start)
        return start

    def close(self) -> None:
        if self.world is not None:
            self.world.close()
        self.world = self.camera = self._state = None

    # -- acting --------------------------------------------------------------------------
    def step(self, action: dict) -> StepResult:
        """Validate and dispatch one decision object (see actions.parse_action)."""
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode is over (success or budget); call reset()")
        if self.camera is not None:
            self.camera.shown = None  # the world moves: the active picture is retaken (recording_view)
        self.steps += 1
        try:
            act = self._parse(action)
        except ActionError as e:
            return self._finish("<invalid>", False, False, f"invalid action: {e}", StepKind.INVALID)
        if isinstance(act, CameraAction):
            text = (
                self.camera.apply(act.name, self._gcs(), self.controlled) if self.camera else "no camera (render=False)"
            )
            return self._finish(act.label, True, True, text, StepKind.CAMERA)
        self.robot_actions += 1
        out = self._dispatch(act)
        return self._finish(act.label, True, out.planner_success, out.feedback, StepKind.ROBOT)

    def _parse(self, action) -> Action | EEDelta:
        """The typed action of a decision under the env's control mode (ActionError: invalid)."""
        if self.config.control == ControlMode.EE_DELTA:
            if isinstance(action, dict) and str(action.get("action", "")).startswith("camera."):
                return parse_action(action, self.controlled, camera=self._protocol.camera_actions)
            return parse_control(action, self.controlled)
        if isinstance(action, dict) and EE_DELTA in action:
            raise ActionError(f"'{EE_DELTA}' steps need control=ee_delta; this episode takes the paper's commands")
        return parse_action(action, self.controlled, camera=self._protocol.camera_actions)

    def expert(self) -> Iterator[dict]:
        """The task's scripted expert as protocol decisions, computed lazily from live state
        (privileged: it reads object poses; only the oracle agent and screening use it)."""
        return self.task.expert(self.privileged())

    def expert_steps(self) -> Iterator[StepResult]:
        """Run the task's scripted expert through :meth:`step`, yielding each result, until done."""
        for action in self.expert():
            result = self.step(action)
            yield result
            if result.done:
                return

    def _dispatch(self, act: Action) -> Outcome:
        ex, seed = self.executor, action_seed(self.seed, self.robot_actions)
        if isinstance(act, MoveWorld):
            return ex.move_world(act, seed)
        if isinstance(act, RotateLocal):
            return ex.rotate_local(act, seed)
        if isinstance(act, Gripper):
            return ex.gripper(act)
        if isinstance(act, DualMoveWorld):
            return ex.dual_move_world(act, seed)
        if isinstance(act, DualGripper):
            return ex.dual_gripper(act)
        if isinstance(act, EEDelta):
            return self.controller.step(act)
        raise TypeError(f"not an action: {act!r}")

    def _finish(self, label: str, valid: bool, planned: bool, feedback: str, kind: str) -> StepResult:
        if kind == StepKind.ROBOT:  # camera and invalid actions leave the physical state as it was
            self._state.update_peaks()
            self.task.update(self._state)
            self.progress = self.task.checkpoints(self._state)  # latches, so evaluate every action
            self.success = bool(self.task.success(self._state))
        self.done = self.success or self.steps >= self.budget
        obs = self._observe(label, valid, planned, feedback)
        return StepResult(
            obs, self.success, self.done, valid, planned, feedback, self.steps, self.budget - self.steps, kind
        )

    # -- observing -----------------------------------------------------------------------
    def _proprio(self, arm: str) -> ArmProprio:
        """What the agent is told of ``arm``: the paper's fields, and the finger joints under ee_delta only."""
        p = self.world.arms[arm].proprio()
        if self.config.control != ControlMode.EE_DELTA:
            return p
        return dataclasses.replace(p, fingers=self.world.arms[arm].fingers_open())

    def _gcs(self) -> dict[str, np.ndarray]:
        return {arm: self.world.arms[arm].gc() for arm in ARMS}

    def _ees(self) -> dict[str, np.ndarray]:
        """Control EE positions (the proprio's ``ee_position``): the passive observer's anchor."""
        return {arm: self.world.arms[arm].hand_matrix()[:3, 3] for arm in ARMS}

    def _observe(self, label, valid, planned, feedback) -> Observation:
        images: dict[str, np.ndarray] = {}
        if self.camera is not None:
            if self._protocol.camera_actions:
                images["active"] = self.camera.render()
            else:
                images = self.camera.passive_bundle(self._ees(), self.controlled)
                assert tuple(images) == PASSIVE_ORDER
            if self.config.control == ControlMode.EE_DELTA and self.config.wrist:
                images.update(self.camera.wrist_views({a: self.world.arms[a].hand_matrix() for a in self.controlled}))
            p = self.config.perturbation
            images = {view: perturb_image(p, rgb, self.seed, self.steps, view) for view, rgb in images.items()}
        return Observation(
            task=self.task.name,
            instruction=self.task.instruction,
            protocol=self.protocol,
            arms=self.controlled,
            images=images,
            proprio={arm: self._proprio(arm) for arm in self.controlled},
            step=self.steps,
            budget=self.budget,
            budget_left=self.budget - self.steps,
            last_action=label,
            action_valid=valid,
            planner_success=planned,
            feedback=feedback,
        )

    # -- evaluator side ------------------------------------------------------------------
    def privileged(self) -> PrivilegedState:
        """Object poses, contacts and checker inputs. For evaluators and experts only."""
        if self._state is None:
            raise RuntimeError("no episode: call reset() first")
        return self._state

    def recording_view(self, caption: str = "") -> np.ndarray | None:
        """The recording view of the current state (evaluator side: annotators and videos, never a
        model), with the debug overlay when configured; None when recording or rendering is off."""
        if self.camera is None or not self.config.recording.enabled:
            return None
        shown = self.config.control == ControlMode.EE_DELTA  # the active view, as it is: no third picture
        rgb, pose, fovy = self.camera.recording(self._ees(), self.controlled, shown)
        if not self.config.recording.overlay:
            return rgb
        arms = {}
        for arm in self.controlled:
            p = self.world.arms[arm].proprio()
            arms[arm] = {"gc": p.gc, "ee": p.ee_position, "rotation": np.array([p.rx, p.ry, p.rz]).T}
        return overlay.draw(rgb, pose, fovy, arms, caption)

    def evaluator_state(self) -> dict:
        """Object poses and lifts, grippers and finger contacts, for the episode record (diagnostic
        proxies, review). Evaluator side: never part of a model request."""
        return self.privileged().snapshot()

    def checkpoints(self) -> dict[str, bool]:
        """Subtask progress, latched after every action."""
        if self._state is None:
            raise RuntimeError("no episode: call reset() first")
        return dict(self.progress)

    def evaluate(self) -> dict:
        """The evaluator's view now (ManiSkill's ``evaluate()``): ``success``, the latched
        ``checkpoints``, and for multi-object tasks ``objects_placed`` and per-object ``placement``
        (None otherwise). Evaluator side: never part of a model request."""
        state = self.privileged()
        return {
            "success": bool(self.success),
            "checkpoints": dict(self.progress),
            "objects_placed": self.task.objects_placed(state),
            "placement": self.task.placement(state),
        }

    # -- interventions (vabench.core.interventions: each call is one declared manifest) ----------
    def object_poses(self) -> list[dict]:
        """``object_poses``: every task body's centre, yaw and size now (privileged, on purpose)."""
        return interventions.object_poses(self.privileged().world)

    def observer_views(self) -> dict[str, np.ndarray]:
        """``views_5`` under active: the five passive views of this moment, in the C.7 order."""
        return self.camera.passive_bundle(self._ees(), self.controlled)

    def depth_point(self, view: str, u: int, v: int) -> np.ndarray | None:
        """``depth_point``: the world point under pixel (u, v) of the current ``view`` image (``active``
        or a passive view name), from the depth buffer; None where no surface is seen."""
        if view == ACTIVE.name:
            with self.camera.lens(ACTIVE.name) as camera:
                return interventions.pixel_point(self.world.scene, camera, self.camera.pose, u, v)
        with self.camera.lens("observer") as camera:
            return interventions.pixel_point(
                self.world.scene, camera, observer_pose(view, self._ees(), self.controlled), u, v
            )

    # -- demonstrations -------------------------------------------------------------------
    def render(self) -> np.ndarray:
        """The active camera's view now (demonstrations film it; a model sees it in observations)."""
        if self.camera is None:
            raise RuntimeError("no camera: rendering is off, or no episode (call reset() first)")
        return self.camera.render()

    def hold(self, steps: int) -> None:
        """Run ``steps`` physics steps with the robot holding still (a demonstration's last moment)."""
        self.world.step(steps)

    def on_physics_step(self, hook: Callable[[int], None]) -> None:
        """Call ``hook(n)`` after every physics step of this episode, ``n`` counted from its reset
        (demonstrations grab frames at a fixed simulated rate). Cleared by the next reset."""
        start = self.world.step_count
        self.world.step_hooks.append(lambda step: hook(step - start))


def _hide(arm) -> None:
    """Keep a parked arm out of the images (it still collides and is still an obstacle)."""
    import sapien

    for link in arm.links.values():
        body = link.entity.find_component_by_type(sapien.render.RenderBodyComponent)
        if body is not None:
            body.disable()
