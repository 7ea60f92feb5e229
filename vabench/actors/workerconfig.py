"""What every env worker is built with, on Ray or in this process: its arguments, its share of
the run's slots, the run's rate limiter, and the key check a worker's node must pass."""

from __future__ import annotations

import os

from vabench.agents.ratelimit import RateLimiter
from vabench.agents.registry import is_offline
from vabench.config.run import RunConfig
from vabench.runfolder.state import spent_before


class NodeCheckFailed(RuntimeError):
    """A worker's node lacks the model's key variable, or did not answer."""


def node_has(var: str | None) -> bool:
    """The key variable is set, as a worker on its node sees it (only yes or no comes back)."""
    return not var or bool(os.environ.get(var))


def check_local_key(run: RunConfig) -> None:
    """Workers on this machine inherit the launcher's environment: the key must be there."""
    var = run.model.api_key_env
    if var and not os.environ.get(var):
        raise NodeCheckFailed(f"model.api_key_env names {var}, which is not set in this environment; export {var}")


def worker_args(
    run: RunConfig,
    lock: tuple[str, str] | None = None,
    slots: int = 1,
    limiter=None,
    worker_id: str | None = None,
    board=None,
) -> tuple:
    return (
        run.render,
        run.recording,
        run.harness,
        run.model,
        str(run.run_dir),
        lock,
        slots,
        limiter,
        run.episode_timeout_s,
        worker_id,
        board,
        run.robot,
        run.perturbation,
    )


def spread(slots: int, actors: int) -> list[int]:
    """Slots per worker: as many workers as allowed first (each is a process: CPU parallelism for
    the simulator), then episodes stacked on them, as evenly as possible."""
    n = max(1, min(actors, slots))
    base, extra = divmod(slots, n)
    return [base + (i < extra) for i in range(n)]


def make_limiter(run: RunConfig) -> RateLimiter | None:
    """The run's limiter: offline agents call no provider and get none. Under ``model.max_cost_usd``
    it starts from what the run folder records as spent (a rerun counts on)."""
    return None if is_offline(run.model.model) else RateLimiter(run.model.rpm, run.model.tpm, spent=spent_before(run))
