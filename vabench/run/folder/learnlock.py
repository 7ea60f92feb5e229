"""One learner per summary across drivers: the jobs of a parallel sweep (``+study=paper``) that
need the same (model, base task) summary learn it once, and the others reuse it.

A driver about to learn a missing summary first takes a lock beside it in the shared store
(``<store>/<model>/_<task>.learning/``, the run lock's kind: a dead driver's lock is taken over).
Where another live driver holds it, this driver waits for that learning to end, then reuses the
summary, or learns it itself if none came (the other driver died, or its learning failed).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vabench.agents.summaries.demo_tools import summary_task
from vabench.agents.summaries.summary_store import SummaryStore
from vabench.run.folder.lock import RunLock, RunLocked

POLL_S = 2.0


def _lock(store: SummaryStore, model: str, task: str, log) -> RunLock:
    return RunLock(store.path(model, task).parent / f"_{summary_task(task)}.learning", log)


def learn_once(
    store: SummaryStore,
    model: str,
    missing: list[str],
    learn: Callable[[list[str]], dict[str, str]],
    hold: Callable[[], None],
    log=print,
) -> dict[str, str]:
    """Learn each of ``missing`` unless another driver is learning it (then wait and reuse it).
    ``learn(tasks)`` learns and stores, returning {task: infra error} for those that failed;
    ``hold()`` raises when this driver has lost its run folder. Returns the failures."""
    failed: dict[str, str] = {}
    left, told = list(missing), False
    while left:
        mine, theirs = {}, []
        for task in left:
            if store.has(model, task):
                continue  # another driver stored it meanwhile
            lock = _lock(store, model, task, lambda *_: None)
            try:
                lock.acquire()
                mine[task] = lock
            except RunLocked:
                theirs.append(task)
        try:
            if mine:
                failed.update(learn(sorted(mine)))
        finally:
            for lock in mine.values():
                lock.release()
        if theirs and not told:
            log(f"waiting for another driver learning summaries of: {', '.join(theirs)} (they are then reused)")
            told = True
        left = theirs
        if left and not mine:
            hold()
            time.sleep(POLL_S)  # poll the other driver's lock and the store
    return failed
