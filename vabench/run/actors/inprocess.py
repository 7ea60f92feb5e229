"""Episodes in the driver's own process (``ray.address=none``): one worker, one episode at a time,
no Ray at all. The same small interface as :class:`vabench.run.actors.backends.RayBackend`, so the
driver, its run folder, resume and retries are the same whichever runs the episodes."""

from __future__ import annotations

import os
from concurrent.futures import Future

from vabench.run.actors.workerconfig import WorkerConfig, check_local_key, make_limiter
from vabench.run.config.run import RunConfig


def demo_root(run: RunConfig) -> str | None:
    return str(run.demo_root) if run.demo_root else None


class InProcessBackend:
    """One :class:`EpisodeWorker` in the driver's process: episodes run one at a time, inside
    :meth:`submit`. For a laptop or a debugger; there is no isolation (a segfault ends the run,
    which then resumes on rerun) and no backstop for an episode stuck in the simulator (the time
    limit still ends an episode at its next model call). Ctrl-C interrupts at once."""

    slots = 1
    catches_ctrl_c = False
    watched = False  # no backstop: an episode runs inside submit()

    def __init__(self, run: RunConfig):
        check_local_key(run)
        self.run = run
        self._worker = None
        self.limiter = make_limiter(run)

    def new_worker(self, slots: int = 1):
        if self._worker is None:
            from .worker import EpisodeWorker

            self._worker = EpisodeWorker(WorkerConfig.of(self.run, limiter=self.limiter))
        return self._worker

    def placing(self, worker) -> Future:
        return self._now(os.getpid)  # built in this process: live at once

    def lacks(self) -> str:
        return "this process"

    def runs(self) -> None:
        return None  # one worker in this process: nothing to share

    def limit_stats(self) -> dict | None:
        return self.limiter.stats() if self.limiter is not None else None

    def live(self) -> dict:
        """Usage of the episodes in flight: none whenever the driver asks (they run inside submit)."""
        return {}

    @staticmethod
    def _now(fn, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:  # collected by the driver as an infrastructure error
            future.set_exception(e)
        return future

    def submit(self, worker, episode) -> Future:
        return self._now(worker.run, episode)

    def submit_learn(self, task: str) -> Future:
        from .worker import learn

        return self._now(learn, self.run.model, task, demo_root(self.run), self.limiter, self.run.render)

    def learning_started(self) -> bool:
        return True  # it runs inside submit_learn()

    def wait(self, refs: list, timeout: float, every: bool = False) -> list:
        return [r for r in refs if r.done()]

    def get(self, ref: Future):
        return ref.result()

    def kill(self, worker) -> None:
        """The run is over (an in-process episode has finished when the driver sees it): free the env."""
        worker.close()
        self._worker = None

    release = kill

    def partial(self, worker) -> dict:
        return {}  # in this process records are written in place
