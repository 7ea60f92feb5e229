"""Every exception vabench raises on purpose, in one tree under :class:`VabenchError`.

Two families matter to callers:

- :class:`UnknownName` (a ``ValueError``): a name no registry holds (a task, robot, model kind,
  render preset, perturbation kind, intervention, protocol, track), in one line with the choices
  and the closest one;
- :class:`RunStopped`: every reason a run stops early and stays resumable (a spending cap, the
  first episodes all refused by the provider, another driver holding the folder, a cluster that
  cannot place the work, Ctrl-C). The driver catches this family once; its message is the one
  line the user reads. A stop is never a crash: the episode code lets it through every
  ``except Exception`` (an episode a cap stops ends as interrupted, with no row).

The other classes live beside the code that raises them, each under :class:`VabenchError` and
the builtin it has always been (``ValueError`` for bad input, ``RuntimeError`` for a failure), so
``except ValueError`` keeps working. This module imports nothing from vabench.
"""

from __future__ import annotations

import difflib
import functools
import re
import sys
from collections.abc import Callable, Iterable

NOISE = re.compile(r"\x1b\[[0-9;]*m| \(pid=[^)]*\)")  # in Ray's error texts: colours, the process's ids


class VabenchError(Exception):
    """The project's base: ``except VabenchError`` catches what vabench raises on purpose."""


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one line, its type and its message's first and last lines: Ray's errors run to
    dozens of lines (the actor, its process, a traceback), and a user's terminal gets one."""
    lines = [line.strip() for line in NOISE.sub("", str(error)).splitlines() if line.strip()]
    text = " ... ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else ""
    return f"{type(error).__name__}: {text}"[:limit]


def closest(name: object, choices: Iterable[object]) -> str | None:
    """The choice a misspelt ``name`` most likely meant, if any is close."""
    found = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return found[0] if found else None


class UnknownName(VabenchError, ValueError):
    """``name`` is not one of ``choices`` (of the kind ``what``): one line with the closest one and
    the choices; ``how`` says how the user names one (``robot=NAME``)."""

    def __init__(self, what: str, name: object, choices: Iterable[object], how: str = ""):
        self.what, self.name, self.choices = what, name, sorted(map(str, choices))
        near = closest(name, self.choices)
        hint = f"; did you mean {near!r}?" if near else ""
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
        super().__init__(f"unknown {what} {shown}{hint} choices: {', '.join(self.choices)}{how and f' ({how})'}")


class ConfigError(VabenchError, ValueError):
    """A configuration mistake, found before any episode runs; the message names the key."""


class BadFile(VabenchError, ValueError):
    """A file or run folder the user named is there but is not what vabench reads (corrupt, another
    format, a folder without its parts); the message names the path and what to do."""


class NotFound(VabenchError, FileNotFoundError):
    """A file or folder the user named (or a run needs) does not exist; the message names it."""


class PathTaken(VabenchError, FileExistsError):
    """An output path the user named already holds something vabench will not overwrite."""


class CannotListen(VabenchError, OSError):
    """A server command cannot listen where it was told (an unknown address, a port in use)."""


class ServerMisbehaved(VabenchError, RuntimeError):
    """A server (a model provider, a policy server) replied with something the protocol does not allow."""


REFUSED = 2  # the exit status of a command that refuses its input with one line (vabench.launch.exits)


def command(prog: str) -> Callable:
    """Decorate a command's ``main(argv)``: a :class:`VabenchError` it lets out becomes one line on
    stderr, ``prog: message``, and the exit status :data:`REFUSED`; any other exception stays a
    traceback (a bug). Every ``python -m vabench...`` command goes through this one helper."""

    def wrap(main: Callable) -> Callable:
        @functools.wraps(main)
        def run(argv: list[str] | None = None):
            try:
                return main(argv)
            except VabenchError as e:
                print(f"{prog}: {flat(e)}", file=sys.stderr)
                return REFUSED

        return run

    return wrap


def flat(error: BaseException) -> str:
    """``error``'s message on one line (a message spanning lines is joined with "; ")."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


class RunStopped(VabenchError):
    """The run stopped early; finished episodes are saved and a rerun of the same run_id resumes.
    :meth:`line` is the one line the launcher prints."""

    headline = "stopped"  # what the line starts with
    resume = "rerun with run_id={run_id} to resume"  # how to go on ("" where a rerun is not the fix)
    exit_status = REFUSED  # the launcher's exit status for this stop (vabench.launch)

    def line(self, run_id: str) -> str:
        """``<headline>: <why>; <how to resume>``."""
        head = f"{self.headline}: " if self.headline else ""
        tail = f"; {self.resume.format(run_id=run_id)}" if self.resume else ""
        return f"{head}{self}{tail}"


class CostCapReached(RunStopped):
    """A spending cap (``limit``: a :class:`~vabench.core.vocab.CostLimit`, the key that sets it) is
    reached: no request is sent past it. Raised where a request would leave (an episode's
    dialogue, the run's limiter) and, by the driver, for the run."""

    resume = "rerun with run_id={run_id} and a higher limit to resume"

    def __init__(self, limit: str, spent: float, cap: float, why: str | None = None):
        self.limit, self.spent, self.cap = limit, spent, cap
        super().__init__(why or f"{limit} = {cap:g} reached (${spent:.4f} spent); raise it to go on")


class RunAborted(RunStopped):
    """The first episodes all hit a permanent provider error (bad key, unknown model, ...)."""

    headline = "run stopped: the first episodes all failed with a permanent provider error"


class RunLocked(RunStopped):
    """Another live driver holds the run folder (or took it over from this one)."""

    headline, resume = "", ""  # the message says which folder; waiting for the other driver is the fix


class SeatLeft(RunStopped):
    """The outside party playing an episode through a seat (an MCP session, a person) left before
    it ended: the episode is interrupted, with no row, and the run's next seat plays it again."""

    headline = "seat given up"


class ClusterStarved(RunStopped):
    """No worker of the run could be placed within ``ray.starve_timeout_s``: the run stops as
    interrupted and resumes on rerun."""

    headline = "interrupted: the cluster cannot place this run's work"


class ClusterTooSmall(RunStopped):
    """No node of the cluster can ever hold one worker (it asks for more CPUs or GPUs than the
    largest node has): Ray would keep it pending for good, so the run stops before any work,
    saying what the cluster lacks."""

    headline = "stopped: no node of the cluster can hold a worker"
    resume = "rerun with run_id={run_id} once one fits"


class SummaryUnavailable(RunStopped):
    """A summary the run's episodes need cannot be had (a shared or expert one missing or invalid)."""

    headline, resume = "summary", ""


class Interrupted(RunStopped):
    """Ctrl-C: the run stopped at once; what finished is saved."""

    headline = "interrupted"
    exit_status = 130
