"""What every env worker is built with, on Ray or in this process (:class:`WorkerConfig`), its
share of the run's slots, the run's rate limiter, and the key check a worker's node must pass."""

from __future__ import annotations

import os
from dataclasses import dataclass

from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.model import ModelConfig
from vabench.agents.models.keybudget import budget_for
from vabench.agents.models.kinds import is_offline
from vabench.agents.models.ratelimit import RateLimiter
from vabench.core.errors import RunStopped
from vabench.envs import RecordingConfig
from vabench.run.config.run import RunConfig
from vabench.run.folder.state import spent_before


class NodeCheckFailed(RunStopped):
    """A worker's node lacks the model's key variable, or did not answer: the run cannot start."""

    headline, resume = "", ""  # the message names the variable and the node


def node_has(var: str | None) -> bool:
    """The key variable is set, as a worker on its node sees it (only yes or no comes back)."""
    return not var or bool(os.environ.get(var))


def check_local_key(run: RunConfig) -> None:
    """Workers on this machine inherit the launcher's environment: the key must be there."""
    var = run.model.api_key_env
    if var and not os.environ.get(var):
        raise NodeCheckFailed(f"model.api_key_env names {var}, which is not set in this environment; export {var}")


@dataclass(frozen=True)
class WorkerConfig:
    """One env worker's settings. What each episode is played under (its condition) comes with the
    episode: the worker builds an env for each condition look it meets."""

    model: ModelConfig
    harness: HarnessConfig
    recording: RecordingConfig
    run_dir: str
    lock: tuple[str, str] | None = None  # the driver's run-folder lock (path, token); None: in the driver's process
    slots: int = 1  # episodes it runs at once (threads)
    timeout_s: float | None = None  # an episode working this long (limit waits excluded) ends as infra
    worker_id: str | None = None  # its scratch folder and progress counter
    limiter: object = None  # the run's shared rate limiter (acquire/settle/pause/charge/spent), or None
    board: object = None  # the run's progress board (vabench.run.actors.backstop), or None

    @classmethod
    def of(cls, run: RunConfig, **place) -> WorkerConfig:
        """The worker config of ``run``; ``place``: lock, slots, worker_id, limiter, board."""
        settings = {"model": run.model, "harness": run.harness, "recording": run.recording}
        return cls(**settings, run_dir=str(run.run_dir), timeout_s=run.options.episode_timeout_s, **place)


def spread(slots: int, actors: int) -> list[int]:
    """Slots per worker: as many workers as allowed first (each is a process: CPU parallelism for
    the simulator), then episodes stacked on them, as evenly as possible."""
    n = max(1, min(actors, slots))
    base, extra = divmod(slots, n)
    return [base + (i < extra) for i in range(n)]


def limiter_args(run: RunConfig) -> tuple[tuple, dict]:
    """(args, kwargs) of the run's :class:`RateLimiter`: its limits, drawn from the key's shared
    budget (``model.share_limits``); under ``model.max_cost_usd`` it starts from what the run folder
    records as spent (a rerun counts on): the spend is the run's own."""
    return (run.model.rpm, run.model.tpm), {"spent": spent_before(run), "shared": budget_for(run.model)}


def make_limiter(run: RunConfig) -> RateLimiter | None:
    """The run's limiter in this process: offline agents call no provider and get none."""
    if is_offline(run.model.id):
        return None
    args, kwargs = limiter_args(run)
    return RateLimiter(*args, **kwargs)
