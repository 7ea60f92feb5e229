"""``model=policy``: a policy server speaking the openpi websocket protocol acts as the agent
(docs/policy.md). vabench is the client (vabench.agents.models.policy_wire); every key is ``model.extra.*``.

The agent reads what every agent reads, the observation of the agent boundary (vabench.core.boundary):
its images (uint8 HxWx3, as rendered), its robot state (as the named vector of vabench.envs.state)
and the instruction. It sends them as one map (``image_keys``, ``state_key``, ``prompt_key``),
executes the reply's ``actions`` chunk one vector at a time (the first ``chunk_steps`` of it, then
asks again) and answers each observation with one of the paper's commands the vector becomes
(vabench.agents.models.policy_actions). Under ``control=ee_delta`` (vabench.envs.control) nothing is
converted: each vector of the chunk is one :class:`~vabench.core.boundary.Control` answer, one
control step at 10 Hz, its seven numbers per arm passed to the env's controller as they are. So
rows, records, replay, verify and review treat it as any agent, and it sees nothing a model does not.

A policy acts in small steps, so its episodes' default step budget is the task's times 10: it
declares :attr:`PolicyAgent.budget_scale`, the condition key's default for a policy (``budget_scale=``
sets another; the row's ``budget`` and ``budget_scale`` columns record it). Under ``control=ee_delta`` the
control mode's budget already counts control steps, and the policy's default is the paper's 1.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
from collections import deque
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from vabench.agents.chat.model import ModelConfig, ModelError
from vabench.agents.chat.protocol import InvalidAnswer
from vabench.core.boundary import Agent, Answer, Brief, Control, Observation, Usage, answer_of
from vabench.core.errors import ConfigError
from vabench.core.vocab import ACTIVE, ControlMode
from vabench.envs.state import state_vector

from .policy_actions import FRAMES, PER_ARM, ActionMapping, CommandMaker
from .policy_layouts import LAYOUTS, LIBERO, libero_control, libero_observation

if TYPE_CHECKING:  # websockets is the policy extra's: imported when a server is reached
    from .policy_wire import PolicyClient

DEFAULT_NAME = "policy"
PROBE_TIMEOUT_S = 20.0  # as the LLM endpoint probe's (vabench.run.probe)
ACTIVE_IMAGE_KEY = "observation/image"  # openpi's LIBERO example names its main camera so
MAX_FRAME_MB = 16.0  # MiB: the largest frame the client reads (model.extra.max_frame_mb); a chunk is a few KB


@dataclass(frozen=True)
class PolicyConfig:
    """``model.extra`` of ``model=policy`` (docs/policy.md has the table)."""

    url: str  # ws://host:port of the policy server
    image_keys: dict = field(
        default_factory=dict
    )  # view -> key; others: observation/image (active), observation/image_<view>
    state_key: str = "observation/state"
    prompt_key: str = "prompt"
    actions_key: str = "actions"
    chunk_steps: int | None = None  # vectors of each chunk executed before asking again (None: the whole chunk)
    position_scale: float = 1.0
    rotation_scale: float = 1.0
    rotation_frame: str = "local"
    gripper_close_at: float = 0.5
    max_frame_mb: float = MAX_FRAME_MB  # the largest reply frame read (MiB); a bigger one ends the episode as infra
    layout: str = "default"  # a named adapter config (vabench.agents.models.policy_layouts): default, libero

    @classmethod
    def of(cls, extra: dict) -> PolicyConfig:
        allowed = [f.name for f in fields(cls)]
        for key in extra:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean 'model.extra.{close[0]}'?)" if close else f"; allowed: {', '.join(allowed)}"
                raise ConfigError(f"'model.extra.{key}' is not a policy setting{hint}")
        if not extra.get("url"):
            raise ConfigError("'model.extra.url' must be set when model.id=policy (e.g. ws://localhost:8000)")
        try:
            return cls(**extra)
        except TypeError as e:
            raise ConfigError(f"'model.extra': {e}") from None

    def __post_init__(self):
        if not str(self.url).startswith(("ws://", "wss://")):
            raise ConfigError(f"'model.extra.url' must be a ws:// or wss:// URL, got {self.url!r}")
        if self.layout not in LAYOUTS:
            raise ConfigError(f"'model.extra.layout' must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        if self.rotation_frame not in FRAMES:
            raise ConfigError(
                f"'model.extra.rotation_frame' must be one of {', '.join(FRAMES)}, got {self.rotation_frame!r}"
            )
        if self.chunk_steps is not None and (not isinstance(self.chunk_steps, int) or self.chunk_steps < 1):
            raise ConfigError(f"'model.extra.chunk_steps' must be a positive integer or null, got {self.chunk_steps!r}")
        for key in ("position_scale", "rotation_scale", "max_frame_mb"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigError(f"'model.extra.{key}' must be a number > 0, got {value!r}")
        if not isinstance(self.image_keys, dict):
            raise ConfigError(f"'model.extra.image_keys' must map view names to keys, got {self.image_keys!r}")

    @property
    def mapping(self) -> ActionMapping:
        return ActionMapping(self.position_scale, self.rotation_scale, self.rotation_frame, self.gripper_close_at)

    def keys_of(self, views) -> dict[str, str]:
        """Each of ``views``' key in the server's observation map (key -> view, in their order)."""
        return {self.image_key(v, i == 0): v for i, v in enumerate(views)}

    def image_key(self, view: str, first: bool) -> str:
        default = ACTIVE_IMAGE_KEY if first and view == ACTIVE.name else f"observation/image_{view}"
        return str(self.image_keys.get(view, default))


class PolicyAgent(Agent):
    """The policy server behind the agent boundary: a connection of its own per episode (opened by
    :meth:`start`, closed with a close frame by :meth:`end`), as a server that keeps state per
    connection expects (openpi's resets on connect). Each of a worker's seats has its own agent, so
    the episodes a worker runs at once have their own connections and chunks."""

    budget_scale = (
        10.0  # its episodes' default condition key budget_scale (vabench.core.condition): it acts in small steps
    )

    def __init__(self, cfg: ModelConfig):
        if importlib.util.find_spec("websockets") is None:
            raise ConfigError("model.id=policy needs the policy extra: pip install 'vabench[policy]'")
        self.config = PolicyConfig.of(dict(cfg.extra))  # ConfigError names the key
        self.name = cfg.name or DEFAULT_NAME
        self.timeout_s, self.api_key_env = cfg.timeout_s, cfg.api_key_env
        self.client: PolicyClient | None = None
        self.maker: CommandMaker | None = None
        self.control = False  # the episode runs under control=ee_delta (set by start)
        self.chunk: deque = deque()  # vectors of the current chunk not yet executed
        self.pending: deque = deque()  # commands of the current vector not yet sent
        self.inferences = 0
        self.images: frozenset[str] | None = None  # the image keys its server reads (metadata IMAGES), or all

    def start(self, brief: Brief) -> None:
        """A new connection (the server's new session); ModelError when it cannot connect."""
        from .policy_wire import PolicyClient

        self.end()  # none is left open by an episode that ended; one left by a caller that never ended it is closed
        self.maker = CommandMaker(self.config.mapping, tuple(brief.arms))
        self.control = brief.control == ControlMode.EE_DELTA  # each vector a Control answer
        if self.config.layout == LIBERO and (not self.control or len(brief.arms) != 1):
            raise ModelError("policy: model.extra.layout=libero needs control=ee_delta and a one-arm task", True)
        self.chunk.clear()
        self.pending.clear()
        self.inferences = 0
        self.client = PolicyClient(self.config.url, self.timeout_s, self.api_key_env, self.config.max_frame_mb)
        self.images = images_read(self.client.metadata)
        why = control_mismatch(self.client.metadata, brief.control)
        if why:
            self.end()
            raise ModelError(why, True)  # the same server refuses every episode of this run

    def act(self, obs: Observation) -> Answer:
        if self.maker is None or self.client is None:
            raise ModelError("policy: no episode started")
        usage, latency = Usage(), 0.0  # a command of a vector already received: no call
        if not self.pending:
            if not self.chunk:
                actions, latency = self._infer(obs)
                self.chunk.extend(actions[: self.config.chunk_steps])
                usage = Usage(model_calls=1, provider_attempts=1)
            vector = self.chunk.popleft()
            if self.control:
                return self._control(vector, usage, latency)
            commands = self.maker.commands(vector, obs.arms)
            why = f"policy: inference {self.inferences}, vector {json.dumps([round(float(x), 5) for x in vector])}"
            self.pending.extend(
                {**c, "reason": f"{why}, command {i + 1} of {len(commands)}"} for i, c in enumerate(commands)
            )
        return answer_of(self.pending.popleft(), usage, latency)

    def reads(self, views: tuple[str, ...]) -> tuple[str, ...]:
        """The views whose image keys its server's metadata lists (``images``; ``[]``: none, a
        state-only policy), or all when it lists nothing usable. A key this episode does not offer
        is refused (permanent): the policy would run blind, and nothing else would say why."""
        if self.images is None or self.config.layout == LIBERO:  # the layout's two cameras, always
            return views
        keys = self.config.keys_of(views)
        missing = sorted(self.images - set(keys))
        if missing:
            offered = ", ".join(keys) or "none"
            raise ModelError(
                f"policy server: its metadata's {IMAGES} lists {', '.join(missing)}, which this episode does not "
                f"offer (it offers {offered}); serve the policy with another condition, or set model.extra.image_keys",
                True,
            )
        return tuple(v for key, v in keys.items() if key in self.images)

    def _control(self, vector: np.ndarray, usage: Usage, latency: float) -> Control:
        """One vector as one control step: seven numbers per arm, as the server sent them."""
        arms = self.maker.arms
        if self.config.layout == LIBERO:  # LIBERO's controller units and gripper -1..1
            vector = libero_control(vector)
        deltas = {arm: tuple(float(x) for x in vector[PER_ARM * k : PER_ARM * (k + 1)]) for k, arm in enumerate(arms)}
        why = f"policy: inference {self.inferences}, {len(self.chunk)} left of its chunk"
        return Control(deltas, why, usage, latency)

    def _observation(self, obs: Observation) -> dict:
        """The server's observation: the images as rendered, the named state vector, the instruction."""
        missing = [arm for arm in self.maker.arms if arm not in obs.arms]
        if missing:
            raise ModelError(f"policy: the observation has no robot state for the {' and '.join(missing)} arm", True)
        if self.config.layout == LIBERO:
            try:
                return libero_observation(obs, self.maker.arms[0])
            except ValueError as e:
                raise ModelError(f"policy: model.extra.layout=libero: {e}", True) from None
        pixels = {f.view: f.pixels for f in obs.images}
        out = {key: pixels[view] for key, view in self.config.keys_of(pixels).items()}
        out[self.config.state_key] = state_vector(obs.arms, self.maker.arms)
        out[self.config.prompt_key] = obs.instruction
        return out

    def _infer(self, obs: Observation) -> tuple[np.ndarray, float]:
        """The next chunk, (horizon, 7 x arms) floats, and the round trip. A failure to get a reply
        drops the connection (ModelError: infra, or permanent for a reply that is not the protocol's);
        a reply whose chunk cannot be acted on is an :class:`InvalidAnswer` (refused, asked again)."""
        try:
            reply, latency = self.client.infer(self._observation(obs))
        except ModelError:
            self.end()
            raise
        self.inferences += 1
        key = self.config.actions_key
        if key not in reply:
            got = ", ".join(map(str, reply)) or "nothing"
            raise ModelError(
                f"policy server: its reply has no '{key}' (it has {got}); set model.extra.actions_key", True
            )
        why = self._unusable(reply[key])
        if why:
            usage = Usage(model_calls=1, provider_attempts=1)
            raise InvalidAnswer(f"policy server: '{key}' {why}", usage, latency)
        actions = np.asarray(reply[key], dtype=float)
        return (actions.reshape(1, -1) if actions.ndim == 1 else actions), latency

    def _unusable(self, chunk) -> str | None:
        """Why a reply's chunk cannot be acted on (not numbers, empty, the wrong width, NaN or
        infinite), or None."""
        dim = self.maker.dim
        need = f"this task needs (horizon, {dim}) finite numbers (7 per arm: dx dy dz droll dpitch dyaw gripper)"
        try:
            actions = np.asarray(chunk, dtype=float)
        except (TypeError, ValueError):
            return f"is not an array of numbers; {need}"
        actions = actions.reshape(1, -1) if actions.ndim == 1 else actions
        if actions.ndim != 2 or actions.shape[1] != dim:
            return f"has shape {np.shape(chunk)}; {need}"
        if not len(actions):
            return f"is an empty chunk (shape {np.shape(chunk)}); {need}"
        bad = int((~np.isfinite(actions)).sum())
        if bad:
            return f"holds {bad} NaN or infinite number(s) of {actions.size}; {need}"
        return None

    def end(self) -> None:
        """The episode's connection closed with a close frame (the server ends its session)."""
        if self.client is not None:
            self.client.close()
        self.client = None

    def close(self) -> None:
        self.end()


IMAGES = "images"  # the metadata key of the observation's image keys a served policy reads (None: all)
TRAINED_ON = "trained_on"  # the metadata key of the (task -> seeds) a served checkpoint was trained on
CONTROL = "control"  # the metadata key of the interface a served checkpoint's actions are for (vabench.learn)


def images_read(metadata: dict) -> frozenset[str] | None:
    """The image keys a server's metadata says its policy reads (``images``: a list of strings), or
    None (all) when it says nothing usable: the metadata is untrusted, and all is what openpi sends."""
    keys = metadata.get(IMAGES) if isinstance(metadata, dict) else None
    if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
        return None
    return frozenset(keys)


def control_mismatch(metadata: dict, control: str) -> str | None:
    """One line when the server says its actions are for the other interface than ``control``
    (its metadata's ``control``), naming the fix; None when they agree or it does not say."""
    acts = metadata.get(CONTROL) if isinstance(metadata, dict) else None
    if not isinstance(acts, str) or acts == control:
        return None
    return (
        f"policy server: its checkpoint's actions are for control={acts}, this run is control={control}: "
        f"set control={acts}, or serve a checkpoint trained on a control={control} export"
    )


served: dict[str, dict] = {}  # url -> the metadata its server sent the last probe (for trained_overlap)


def probe(cfg: ModelConfig) -> str | None:
    """One line when the policy server cannot serve the run (the launcher's endpoint probe): nothing
    listens, an unknown host, not a websocket, a rejected key, no metadata. None: it answered (its
    metadata is kept in :data:`served`)."""
    from .policy_wire import PolicyClient

    if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        return f"model.api_key_env names {cfg.api_key_env}, which is not set in this environment; export it"
    config = PolicyConfig.of(dict(cfg.extra))
    try:
        client = PolicyClient(config.url, min(cfg.timeout_s, PROBE_TIMEOUT_S), cfg.api_key_env, config.max_frame_mb)
    except ModelError as e:
        hint = "; start it (e.g. python -m vabench.serve_policy --demo) or fix model.extra.url"
        return str(e).removeprefix("policy server: ") + ("" if e.permanent else hint)
    served[config.url] = client.metadata
    client.close()
    return None


def trained_overlap(metadata: dict, episodes) -> str | None:
    """A warning line when ``episodes`` ((task, seed) pairs) include seeds the served policy was
    trained on (its metadata's ``trained_on``: task -> seeds), or None. The metadata is the
    server's (untrusted): anything not of that shape is read as no training seeds."""
    trained = metadata.get(TRAINED_ON) if isinstance(metadata, dict) else None
    if not isinstance(trained, dict):
        return None
    seen: dict[str, list[int]] = {}
    for task, seed in episodes:
        seeds = trained.get(task)
        if isinstance(seeds, list) and seed in seeds and seed not in seen.get(task, []):
            seen.setdefault(task, []).append(int(seed))
    if not seen:
        return None
    listed = "; ".join(f"{task} {', '.join(map(str, sorted(seeds)))}" for task, seeds in sorted(seen.items()))
    count = sum(map(len, seen.values()))
    return (
        f"warning: the policy was trained on {count} of this run's episodes (its metadata's {TRAINED_ON}: "
        f"{listed}); their results measure fitting, not generalisation"
    )
