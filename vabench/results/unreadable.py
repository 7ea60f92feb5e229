"""An outcome file no reader can read is set aside by the first vabench reader that meets it.

Every outcome file is ``outcomes/**.parquet`` and everything else in a run folder has a ``_``
name, which Parquet readers skip: ``pandas.read_parquet(run_folder)`` reads the run. One corrupt
outcome file breaks that promise for every plain reader, so whichever vabench reader finds it
first (the outcome table behind analysis and the review app, ``verify``, the next driver) renames
it to ``_unreadable-<time>-<name>`` beside it, kept for inspection, and names it in a note; its
episode counts as not run until the next driver of the run runs it again. Later reads still name
it (:func:`earlier`) until that episode has a row again.

Never a file that may still be written, never a good row: the driver writes each row atomically
(a ``.``-named temp file, then a rename), so a row file that exists is whole; only a tool that
writes in place (``cp``, ``unzip``, a sync) can be caught half-way, and its file then has a recent
mtime, so a file modified in the last ``GRACE_S`` seconds is only noted. A file that changed
since it was found unreadable is left alone, and a row a concurrent driver renames over it between
the check and the rename is put back (the file set aside is checked by inode after the rename).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from vabench.results.outcomes import set_aside

PREFIX = "_unreadable-"  # outcomes.set_aside's name: _unreadable-<YYYYmmdd-HHMMSS>-<name>
GRACE_S = 10.0  # a file modified more recently may still be written in place by a copy


def is_set_aside(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1].startswith(PREFIX)


def original(rel: str) -> str:
    """The outcome file (relative to outcomes/) a set-aside file was: the time stamp dropped."""
    head, _, name = rel.rpartition("/")
    name = name[len(PREFIX) :].split("-", 2)[-1]
    return f"{head}/{name}" if head else name


def set_aside_if_still(path: Path, seen: tuple[int, int, int, int], now: float | None = None) -> Path | None:
    """Rename ``path`` aside when it is still the file found unreadable (``seen``: size, mtime,
    ctime, inode) and was last modified ``GRACE_S`` or more ago. Returns where it went, or None
    when it stays (recent, changed, gone, or a folder this reader cannot write)."""
    now = time.time() if now is None else now
    try:
        st = os.stat(path)
    except OSError:
        return None
    if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != seen or now - st.st_mtime < GRACE_S:
        return None
    try:
        target = set_aside(path)
        moved = os.stat(target)
    except OSError:
        return None
    if (moved.st_ino, moved.st_size, moved.st_mtime_ns) != (seen[3], seen[0], seen[1]):
        _put_back(target, path)  # a row landed between the check and the rename: it stays
        return None
    return target


def _put_back(moved: Path, path: Path) -> None:
    """Return a good row renamed aside by mistake, unless a newer row is there already."""
    try:
        os.link(moved, path)  # never over a newer row: a link to an existing name fails
    except FileExistsError:
        pass  # superseded, as the driver's own rename would have made it
    except OSError:  # a filesystem without hard links
        if not path.exists():
            os.replace(moved, path)
            return
    moved.unlink(missing_ok=True)


def earlier(aside: list[str], present: set[str]) -> list[tuple[str, str]]:
    """(file relative to outcomes/, note) for each file set aside before whose episode has no
    row again (``present``: the outcome files there now)."""
    out = []
    for rel in sorted(aside):
        if original(rel) not in present:
            stamp = rel.rsplit("/", 1)[-1][len(PREFIX) :][:15]
            out.append((rel, f"set aside as unreadable ({stamp})"))
    return out
