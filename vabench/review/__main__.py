"""``python -m vabench.review``: serve the review app, (re)make videos, export labels."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vabench.analysis import labels as L
from vabench.media import DEMO_VIDEO, demo_video, episode_video
from vabench.recordfile import EVENTS, VIDEO_NAME, recording_frames

from . import runs

COMMANDS = ("serve", "videos", "labels")
DEFAULT_FPS = 2.0


def serve(args) -> int:
    import uvicorn

    from .app import create_app

    try:
        local = args.host in ("127.0.0.1", "localhost")
        app = create_app([Path(f) for f in args.folders], None if local else args.allow_host or ["*"])
    except FileNotFoundError as e:
        print(f"vabench.review: {e}", file=sys.stderr)
        return 2
    print(f"vabench review: http://{args.host}:{args.port}/  (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _fps(root: Path, override: float | None) -> float:
    if override:
        return override
    try:  # the run's own setting, from the config it ran with
        return float(json.loads((root / "_run.json").read_text())["config"]["recording"]["fps"])
    except (OSError, KeyError, TypeError, ValueError):
        return DEFAULT_FPS


def videos(args) -> int:
    made = kept = 0
    for folder in map(Path, args.folders):
        fps = _fps(folder, args.fps)
        for record in sorted(folder.rglob(EVENTS)):
            if (record.parent / VIDEO_NAME).exists() and not args.force:
                kept += 1
            elif recording_frames(record.parent):
                episode_video(record.parent, fps, args.size)
                made += 1
    for root in args.demos or []:
        for manifest in sorted(Path(root).glob("*/demo.json")):
            if args.force or not (manifest.parent / DEMO_VIDEO).exists():
                demo_video(manifest.parent)
                made += 1
    print(f"vabench.review: made {made} video(s); {kept} already there (--force remakes them)")
    return 0


def labels(args) -> int:
    from .app import export

    root = Path(args.folder)
    text = export(root, runs.outcomes(root)[0])
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"vabench.review: wrote {len(text.splitlines()) - 1} label row(s) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _fps_value(text: str) -> float:
    try:
        fps = float(text)
    except ValueError:
        fps = float("nan")
    if not 0.1 <= fps <= 60:
        raise argparse.ArgumentTypeError(f"fps must be a number in [0.1, 60], got {text!r}")
    return fps


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WxH, e.g. 640x480, got {text!r}") from None
    if w < 16 or h < 16 or w % 2 or h % 2:
        raise argparse.ArgumentTypeError(f"size must be even and at least 16x16 (H.264), got {text!r}")
    return w, h


def parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m vabench.review{'' if command == 'serve' else ' ' + command}")
    if command == "serve":
        p.description = "Review and annotate the episodes of run folders in a local web app."
        p.add_argument("folders", nargs="+", metavar="RUN_FOLDER")
        p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1: this machine only)")
        p.add_argument("--port", type=int, default=8765)
        p.add_argument(
            "--allow-host",
            action="append",
            metavar="NAME",
            help="with --host other than 127.0.0.1: host name(s) browsers use to reach it (default: any)",
        )
    elif command == "videos":
        p.description = "Make the mp4 of every episode (from its recording views) and of demonstrations."
        p.add_argument("folders", nargs="*", metavar="RUN_FOLDER")
        p.add_argument("--force", action="store_true", help="remake videos that exist")
        p.add_argument("--fps", type=_fps_value, help="frames (steps) per second; default: the run's recording.fps")
        p.add_argument("--size", type=_size, metavar="WxH", help="resize the frames (even numbers), e.g. 640x480")
        p.add_argument("--demos", nargs="+", metavar="DEMO_ROOT", help="also the demonstrations under these roots")
    else:
        p.description = f"Every annotator's current labels ({L.ANNOTATIONS}/) with the episodes' identity, as CSV."
        p.add_argument("folder", metavar="RUN_FOLDER")
        p.add_argument("--out", metavar="CSV", help="write here instead of standard output")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "serve"
    args = parser(command).parse_args(argv)
    return {"serve": serve, "videos": videos, "labels": labels}[command](args)


if __name__ == "__main__":
    raise SystemExit(main())
