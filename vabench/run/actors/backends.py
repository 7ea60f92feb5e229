"""Where the driver's workers run: on Ray (one threaded actor per env worker, each hosting up to
``ray.episodes_per_actor`` episodes at once, on this machine or a cluster), or in this process
(``ray.address=none``: :class:`vabench.run.actors.inprocess.InProcessBackend`, no Ray at all).

Both give the driver the same small interface (start workers, submit an episode or a summary
learning job, wait, collect, fetch partial records, kill, release at the end), so the driver, its
run folder, resume and retries are the same whichever runs the episodes. Both share one rate limiter
per run among all episodes of the model (``model.rpm``/``model.tpm``): on Ray a small actor on the
head node, which every worker on every node asks before each request; its slots come from the key's
budget file there (vabench.agents.models.keybudget), which every run of the cluster shares, and so do
launchers with a private Ray or none on that machine. Ray is imported only by :class:`RayBackend`
and :class:`RemoteLimiter`.
"""

from __future__ import annotations

import os
import uuid

from vabench.agents.models.kinds import is_offline
from vabench.agents.models.ratelimit import RateLimiter
from vabench.core.errors import ClusterTooSmall, VabenchError, one_line
from vabench.run.actors.workerconfig import NodeCheckFailed, WorkerConfig, check_local_key, limiter_args, node_has
from vabench.run.config.run import RunConfig

from . import raylines
from .backstop import ProgressBoard
from .inprocess import InProcessBackend, demo_root

HEAD = "node:__internal_head__"  # Ray's resource of the head node: the limiter asks a sliver of it
CONTROL = "control"  # a worker's concurrency group for pings and checks: answered while all its slots are busy
LEARN_KEY = "learning"  # the progress board's entry a started summary learning sets
ASK_LIMITER_S = 60.0  # the limiter answers at once (callers sleep, not it): past this the call goes on without it
ASK_S = 10.0  # how long the driver waits for a dying worker's partial records, or an idle one's goodbye


class WorkerDied(VabenchError, RuntimeError):
    """The worker process ended (crash, kill -9, OOM) while it held an episode."""


class RemoteLimiter:
    """A worker's view of the run's limiter actor: asks it for a slot (one round trip, ~1 ms) and
    tells it real usage and provider pauses without waiting."""

    def __init__(self, actor):
        self.actor = actor

    def acquire(self, tokens: int) -> float:
        import ray

        return ray.get(self.actor.acquire.remote(tokens), timeout=ASK_LIMITER_S)

    def settle(self, reserved: int, used: int) -> None:
        self.actor.settle.remote(reserved, used)

    def pause(self, seconds: float) -> None:
        self.actor.pause.remote(seconds)

    def charge(self, cost_usd: float) -> None:
        self.actor.charge.remote(cost_usd)

    def spent(self) -> float:
        import ray

        return ray.get(self.actor.spent.remote(), timeout=ASK_LIMITER_S)


class RayBackend:
    """Up to ``ray.env_actors`` threaded Ray actors, each hosting up to ``ray.episodes_per_actor``
    episodes at once on envs it keeps across episodes.

    Ray never re-runs anything by itself (max_restarts = max_task_retries = 0): the driver decides
    what a dead worker's episodes become, so no episode is judged twice behind its back."""

    catches_ctrl_c = True  # Ray's blocking calls may swallow a KeyboardInterrupt: the driver polls a flag
    watched = True  # the driver's backstop watches the workers (vabench.run.actors.backstop)

    def __init__(self, run: RunConfig, lock: tuple[str, str] | None = None):
        import ray

        self.run, self.ray, self.lock = run, ray, lock
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        held = raylines.hold()
        if not ray.is_initialized():
            if run.ray.address == "local":
                check_local_key(run)  # before Ray starts: its workers inherit this environment
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private single-machine cluster
                ray.init(address="local", num_cpus=run.ray.num_cpus, include_dashboard=False, log_to_driver=False)
            else:  # never a runtime_env with the key: Ray logs runtime environments in plain text
                ray.init(address=run.ray.address, log_to_driver=False)
        import ray._private.worker as ray_worker

        raylines.to_log_folder(held, ray_worker)
        self.check_nodes()
        self.check_fits()
        self.slots = run.ray.env_actors * run.ray.episodes_per_actor
        self._ids: dict[int, str] = {}  # id(worker) -> its worker id (scratch folder, progress counter)
        self._prefix, self._made = uuid.uuid4().hex[:8], 0
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # the run's small actors are owned by the driver: they end with it. The board lives on the driver's
        # node; the limiter on the head node, where every run of the cluster shares the key's budget file
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        small = {"num_cpus": 0, "max_restarts": 0}
        self.board = ray.remote(ProgressBoard).options(**small, scheduling_strategy=here).remote()
        self.limiter = None
        if not is_offline(run.model.id):
            args, kwargs = limiter_args(run)
            self.limiter = ray.remote(RateLimiter).options(**small, resources={HEAD: 0.001}).remote(*args, **kwargs)

    def check_nodes(self) -> None:
        """Before any work, when the model names a key variable, every alive node must have it in its
        workers' own environment (that of ``ray start`` there): vabench never sends a key through Ray.
        Only yes or no comes back, never a value. Nodes need not see the run folder: results travel
        back to the driver."""
        from ray.exceptions import GetTimeoutError, RayError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        var = self.run.model.api_key_env
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        names = [f"{n.get('NodeManagerHostname')} ({n.get('NodeManagerAddress')})" for n in nodes]
        probe = self.ray.remote(node_has)
        refs = [
            probe.options(
                num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(var)
            for n in nodes
        ]
        try:
            seen = self.ray.get(refs, timeout=120)
        except (GetTimeoutError, RayError) as e:
            raise NodeCheckFailed(
                f"could not check the cluster's nodes ({', '.join(names)}) within 120 s: {type(e).__name__}: "
                f"{str(e)[:300]}. Every node needs this repository and its environment (docs/cluster.md)."
            ) from None
        no_key = [name for name, has_key in zip(names, seen, strict=True) if not has_key]
        if no_key:
            raise NodeCheckFailed(
                f"model.api_key_env names {var}, which is not set for Ray's workers on {len(no_key)} of "
                f"{len(nodes)} node(s): {', '.join(no_key)}. Export {var} in the shell that runs `ray start` on "
                f"every node and restart Ray there (docs/cluster.md): vabench never sends keys through "
                f"Ray, which writes runtime environments to its logs in plain text."
            )

    def check_fits(self) -> None:
        """A worker must fit on one node: one that no alive node can ever hold would stay pending for
        good, so the run stops before any work, in one line saying what the cluster lacks."""
        need = {"CPU": self.run.ray.actor_cpus}
        if self.run.ray.actor_gpus > 0 and self.gpus() > 0:
            need["GPU"] = self.run.ray.actor_gpus
        nodes = [n.get("Resources") or {} for n in self.ray.nodes() if n.get("Alive")]
        if any(all(has.get(k, 0) >= v for k, v in need.items()) for has in nodes):
            return
        keys = {"CPU": "ray.actor_cpus", "GPU": "ray.actor_gpus"}
        asked = " and ".join(f"{keys[k]}={v:g} {k}" for k, v in need.items())
        most = " and ".join(f"{max((has.get(k, 0) for has in nodes), default=0):g} {k}" for k in need)
        more = " or raise ray.num_cpus" if self.run.ray.address == "local" else ", or add a larger node"
        raise ClusterTooSmall(
            f"each worker asks for {asked}, but the largest of the cluster's {len(nodes)} node(s) has {most}; "
            f"lower {' / '.join(keys[k] for k in need)}{more}"
        )

    def new_worker(self, slots: int = 1):
        from .worker import EpisodeWorker

        options = {
            "num_cpus": self.run.ray.actor_cpus,
            "max_restarts": 0,
            "max_task_retries": 0,
            "max_concurrency": slots,  # the default group: one thread per episode slot
        }
        if self.run.ray.actor_gpus > 0 and self.gpus() > 0:
            options["num_gpus"] = self.run.ray.actor_gpus
        limiter = RemoteLimiter(self.limiter) if self.limiter is not None else None
        self._made += 1
        wid = f"{self._prefix}-{self._made}"
        config = WorkerConfig.of(
            self.run, lock=self.lock, slots=slots, limiter=limiter, worker_id=wid, board=self.board
        )
        worker = self.ray.remote(concurrency_groups={CONTROL: 1})(EpisodeWorker).options(**options).remote(config)
        self._ids[id(worker)] = wid
        return worker

    def placing(self, worker):
        """Ready once Ray has placed the worker and it has started (its constructor ran)."""
        return worker.pid.options(concurrency_group=CONTROL).remote()

    def worker_id(self, worker) -> str:
        return self._ids.get(id(worker), "")

    def lacks(self) -> str:
        """What the cluster has in use, e.g. "2.0/2.0 CPU in use" (and GPUs, when workers ask for them)."""
        try:
            total, free = self.ray.cluster_resources(), self.ray.available_resources()
        except Exception as e:  # a message only
            return f"cluster resources unknown ({type(e).__name__})"
        kinds = ["CPU"] + (["GPU"] if self.run.ray.actor_gpus > 0 else [])
        used = [f"{total.get(k, 0) - free.get(k, 0):.1f}/{total.get(k, 0):.1f} {k} in use" for k in kinds]
        return ", ".join(used) + f"; each worker needs ray.actor_cpus={self.run.ray.actor_cpus:g} CPU"

    def limit_stats(self) -> dict | None:
        if self.limiter is None:
            return None
        try:
            return self.ray.get(self.limiter.stats.remote(), timeout=2.0)
        except Exception:  # progress display only: never hold the driver up
            return None

    def live(self) -> dict | None:
        """Usage so far of the episodes running on the workers, by record place, as the progress
        board last heard (None: no answer)."""
        try:
            return self.ray.get(self.board.live.remote(), timeout=2.0)
        except Exception:  # progress display only: never hold the driver up
            return None

    def runs(self) -> dict[str, tuple[int, int]] | None:
        """Env workers on the whole cluster by run (Ray job): {job: (live, pending)}, this run's
        under ``"self"``; None where Ray's actor table cannot be read (the pool then skips sharing)."""
        try:
            from ray._private import state

            table = state.actors()
            mine = self.ray.get_runtime_context().get_job_id()
        except Exception:
            return None
        out: dict[str, list[int]] = {}
        for actor in table.values():
            if actor.get("ActorClassName") != "EpisodeWorker":
                continue
            at = {"ALIVE": 0, "PENDING_CREATION": 1, "DEPENDENCIES_UNREADY": 1}.get(actor.get("State"))
            if at is not None:
                job = "self" if actor.get("JobID") == mine else str(actor.get("JobID"))
                out.setdefault(job, [0, 0])[at] += 1
        return {job: (live, pending) for job, (live, pending) in out.items()}

    def capacity(self) -> int:
        """Env workers the whole cluster holds at ``ray.actor_cpus`` each."""
        try:
            return max(1, int(self.ray.cluster_resources().get("CPU", 0) // self.run.ray.actor_cpus))
        except Exception:
            return 1

    def ask(self, worker, limit_s: float):
        """A check, answered whenever the worker can: its episodes inside one simulator call for over ``limit_s``."""
        return worker.stuck.options(concurrency_group=CONTROL).remote(limit_s)

    def read_board(self):
        return self.board.read.remote()

    def submit(self, worker, episode):
        return worker.run.remote(episode)

    def submit_learn(self, task: str):
        from .worker import learn

        run = self.run
        limiter = RemoteLimiter(self.limiter) if self.limiter is not None else None
        remote = self.ray.remote(learn).options(num_cpus=min(1.0, run.ray.actor_cpus))
        return remote.remote(run.model, task, demo_root(run), limiter, run.render, self.board, LEARN_KEY)

    def learning_started(self) -> bool:
        """Some learning of this run has started (Ray placed it), as the progress board says."""
        try:
            return LEARN_KEY in self.ray.get(self.board.read.remote(), timeout=ASK_S)
        except Exception:  # the board is the driver's own actor: an unanswered read is no evidence either way
            return True

    def wait(self, refs: list, timeout: float, every: bool = False) -> list:
        """The first ready ref within ``timeout`` (``every``: all those ready by then)."""
        if not refs:
            return []
        ready, _ = self.ray.wait(refs, num_returns=len(refs) if every else 1, timeout=timeout)
        return ready

    def get(self, ref):
        from ray.exceptions import RayActorError

        try:
            return self.ray.get(ref)
        except RayActorError as e:
            raise WorkerDied(one_line(e, 800)) from e

    def kill(self, worker) -> None:
        self.ray.kill(worker, no_restart=True)

    def partial(self, worker) -> dict[str, dict[str, bytes]]:
        """The records so far of a worker's running episodes kept in its node's scratch ({} if it
        does not answer within :data:`ASK_S`)."""
        try:
            return self.ray.get(worker.partial.options(concurrency_group=CONTROL).remote(), timeout=ASK_S)
        except Exception:
            return {}

    def release(self, worker) -> None:
        """An idle worker at the end of a run: it frees its scenes and scratch folder, then ends."""
        try:
            self.ray.get(worker.close.options(concurrency_group=CONTROL).remote(), timeout=ASK_S)
        except Exception:  # dead or hung: killing it is all that is left; a later worker clears its scratch
            pass
        self.kill(worker)

    def gpus(self) -> float:
        return self.ray.cluster_resources().get("GPU", 0)


def shut_down() -> None:
    """End this process's Ray (the local instance a launch started stops with it), if it began one."""
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def backend_for(run: RunConfig, lock: tuple[str, str] | None = None):
    """``lock`` (path, token) of the driver's run-folder lock: Ray workers stop when it is lost."""
    return InProcessBackend(run) if run.ray.in_process else RayBackend(run, lock)
