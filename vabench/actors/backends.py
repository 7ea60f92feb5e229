"""Where the driver's workers run: on Ray (one actor per env worker, on this machine or a cluster),
or in this process (``ray.address=none``: one worker, one episode at a time, no Ray at all).

Both give the driver the same small interface (start a worker, submit an episode or a summary
learning job, wait, collect, kill), so the driver, its run folder, resume and retries are the same
whichever runs the episodes. Ray is imported only by :class:`RayBackend`.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from dataclasses import asdict

from .config import RunConfig


class WorkerDied(RuntimeError):
    """The worker process ended (crash, kill -9, OOM) while it held an episode."""


class NodeCheckFailed(RuntimeError):
    """A worker's node lacks the model's key variable or the run folder, or did not answer."""


def _node_sees(var: str | None, run_dir: str) -> tuple[bool, bool]:
    """(the key variable is set, the run folder exists), as seen by a worker on its node."""
    return (not var or bool(os.environ.get(var))), os.path.isdir(run_dir)


def check_local_key(run: RunConfig) -> None:
    """Workers on this machine inherit the launcher's environment: the key must be there."""
    var = run.model.api_key_env
    if var and not os.environ.get(var):
        raise NodeCheckFailed(f"model.api_key_env names {var}, which is not set in this environment; export {var}")


def worker_args(run: RunConfig, lock: tuple[str, str] | None = None) -> tuple:
    return (
        run.camera,
        asdict(run.harness),
        asdict(run.model),
        str(run.run_dir),
        str(run.summary_root),
        run.identity,
        lock,
    )


def _demo_root(run: RunConfig) -> str | None:
    return str(run.demo_root) if run.demo_root else None


class InProcessBackend:
    """One :class:`EpisodeWorker` in the driver's process: episodes run one at a time, inside
    :meth:`submit`. For a laptop or a debugger; there is no isolation (a segfault ends the run,
    which then resumes on rerun) and no episode timeout. Ctrl-C interrupts at once."""

    slots = 1
    catches_ctrl_c = False

    def __init__(self, run: RunConfig):
        check_local_key(run)
        self.run = run
        self._worker = None

    def new_worker(self):
        if self._worker is None:
            from .worker import EpisodeWorker

            self._worker = EpisodeWorker(*worker_args(self.run))
        return self._worker

    @staticmethod
    def _now(fn, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:  # collected by the driver as an infrastructure error
            future.set_exception(e)
        return future

    def submit(self, worker, spec: dict, attempt: int) -> Future:
        return self._now(worker.run, spec, attempt)

    def submit_learn(self, task: str, learn_dir: str) -> Future:
        from .worker import learn

        return self._now(
            learn, asdict(self.run.model), task, str(self.run.summary_root), learn_dir, _demo_root(self.run)
        )

    def wait(self, refs: list, timeout: float) -> list:
        return [r for r in refs if r.done()]

    def get(self, ref: Future):
        return ref.result()

    def alive(self, worker) -> bool:
        return True

    def kill(self, worker) -> None:
        """The run is over (an in-process episode has finished when the driver sees it): free the env."""
        worker.env.close()
        self._worker = None


class RayBackend:
    """One Ray actor per env worker (``ray.env_actors``), each keeping its env across episodes.

    Ray never re-runs anything by itself (max_restarts = max_task_retries = 0): the driver decides
    what a dead worker's episode becomes, so no episode is judged twice behind its back."""

    catches_ctrl_c = True  # Ray's blocking calls may swallow a KeyboardInterrupt: the driver polls a flag

    def __init__(self, run: RunConfig, lock: tuple[str, str] | None = None):
        import ray

        self.run, self.ray, self.lock = run, ray, lock
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not ray.is_initialized():
            if run.ray.address == "local":
                check_local_key(run)  # before Ray starts: its workers inherit this environment
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private single-machine cluster
                ray.init(address="local", num_cpus=run.ray.num_cpus, include_dashboard=False, log_to_driver=False)
            else:  # never a runtime_env with the key: Ray logs runtime environments in plain text
                ray.init(address=run.ray.address, log_to_driver=False)
        self.check_nodes()
        self.slots = run.ray.env_actors

    def check_nodes(self) -> None:
        """Before any work, every alive node must see the run folder (at the same path) and, when the
        model names a key variable, have it in its workers' own environment (that of ``ray start``
        there): vabench never sends a key through Ray. Only yes or no comes back, never a value."""
        from ray.exceptions import GetTimeoutError, RayError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        var, run_dir = self.run.model.api_key_env, str(self.run.run_dir)
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        names = [f"{n.get('NodeManagerHostname')} ({n.get('NodeManagerAddress')})" for n in nodes]
        probe = self.ray.remote(_node_sees)
        refs = [
            probe.options(
                num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(var, run_dir)
            for n in nodes
        ]
        try:
            seen = self.ray.get(refs, timeout=120)
        except (GetTimeoutError, RayError) as e:
            raise NodeCheckFailed(
                f"could not check the cluster's nodes ({', '.join(names)}) within 120 s: {type(e).__name__}: "
                f"{str(e)[:300]}. Every node needs this repository and its environment (README, Scaling out)."
            ) from None
        no_dir = [name for name, (_, has_dir) in zip(names, seen, strict=True) if not has_dir]
        if no_dir:
            raise NodeCheckFailed(
                f"the run folder {run_dir} is not visible on {len(no_dir)} of {len(nodes)} node(s): "
                f"{', '.join(no_dir)}. Workers write outcomes there: put results_dir on a filesystem every node "
                f"mounts at the same path."
            )
        no_key = [name for name, (has_key, _) in zip(names, seen, strict=True) if not has_key]
        if no_key:
            raise NodeCheckFailed(
                f"model.api_key_env names {var}, which is not set for Ray's workers on {len(no_key)} of "
                f"{len(nodes)} node(s): {', '.join(no_key)}. Export {var} in the shell that runs `ray start` on "
                f"every node and restart Ray there (README, Scaling out): vabench never sends keys through "
                f"Ray, which writes runtime environments to its logs in plain text."
            )

    def new_worker(self):
        from .worker import EpisodeWorker

        options = {"num_cpus": self.run.ray.actor_cpus, "max_restarts": 0, "max_task_retries": 0}
        if self.run.ray.actor_gpus > 0 and self.gpus() > 0:
            options["num_gpus"] = self.run.ray.actor_gpus
        return self.ray.remote(EpisodeWorker).options(**options).remote(*worker_args(self.run, self.lock))

    def submit(self, worker, spec: dict, attempt: int):
        return worker.run.remote(spec, attempt)

    def submit_learn(self, task: str, learn_dir: str):
        from .worker import learn

        remote = self.ray.remote(learn).options(num_cpus=min(1.0, self.run.ray.actor_cpus))
        return remote.remote(asdict(self.run.model), task, str(self.run.summary_root), learn_dir, _demo_root(self.run))

    def wait(self, refs: list, timeout: float) -> list:
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        return ready

    def get(self, ref):
        from ray.exceptions import RayActorError

        try:
            return self.ray.get(ref)
        except RayActorError as e:
            raise WorkerDied(f"{type(e).__name__}: {str(e)[:800]}") from e

    def alive(self, worker) -> bool:
        try:
            self.ray.get(worker.pid.remote(), timeout=30)
            return True
        except Exception:
            return False

    def kill(self, worker) -> None:
        self.ray.kill(worker, no_restart=True)

    def gpus(self) -> float:
        return self.ray.cluster_resources().get("GPU", 0)


def backend_for(run: RunConfig, lock: tuple[str, str] | None = None):
    """``lock`` (path, token) of the driver's run-folder lock: Ray workers stop when it is lost."""
    return InProcessBackend(run) if run.ray.in_process else RayBackend(run, lock)
