"""The launcher's exit status, declared once (docs/running.md, "How a run ends")."""

from __future__ import annotations

import sys
from enum import IntEnum

from vabench.core.errors import REFUSED


class Exit(IntEnum):
    JUDGED = 0  # every episode of every job has a judged row
    CRASH = 1  # an unexpected error (Python's own status for a traceback)
    REFUSED = REFUSED  # refused before any work, or stopped, with one line saying why
    UNJUDGED = 3  # the run ended, but some episodes are infra_error rows (rerun the same run_id)
    INTERRUPTED = 130  # Ctrl-C (or a signal): the run stopped and resumes on the next launch


def leave(code: Exit, message: str | None = None) -> None:
    """Print ``message`` (one line) to stderr and exit with ``code``."""
    if message:
        print(message, file=sys.stderr)
    raise SystemExit(int(code))
