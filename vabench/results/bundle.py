"""``python -m vabench.bundle RUN --out FILE [--frames]``: one file to submit or archive a run:
its rows (``outcomes/``), records (``events.jsonl``; frames with ``--frames``), the run info (``RUN_INFO``),
``_provenance/`` and ``DIGESTS.json`` (sha256 of every file packed). ``python -m vabench.verify
FILE`` accepts it, and any faithful repacking of it (unzipped and zipped again with ``zip -r``,
with or without a top folder; a tar or tar.gz; the unpacked folder itself): every file is checked
against ``DIGESTS.json`` (:func:`differences`), and without frames a record's digest is checked
against the frames index the record itself keeps (see ``FRAMES_INDEX``).

A zip (stored, not compressed: frames are JPEG already), so any tool can open it."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
import zipfile
import zlib
from pathlib import Path

from vabench.core.errors import BadFile, VabenchError, command
from vabench.results.layout import OUTCOMES, PROVENANCE, RECORDS, RUN_INFO
from vabench.results.recordfile import EVENTS, FRAMES, FRAMES_INDEX, frames_index

DIGESTS = "DIGESTS.json"
HOW = "python -m vabench.bundle RUN --out FILE"


def _members(run_dir: Path, frames: bool):
    """(path in the bundle, file) of everything a bundle carries."""
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir)
        if not path.is_file() or rel.name.startswith("."):
            continue
        top = rel.parts[0]
        if top in (OUTCOMES, PROVENANCE) or rel.as_posix() == RUN_INFO:
            yield rel.as_posix(), path
        elif top == RECORDS and (rel.name == EVENTS or (frames and FRAMES in rel.parts)):
            yield rel.as_posix(), path


def pack(run_dir: Path, out: Path, frames: bool = False) -> Path:
    """Write the bundle of ``run_dir`` to ``out``."""
    run_dir, digests = Path(run_dir), {}
    if not (run_dir / RUN_INFO).is_file():
        raise BadFile(f"{run_dir}: not a run folder (no {RUN_INFO}); give the folder a run wrote")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, path in _members(run_dir, frames):
            data = path.read_bytes()
            digests[name] = hashlib.sha256(data).hexdigest()
            z.writestr(name, data)
            if not frames and path.name == EVENTS:
                index = frames_index(path.parent)
                z.writestr(f"{Path(name).parent.as_posix()}/{FRAMES_INDEX}", json.dumps(index, sort_keys=True))
        z.writestr(DIGESTS, json.dumps(digests, indent=1, sort_keys=True))
    return Path(out)


class NotABundle(VabenchError, ValueError):
    """A file that is not a bundle: not a zip or tar, a broken archive, or no ``DIGESTS.json`` in it."""


def unpack(bundle: Path, into: Path) -> Path:
    """Unpack a bundle, or any repacking of one as zip or tar, into ``into``; returns the folder
    that holds its ``DIGESTS.json`` (a top folder, if the archive has one). Check it with
    :func:`differences`. Raises :class:`NotABundle` naming what is wrong."""
    bundle, into = Path(bundle), Path(into)
    try:
        if zipfile.is_zipfile(bundle):
            with zipfile.ZipFile(bundle) as z:
                z.extractall(into)  # directory entries made; names with .. or a leading / made safe
        elif tarfile.is_tarfile(bundle):
            with tarfile.open(bundle) as t:
                t.extractall(into, filter="data")  # refuses links and paths that leave ``into``
        else:
            why = "not a zip or tar file, or a damaged one"
            raise NotABundle(f"{bundle}: {why}; give a run folder or a bundle ({HOW})")
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, tarfile.TarError, EOFError, zlib.error) as e:
        raise NotABundle(f"{bundle}: a damaged archive ({type(e).__name__}: {e})") from None
    found = sorted((p.parent for p in into.rglob(DIGESTS)), key=lambda p: len(p.parts))
    if not found:
        raise NotABundle(f"{bundle}: no {DIGESTS} in it, so not a bundle; make one with {HOW}")
    if len(found) > 1 and len(found[1].parts) == len(found[0].parts):
        raise NotABundle(f"{bundle}: {len(found)} bundles in one archive; give one at a time")
    return found[0]


def differences(root: Path) -> list[tuple[str, str]]:
    """(file, what is wrong) for each file of an unpacked bundle that is not as packed: listed in
    ``DIGESTS.json`` but missing or changed, or a file a bundle carries that it does not list."""
    root = Path(root)
    try:
        digests = json.loads((root / DIGESTS).read_text())
    except (OSError, ValueError) as e:
        return [(DIGESTS, f"unreadable ({type(e).__name__})")]
    if not isinstance(digests, dict):
        return [(DIGESTS, "not a JSON object of file -> sha256")]
    out = []
    for name, sha in sorted(digests.items()):
        path = root / name
        if not path.resolve().is_relative_to(root.resolve()):
            out.append((name, "points outside the bundle"))
        elif not path.is_file():
            out.append((name, f"missing (listed in {DIGESTS})"))
        elif (actual := hashlib.sha256(path.read_bytes()).hexdigest()) != sha:
            out.append((name, f"changed since packing (sha256 {actual[:16]}, {DIGESTS}: {str(sha)[:16]})"))
    added = [name for name, _ in _members(root, False) if name not in digests]
    return out + [(name, f"not in {DIGESTS} (added after packing)") for name in added]


@command("python -m vabench.bundle")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vabench.bundle", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the run folder")
    ap.add_argument("--out", type=Path, required=True, help="the bundle file to write (.zip)")
    ap.add_argument("--frames", action="store_true", help="include the model-facing frames (larger)")
    args = ap.parse_args(argv)
    out = pack(args.run, args.out, args.frames)
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
