"""The run folder as the launcher makes it: checked for writing before Hydra creates it (a results
folder that cannot be written is one line, not a traceback), and removed again, with every empty
folder the launch made above it, when the launch is refused or only plans: such a launch leaves
nothing behind."""

from __future__ import annotations

import uuid
from pathlib import Path

from omegaconf import OmegaConf

from vabench.launch.exits import Exit, leave

SWEEP_FILE = "multirun.yaml"  # what Hydra writes into a sweep folder; Parquet readers fail on it
_created: dict[Path, Path | None] = {}  # run folder (absolute) -> the first folder of its path not there before


def run_dir_of(results_dir: str, run_id: str) -> str:
    """Hydra's ``hydra.run.dir`` / ``hydra.sweep.dir`` resolver: ``results_dir/run_id``, once it is
    known that the folder can be created. Remembers what did not exist, for :func:`discard`, by
    absolute path (Hydra names the job's folder absolutely; ``results_dir`` may be relative)."""
    given = Path(str(results_dir)) / str(run_id)
    path = given.absolute()
    if path not in _created:
        first_missing = None
        for folder in [path, *path.parents]:
            if folder.exists():
                break
            first_missing = folder
        problem = cannot_write(folder)
        if problem:
            leave(Exit.REFUSED, f"results_dir={results_dir}: {problem}; choose another results_dir=")
        _created[path] = first_missing
    return str(given)


OmegaConf.register_new_resolver("vabench_run_dir", run_dir_of, replace=True)


def cannot_write(folder: Path) -> str | None:
    """Why nothing can be created inside ``folder`` (the nearest existing one), or None. A real
    try, removed at once: permission bits say nothing to root or on read-only mounts."""
    if not folder.is_dir():
        return f"{folder} is not a folder"
    probe = folder / f".vabench-write-check-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return f"cannot write in {folder} ({e.strerror or type(e).__name__})"
    return None


def discard(run_dir: Path) -> None:
    """Remove the empty folders this launch made for ``run_dir``, up to the first one that did not
    exist before it (never a folder with a file in it). Hydra's note of a sweep it began goes too,
    once no job folder is left beside it."""
    run_dir = Path(run_dir).absolute()
    base = next((k for k in _created if k == run_dir or k in run_dir.parents), None)
    if base is None:
        return
    last = _created[base] or run_dir  # a sweep's job folder sits in results_dir/run_id
    for folder in [run_dir, *run_dir.parents]:
        if folder == base and _created[base] is None:
            return  # it was there before the launch
        notes = list(folder.iterdir()) if folder == base and folder.is_dir() else []
        if notes and {p.name for p in notes} <= {SWEEP_FILE, f"_{SWEEP_FILE}"}:
            for note in notes:  # Hydra's note of a sweep this launch began and refused
                note.unlink()
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        if folder == last:
            return
