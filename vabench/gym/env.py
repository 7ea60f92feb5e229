"""A Gymnasium env over the one env, :class:`~vabench.envs.VABenchEnv`: the same scenes, physics,
executor and checker as the launcher, seeds from the verified manifests (docs/gym.md).

``split="eval"`` (the default) plays the evaluation manifests, the scenes runs are scored on;
``split="train"`` plays the training split's screened seeds, a pool disjoint from every evaluation
manifest (vabench.envs.seeds). Train with ``split="train"``, evaluate with the default.

It exposes only what an Observation holds (the env API is the privilege boundary): the protocol's
images and the named robot state as the observation; the validity, planner outcome and feedback
of the last action in ``info``, with ``is_success`` from the checker. ``reset(seed=s)`` plays
manifest seed ``s`` when the manifest holds it, and otherwise the manifest's seed number
``s % len(manifest)`` (seeds 0..19 enumerate the manifest), so every Gym seed is a verified scene;
``unverified_seeds=True`` plays any other seed as given, with a warning (under ``train``,
never an evaluation or demonstration seed). ``info["scene_seed"]`` is the seed played,
``info["split"]`` its split.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np

from vabench.core.condition import DEFAULT_RENDER, Condition, default
from vabench.core.vocab import ACTIVE, ControlMode, Split, protocol_named
from vabench.envs import EnvConfig, RecordingConfig, VABenchEnv
from vabench.envs.seeds import held_out, split_seeds
from vabench.envs.sim.embodiments import EMBODIMENTS
from vabench.envs.state import state_names, state_vector
from vabench.envs.tasks import task_class

from . import spaces as sp

NO_RECORDING = RecordingConfig(enabled=False, video=False)  # the annotators' view is evaluator side


class VABenchGymEnv(gym.Env):
    """One task as a Gymnasium env (``gymnasium.make("vabench:vabench/<Task>-v0", ...)``).

    Args:
        task: the registered task name (set by the registration).
        protocol: ``active`` (one movable camera, camera commands) or ``passive`` (five fixed views).
        robot: the embodiment (``panda``, ``xarm7``, ``ur5``); its own seed manifest.
        render: the render preset (``paper``, the default and the paper's images, ``fast``, ``small``).
        perturbation: ``none`` or ``<kind>:<level>`` (the look only; vabench.envs.perturb).
        render_mode: ``rgb_array`` (``render()`` returns the active camera's view) or None.
        unverified_seeds: play a seed outside the manifest as given (warned) instead of mapping it.
        control: ``commands`` (the paper's command table, a ``Dict`` action) or ``ee_delta`` (a ``Box``
            of 7 numbers per arm, one control step at 10 Hz: vabench.envs.control).
        wrist: under ``ee_delta``, a wrist camera's view per arm among the pixels (``wrist``, or
            ``wrist_left`` and ``wrist_right``); False leaves it out (one picture less per step).
        split: ``eval`` (the evaluation manifests, the default) or ``train`` (the training split's seeds).
        warm_reset: restore each seed's kept settled state instead of settling (vabench.envs.settle_cache:
            faster, a start of its own; the launcher's episodes use the cold reset).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(
        self,
        task: str,
        protocol: str = ACTIVE.name,
        robot: str = default("robot"),
        render: str = DEFAULT_RENDER,
        perturbation: str = default("perturbation"),
        render_mode: str | None = None,
        unverified_seeds: bool = False,
        control: str = default("control"),
        wrist: bool = True,
        split: str = Split.EVAL,
        warm_reset: bool = False,
    ):
        cls = task_class(task)  # UnknownName names the closest registered task
        proto = protocol_named(protocol)  # UnknownName names the protocols
        EMBODIMENTS.check(robot)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task, self.protocol, self.robot, self.render_mode = task, proto.name, str(robot), render_mode
        if split not in tuple(Split):
            raise ValueError(f"split must be one of {[str(s) for s in Split]}, got {split!r}")
        self.split = str(split)
        self.seeds = tuple(split_seeds(task, self.robot, self.split))
        if not self.seeds:
            raise ValueError(f"{task} has no verified seeds on {self.robot} (its manifest declares it); pick another")
        self.unverified_seeds = bool(unverified_seeds)
        look = Condition("gym", proto.name, render=render, robot=self.robot, perturbation=perturbation, control=control)
        config = EnvConfig.of(look, recording=NO_RECORDING, wrist=bool(wrist), warm_reset=bool(warm_reset))
        preset = config.preset
        self.api = VABenchEnv(config)  # the env API under the Gymnasium interface
        self.arms: tuple[str, ...] = tuple(cls.arms)
        self.commands = sp.commands(self.arms, proto.camera_actions)
        self.command_labels = sp.command_labels(self.commands)
        self.state_names = state_names(self.arms)
        self.task_description = cls.instruction  # LeRobot's env.call("task_description")
        self.control = config.control == ControlMode.EE_DELTA
        self.action_space = (
            sp.control_space(self.arms) if self.control else sp.action_space(self.arms, proto.camera_actions)
        )
        self.observation_space = sp.observation_space(preset, self.protocol, self.arms, self.control and config.wrist)
        self.scene_seed: int | None = None

    def scene_seed_for(self, seed: int | None) -> int:
        """The scene a reset plays (see the module docstring); None draws a manifest seed."""
        if seed is None:
            return self.seeds[int(self.np_random.integers(len(self.seeds)))]
        if seed in self.seeds:
            return int(seed)
        if self.unverified_seeds:
            if self.split == Split.TRAIN and seed in held_out(self.task):
                raise ValueError(f"{self.task}: seed {seed} is an evaluation or demonstration scene, not for training")
            warnings.warn(f"{self.task}: seed {seed} is not in the verified manifest; played unverified", stacklevel=3)
            return int(seed)
        return self.seeds[int(seed) % len(self.seeds)]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.scene_seed = self.scene_seed_for(seed)
        obs = self.api.reset(self.task, self.scene_seed, self.protocol)
        return self._observation(obs), self._info(obs, False)

    def step(self, action: dict):
        if action not in self.action_space:
            raise ValueError(f"the action {action!r} is not in the action space {self.action_space}")
        result = self.api.step(self.decision(action))
        success = bool(result.success)
        info = self._info(result.observation, success)
        return self._observation(result.observation), float(success), success, bool(result.done and not success), info

    def decision(self, action: dict) -> dict:
        """The protocol decision (a model's JSON, or a control step's) an action stands for."""
        if self.control:
            return sp.control_decision(action, self.arms)
        return sp.decision(action, self.commands, self.arms)

    def encode(self, decision: dict) -> dict:
        """The action of a protocol decision (e.g. a recorded model's or the expert's)."""
        return sp.encode(decision, self.commands, self.arms, self.protocol == ACTIVE.name)

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() needs render_mode='rgb_array' (gymnasium.make(..., render_mode='rgb_array'))")
            return None
        return self.api.render()

    def close(self) -> None:
        self.api.close()

    def _observation(self, obs) -> dict:
        pixels = {view: np.ascontiguousarray(rgb, dtype=np.uint8) for view, rgb in obs.images.items()}
        return {"pixels": pixels, "agent_pos": state_vector(obs.proprio, self.arms)}

    def _info(self, obs, success: bool) -> dict:
        return {
            "is_success": success,
            "scene_seed": self.scene_seed,
            "split": self.split,
            "step": obs.step,
            "budget_left": obs.budget_left,
            "last_action": obs.last_action,
            "action_valid": obs.action_valid,
            "planner_success": obs.planner_success,
            "feedback": obs.feedback,
        }
