"""``python -m vabench.bundle RUN --out FILE [--frames]``: one file to submit or archive a run:
its rows (``outcomes/``), records (``events.jsonl``; frames with ``--frames``), ``_run.json``,
``_provenance/`` and ``DIGESTS.json`` (sha256 of every file packed). ``python -m vabench.verify
FILE`` accepts it: the digests are checked on unpacking, and without frames a record's digest is
checked against the frames index the record itself keeps (see ``FRAMES_INDEX``).

A zip (stored, not compressed: frames are JPEG already), so any tool can open it."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zipfile
from pathlib import Path

from vabench.recordfile import EVENTS, FRAMES, FRAMES_INDEX, frames_index

DIGESTS = "DIGESTS.json"


def _members(run_dir: Path, frames: bool):
    """(path in the bundle, file) of everything a bundle carries."""
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir)
        if not path.is_file() or rel.name.startswith("."):
            continue
        top = rel.parts[0]
        if top in ("outcomes", "_provenance") or rel.as_posix() == "_run.json":
            yield rel.as_posix(), path
        elif top == "_records" and (rel.name == EVENTS or (frames and FRAMES in rel.parts)):
            yield rel.as_posix(), path


def pack(run_dir: Path, out: Path, frames: bool = False) -> Path:
    """Write the bundle of ``run_dir`` to ``out``."""
    run_dir, digests = Path(run_dir), {}
    if not (run_dir / "_run.json").is_file():
        raise SystemExit(f"{run_dir}: not a run folder (no _run.json)")
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


def unpack(bundle: Path, into: Path) -> Path:
    """Unpack a bundle into ``into`` (a run folder), checking every file against ``DIGESTS.json``."""
    with zipfile.ZipFile(bundle) as z:
        digests = json.loads(z.read(DIGESTS))
        for name in z.namelist():
            target = (into / name).resolve()
            if not target.is_relative_to(into.resolve()):
                raise SystemExit(f"{bundle}: {name} points outside the bundle")
            data = z.read(name)
            if name in digests and hashlib.sha256(data).hexdigest() != digests[name]:
                raise SystemExit(f"{bundle}: {name} does not match its digest in {DIGESTS}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    missing = sorted(n for n in digests if not (into / n).is_file())
    if missing:
        raise SystemExit(f"{bundle}: files listed in {DIGESTS} are missing: {', '.join(missing[:3])}")
    return into


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
