"""The run folder's consolidated outcome table, ``<run>/_outcomes.parquet``: every episode file's
row in one file, so a 14,000-episode run opens in a fraction of a second instead of a minute.

The episode files under ``<run>/outcomes/`` stay the truth (written atomically, one per episode,
:func:`vabench.results.outcomes.write_row`); the table is a cache of them that can never silently disagree:

- it holds, beside each row, its file's manifest entry: the path, size, mtime, ctime and inode;
- every read stats the episode files (no file is opened) and compares: a file added, removed,
  replaced or edited in place by hand has another size, mtime, ctime or inode, so its row is read
  again from the file, dropped, or added, and the table is rewritten. ctime is set by the kernel on
  every change (content, rename, ``touch``) and no user call can set it back, so even an edit that
  keeps the size and restores the mtime is seen;
- a file that cannot be read is never in the table: the read reports it by name
  (:class:`UnreadableOutcomes`, or :attr:`Loaded.unreadable` for callers that show a note), and a
  read that may write sets it aside (:mod:`vabench.results.unreadable`: :attr:`Loaded.set_aside`), so
  ``pandas.read_parquet(run_folder)`` reads the run again;
- the table is replaced atomically (temp file, rename), so a reader sees the old or the new one.

Its name starts with ``_``, which Parquet dataset discovery (``pandas.read_parquet(run_folder)``,
``pyarrow.dataset``) skips like the run info and ``_records/`` (:mod:`vabench.results.layout`): a
reader that ignores the table still sees each episode row exactly once. The driver calls
:func:`landed` after each row it writes; the table is rewritten every so often (amortised: a
growing share of the rows), and any reader brings it up to date, so a run folder never needs a
rebuild command.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from vabench.core.errors import VabenchError
from vabench.results.layout import OUTCOME_TABLE as TABLE_NAME
from vabench.results.layout import OUTCOMES
from vabench.results.outcomes import _NULLABLE, SCHEMA, SCHEMA_VERSION, why_unreadable
from vabench.results.unreadable import earlier, is_set_aside, set_aside_if_still

CHUNK = 1000  # episode files per scan when many are read at once
FILE = "_file"  # the row's episode file, relative to outcomes/
STAT = ("_size", "_mtime_ns", "_ctime_ns", "_ino")
TABLE_SCHEMA = SCHEMA.append(pa.field(FILE, pa.string()))
for _name in STAT:
    TABLE_SCHEMA = TABLE_SCHEMA.append(pa.field(_name, pa.int64()))
FORMAT = f"vabench-outcome-table-1/schema-{SCHEMA_VERSION}".encode()  # another one: rebuilt from the files


class UnreadableOutcomes(VabenchError, ValueError):
    """Episode files that exist but cannot be read as outcome rows (named, with the reason)."""

    def __init__(self, unreadable: list[tuple[str, str]]):
        self.unreadable = unreadable
        names = "; ".join(f"{p} ({why})" for p, why in unreadable[:5])
        more = f" and {len(unreadable) - 5} more" if len(unreadable) > 5 else ""
        super().__init__(
            f"{len(unreadable)} unreadable outcome file(s): {names}{more}; move them out of the run folder "
            "(their episodes then count as not run) or restore them"
        )


@dataclass
class Loaded:
    """A run folder's rows (with ``_file``), the files that could not be read and are still in
    place, how many episode files this read had to open (0: the table was up to date), and the
    unreadable files set aside (by this read or an earlier one), with a note each."""

    rows: pa.Table
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    opened: int = 0
    set_aside: list[tuple[str, str]] = field(default_factory=list)


def scan(run_dir: Path | str) -> dict[str, tuple[int, int, int, int]]:
    """The run's episode files (relative to outcomes/) -> (size, mtime, ctime, inode), no file
    opened: what the table is checked against, and a cheap key for a reader's own cache."""
    return _scan(Path(run_dir) / OUTCOMES)


def _scan(folder: Path, rel: str = "") -> dict[str, tuple[int, int, int, int]]:
    """Every episode file under ``folder`` -> its stat, without opening one. Names starting with
    '.' or '_' are skipped, as Parquet discovery does (temp files of an atomic write start with '.'),
    but for the files set aside as unreadable (:mod:`vabench.results.unreadable`), which readers name."""
    out: dict[str, tuple[int, int, int, int]] = {}
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return out
    for e in entries:
        if e.name.startswith((".", "_")) and not is_set_aside(e.name):
            continue
        if e.is_dir(follow_symlinks=False):
            out.update(_scan(Path(e.path), f"{rel}{e.name}/"))
        elif e.name.endswith(".parquet"):
            st = e.stat()
            out[rel + e.name] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return out


def _read_table(path: Path) -> pa.Table | None:
    """The stored table, or None when there is none or it is not one this code wrote."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException):
        return None
    meta = table.schema.metadata or {}
    if meta.get(b"vabench") != FORMAT or not table.schema.equals(TABLE_SCHEMA, check_metadata=False):
        return None
    return table


def read_file(path: Path) -> pa.Table:
    """One episode file's row(s) in the fixed schema (columns it predates are null)."""
    return ds.dataset(str(path), schema=SCHEMA, format="parquet").to_table()


def _read_bulk(outdir: Path, names: list[str], stats: dict) -> pa.Table:
    """Many episode files in one threaded scan, each row tagged with its file and stat."""
    back = {str(outdir / n): n for n in names}
    scan = ds.dataset(list(back), schema=SCHEMA, format="parquet").scanner().scan_batches()
    batches, files = [], []
    for tagged in scan:
        batches.append(tagged.record_batch)
        files += [back[tagged.fragment.path]] * tagged.record_batch.num_rows
    t = pa.Table.from_batches(batches, schema=SCHEMA).append_column(FILE, pa.array(files, pa.string()))
    for j, col in enumerate(STAT):
        t = t.append_column(col, pa.array([stats[f][j] for f in files], pa.int64()))
    return t


def _read_files(outdir: Path, names: list[str], stats: dict) -> tuple[list[pa.Table], list[tuple[str, str]]]:
    """The rows of these files, and the files that could not be read (one by one, to name them,
    only when reading them together failed)."""
    if len(names) > 20:
        try:  # a thousand files at a time: one scan of 14,000 fragments peaks at 2.5 GB
            return [_read_bulk(outdir, names[i : i + CHUNK], stats) for i in range(0, len(names), CHUNK)], []
        except (OSError, pa.ArrowException):
            pass
    parts, bad = [], []
    for name in names:
        try:
            t = read_file(outdir / name)
        except FileNotFoundError:
            continue  # removed since the scan: absent, as the next scan will say
        except (OSError, pa.ArrowException) as e:
            bad.append((f"{OUTCOMES}/{name}", f"{type(e).__name__}: {why_unreadable(outdir / name, e)}"))
            continue
        t = t.append_column(FILE, pa.array([name] * t.num_rows, pa.string()))
        for j, col in enumerate(STAT):
            t = t.append_column(col, pa.array([stats[name][j]] * t.num_rows, pa.int64()))
        parts.append(t)
    return parts, bad


def refresh(run_dir: Path | str, write: bool = True, stats: dict | None = None) -> Loaded:
    """The run folder's rows, the table brought up to date with its episode files first (and
    rewritten when anything changed and ``write``; a read-only folder is read all the same).
    ``stats``: a :func:`scan` the caller just made."""
    run_dir = Path(run_dir)
    outdir, path = run_dir / OUTCOMES, run_dir / TABLE_NAME
    stats = _scan(outdir) if stats is None else stats
    aside = [n for n in stats if is_set_aside(n)]
    stats = {n: st for n, st in stats.items() if not is_set_aside(n)}
    table = _read_table(path)
    if table is None:
        kept, known = TABLE_SCHEMA.empty_table(), {}
        stale = path.exists()
    else:
        names = table.column(FILE).to_pylist()
        cols = [table.column(c).to_pylist() for c in STAT]
        known = dict(zip(names, zip(*cols, strict=True), strict=True))
        same = [stats.get(n) == known[n] for n in names]
        kept = table.filter(pa.array(same, pa.bool_())) if not all(same) else table
        stale = not all(same)
    todo = sorted(n for n, st in stats.items() if known.get(n) != st)
    parts, bad = _read_files(outdir, todo, stats)
    if parts:
        kept = pa.concat_tables([kept, *parts])
    if (parts or stale) and write:
        kept = kept.sort_by(FILE)
        _write(path, kept)
    moved = _set_aside(outdir, bad, stats) if write else []
    bad = [b for b in bad if b[0] not in {m[0] for m in moved}]
    moved += [(f"{OUTCOMES}/{rel}", note) for rel, note in earlier(aside, set(stats))]
    return Loaded(kept, bad, len(todo), moved)


def _set_aside(outdir: Path, bad: list[tuple[str, str]], stats: dict) -> list[tuple[str, str]]:
    """The unreadable files this read set aside (those not modified lately, still as found)."""
    out = []
    for rel, why in bad:
        name = rel.removeprefix(f"{OUTCOMES}/")
        target = set_aside_if_still(outdir / name, stats[name])
        if target is not None:
            out.append((rel, f"{why}; set aside as {target.name}"))
    return out


def _write(path: Path, table: pa.Table) -> None:
    """Atomically replace the table; a folder that cannot be written keeps the old one (readers
    then validate it and read the difference, as always)."""
    table = table.replace_schema_metadata({b"vabench": FORMAT})
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-outcomes-", suffix=".parquet", dir=path.parent)
    except OSError:
        return
    os.close(fd)
    try:
        os.chmod(tmp, 0o644)  # readable like the episode files (mkstemp makes 0600)
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


_landed: dict[Path, list[int]] = {}  # run folder -> [rows written since the last rewrite, rows then]


def landed(run_dir: Path | str) -> None:
    """The driver wrote an episode file: rewrite the table once enough rows have landed (50, or a
    tenth of the run, whichever is more), so keeping it costs O(n log n) over a run, not O(n^2).
    Readers in between read the few new files themselves."""
    key = Path(run_dir)
    count = _landed.setdefault(key, [0, 0])
    count[0] += 1
    if count[0] >= max(50, count[1] // 10):
        count[:] = [0, refresh(key).rows.num_rows]


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """Outcome rows as pandas with the schema's types (integers stay integers with nulls)."""
    return table.select(list(SCHEMA.names)).to_pandas(types_mapper=_NULLABLE.get)


def run_folders(folder: Path | str) -> list[Path]:
    """The run folders (those holding ``outcomes/``) at or under ``folder``: a folder of runs
    is its runs."""
    return _roots(Path(folder))[0]


def _roots(folder: Path) -> tuple[list[Path], list[Path]]:
    """Run folders (those holding ``outcomes/``) and loose episode files under ``folder``."""
    if folder.name == OUTCOMES and folder.parent != folder:
        return [folder.parent], []
    if (folder / OUTCOMES).is_dir():
        return [folder], []
    runs, loose = [], []
    for e in sorted(os.scandir(folder), key=lambda e: e.name):
        if e.name.startswith((".", "_")):
            continue
        if e.is_dir():
            r, f = _roots(Path(e.path))
            runs += r
            loose += f
        elif e.name.endswith(".parquet"):
            loose.append(Path(e.path))
    return runs, loose


def gather(*folders: Path | str) -> Loaded:
    """Every outcome row under the given folders (run folders, folders of runs, or a run's
    ``outcomes/``), each run read through its table; unreadable files are listed, not raised."""
    parts, bad, opened, moved = [], [], 0, []
    for folder in map(Path, folders):
        runs, loose = _roots(folder)
        for run in runs:
            got = refresh(run)
            parts.append(got.rows)
            bad += [(str(run / p), why) for p, why in got.unreadable]
            moved += [(str(run / p), why) for p, why in got.set_aside]
            opened += got.opened
        if loose:
            stats = {str(p): (0, 0, 0, 0) for p in loose}
            got_parts, got_bad = _read_files(Path("/"), [str(p) for p in loose], stats)
            parts += got_parts
            bad += got_bad
            opened += len(loose)
    rows = pa.concat_tables(parts) if parts else TABLE_SCHEMA.empty_table()
    return Loaded(rows, bad, opened, moved)


def load(*folders: Path | str) -> pd.DataFrame:
    """Every outcome row under the given folders as one DataFrame with the fixed schema (an empty
    result still has every column). Raises :class:`UnreadableOutcomes`, naming the files, when an
    episode file cannot be read: a table missing rows silently would be worse."""
    got = gather(*folders)
    if got.unreadable:
        raise UnreadableOutcomes(got.unreadable)
    return to_pandas(got.rows)


def statuses(run_dir: Path | str) -> dict[str, tuple[str, int]]:
    """Episode file (relative to outcomes/) -> (status, attempt) of its last row, from the table:
    what resume planning needs, without opening each file."""
    got = refresh(run_dir)
    if got.unreadable:
        raise UnreadableOutcomes([(str(Path(run_dir) / p), why) for p, why in got.unreadable])
    t = got.rows
    attempts = pc.fill_null(t.column("attempt"), 1).to_pylist()
    files, status = t.column(FILE).to_pylist(), t.column("status").to_pylist()
    return {f: (str(s), int(a)) for f, s, a in zip(files, status, attempts, strict=True)}
