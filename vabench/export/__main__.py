"""``python -m vabench.export lerobot RUN_OR_DEMOS --out DIR [--repo-id NAME]``: a LeRobot dataset
v3.0 of a run's model episodes (one per judged attempt) or of the demonstrations' expert episodes;
``python -m vabench.export lerobot --oracle --split train --tasks T --out DIR``: the expert's
episodes on the training split's seeds. Every episode and info.json record the seeds' split.
docs/export.md has the feature mapping and how to load the result with LeRobot."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path

from tqdm import tqdm

from vabench.core.errors import command
from vabench.core.vocab import ControlMode, Split
from vabench.results.layout import RECORDS, RUN_INFO

from .clips import ExportError
from .lerobot import write

DEFAULT_FPS = 2  # the episode videos' rate (RecordingConfig.fps): one frame per step


def export(
    source: Path,
    out: Path,
    repo_id: str | None = None,
    *,
    where: dict[str, str] | None = None,
    tasks: tuple[str, ...] = (),
    fps: int | None = None,
    unjudged: bool = False,
    force: bool = False,
    progress: bool = True,
) -> dict:
    """Export ``source`` (a run folder or demonstrations) to ``out``; a summary of what was written."""
    from . import demos, runs

    source, out = Path(source), Path(out)
    if out.exists() and not force:
        raise ExportError(f"{out} exists: choose another --out, or --force to replace it")
    if runs.is_run(source):
        found = list(runs.selected(source, where or {}, unjudged, tasks))
        bar = tqdm(found, desc="reading records", unit="episode", disable=not progress or None)
        clips = [runs.record_clip(source, folder, events, row) for folder, events, row in bar]
        rate = fps or runs.run_fps(source, clips[0].control if clips else ControlMode.COMMANDS) or DEFAULT_FPS
        for clip in clips:
            clip.meta["split"] = clip.meta["split"] or runs.run_split(source)  # a row before schema 13: the run's
        repo_id = repo_id or f"vabench/{source.name}"
        return _write(clips, out, _whole(rate), repo_id, force, progress)
    if demos.is_demos(source):
        if where:
            raise ExportError("--where selects a run's episodes; for demonstrations name them with --tasks")
        folders = demos.demo_folders(source, tasks)
        with tempfile.TemporaryDirectory(
            prefix=".vabench-demo-frames-", dir=out.parent if out.parent.is_dir() else None
        ) as scratch:
            bar = tqdm(folders, desc="replaying demonstrations", unit="episode", disable=not progress or None)
            clips = [demos.demo_clip(folder, Path(scratch)) for folder in bar]
            return _write(clips, out, _whole(fps or DEFAULT_FPS), repo_id or "vabench/demonstrations", force, progress)
    raise ExportError(
        f"{source} is neither a run folder ({RECORDS}/, {RUN_INFO}) nor demonstrations (demo.json): give a run "
        "folder, or a demos folder such as $VABENCH_CACHE/demos/paper"
    )


def export_oracle(
    out: Path,
    tasks: tuple[str, ...],
    split: str = Split.TRAIN,
    seeds: int | None = None,
    render: str = "small",
    repo_id: str | None = None,
    *,
    fps: int | None = None,
    force: bool = False,
    progress: bool = True,
) -> dict:
    """The scripted expert's episodes on the first ``seeds`` seeds of ``split`` (default: the
    training split, disjoint from the evaluation manifests) of each task, as a dataset at ``out``."""
    from vabench.envs.tasks import TASKS

    from . import demos

    out = Path(out)
    if out.exists() and not force:
        raise ExportError(f"{out} exists: choose another --out, or --force to replace it")
    if not tasks or any(t not in TASKS for t in tasks):
        raise ExportError(
            f"--oracle needs --tasks, a comma-separated list of tasks (python -m vabench.tasks), got {tasks}"
        )
    with tempfile.TemporaryDirectory(
        prefix=".vabench-oracle-frames-", dir=out.parent if out.parent.is_dir() else None
    ) as tmp:
        bar = partial(tqdm, desc=f"the expert on {split} seeds", unit="episode", disable=not progress or None)
        clips = demos.oracle_clips(tasks, split, seeds, render, Path(tmp), bar)
        return _write(clips, out, _whole(fps or DEFAULT_FPS), repo_id or f"vabench/oracle-{split}", force, progress)


def _whole(fps: float) -> int:
    if fps < 1 or fps != int(fps):
        raise ExportError(f"a LeRobot dataset's fps is a whole number; the run records {fps:g}: give --fps N")
    return int(fps)


def _write(clips, out: Path, fps: int, repo_id: str, force: bool, progress: bool) -> dict:
    if force and out.exists():
        shutil.rmtree(out)
    layout = write(clips, out, fps, repo_id, progress)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {
        "out": str(out),
        "repo_id": repo_id,
        "episodes": len(clips),
        "frames": sum(c.length for c in clips),
        "cameras": [v for v, _ in layout.views],
        "fps": fps,
        "bytes": size,
    }


def _where(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ExportError(f"--where {pair!r}: write COLUMN=VALUE, e.g. --where task=grasp_single_cube")
        out[key] = value
    return out


@command("vabench.export")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vabench.export", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="format", required=True)
    p = sub.add_parser("lerobot", help="a LeRobot dataset v3.0 (docs/export.md)")
    p.add_argument("source", type=Path, nargs="?", metavar="RUN_OR_DEMOS", help="a run folder, or demonstrations")
    p.add_argument("--oracle", action="store_true", help="instead: the expert's episodes on --split's seeds of --tasks")
    p.add_argument("--split", default=Split.TRAIN, choices=list(Split), help="--oracle: whose seeds (default train)")
    p.add_argument("--seeds", type=int, help="--oracle: the first N seeds of each task (default: all of the split's)")
    p.add_argument("--render", default="small", help="--oracle: the render preset (default small)")
    p.add_argument("--out", type=Path, required=True, help="the dataset folder to write (must not exist)")
    p.add_argument("--repo-id", help="the dataset's name for LeRobot (default vabench/<run id>)")
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COLUMN=VALUE",
        help="only episodes whose outcome row has this value (repeatable), e.g. protocol=active",
    )
    p.add_argument("--tasks", default="", help="only these tasks (comma-separated)")
    p.add_argument("--fps", type=int, help="frames per second (default: the run's recording.fps, one frame per step)")
    p.add_argument("--unjudged", action="store_true", help="also infra_error attempts (never judged)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = ap.parse_args(argv)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    if args.oracle == (args.source is not None):
        raise ExportError("name a run folder or demonstrations, or --oracle with --tasks (not both)")
    if args.oracle:
        done = export_oracle(
            args.out, tasks, args.split, args.seeds, args.render, args.repo_id, fps=args.fps, force=args.force
        )
        print(f"wrote {done['episodes']} expert episodes on {args.split} seeds to {done['out']}")
        return 0
    done = export(
        args.source,
        args.out,
        args.repo_id,
        where=_where(args.where),
        tasks=tasks,
        fps=args.fps,
        unjudged=args.unjudged,
        force=args.force,
    )
    print(
        f"wrote {done['episodes']} episodes, {done['frames']} frames ({', '.join(done['cameras'])} at "
        f"{done['fps']} fps, {done['bytes'] / 1e6:.1f} MB) to {done['out']}\n"
        f"open it: LeRobotDataset({done['repo_id']!r}, root={done['out']!r}, video_backend='pyav')"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
