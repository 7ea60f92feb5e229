"""Ray's own lines from the driver's process go to Ray's session log folder, beside the raylets'
and workers' logs, never to the launcher's terminal (a busy node's start-up failures once printed
90 lines of them there). Two kinds: its logger's (``ray.init`` says it started a local instance),
and the errors raylets push to the driver, which Ray prints to stdout from a thread of its own
(``print_to_stdstream``, looked up at each call: replaced here). The workers' output already goes
to that folder (``log_to_driver=False``). Ray itself is imported by :mod:`vabench.run.actors.backends`,
which hands its worker module over.
"""

from __future__ import annotations

import logging
import logging.handlers
import tempfile
from pathlib import Path

RAY_LOG = "vabench-driver.log"  # in Ray's session log folder
FORMAT = "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s"  # Ray's own


def hold() -> logging.handlers.MemoryHandler:
    """Before Ray starts: its logger's lines are held until :func:`to_log_folder` knows the folder."""
    held = logging.handlers.MemoryHandler(capacity=10_000, flushLevel=logging.CRITICAL + 1)
    ray_logger = logging.getLogger("ray")
    for replaced in ray_logger.handlers:  # Ray's own (to stderr), or an earlier run's file
        replaced.close()
    ray_logger.handlers[:] = [held]
    ray_logger.propagate = False
    return held


def to_log_folder(held: logging.handlers.MemoryHandler, ray_worker) -> Path:
    """Once Ray runs (``ray_worker``: its ``ray._private.worker``): the held lines and all later
    ones go to :data:`RAY_LOG` in its log folder (returned)."""
    node = getattr(ray_worker, "_global_node", None)
    folder = Path(node.get_logs_dir_path()) if node is not None else Path(tempfile.gettempdir())
    to_file = logging.FileHandler(folder / RAY_LOG, encoding="utf-8")
    to_file.setFormatter(logging.Formatter(FORMAT))
    held.setTarget(to_file)
    held.flush()
    ray_logger = logging.getLogger("ray")
    for replaced in ray_logger.handlers:
        replaced.close()
    ray_logger.handlers[:] = [to_file]
    ray_logger.propagate = False

    def pushed(data: dict, ignore_prefix: bool = False) -> None:
        for line in data.get("lines") or []:
            ray_logger.warning("(%s) %s", data.get("pid", "ray"), line)

    ray_worker.print_to_stdstream = pushed
    return folder / RAY_LOG
