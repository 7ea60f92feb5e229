"""Screen seeds and write or check the per-task seed manifests.

The acceptance criteria, the pools and the manifest format: :mod:`vabench.envs.seeds`.

    python -m vabench.envs.cli.seeds --write        # screen every task, rewrite the manifests
    python -m vabench.envs.cli.seeds --check        # re-verify the committed manifests
    python -m vabench.envs.cli.seeds --task grasp_single_cube --check --limit 5
    python -m vabench.envs.cli.seeds --robot ur5 --write --max-tries 30 [--resume]
    python -m vabench.envs.cli.seeds --split train --write [--count 20]   # the training split's seeds
"""

from __future__ import annotations

import argparse
import sys

from vabench.core.errors import command
from vabench.core.vocab import TRAIN_SEEDS_PER_TASK, Robot, Split

from ..env import EnvConfig, VABenchEnv
from ..seeds import check_manifest, write_manifest, write_train_manifest
from ..tasks import TASKS


@command("python -m vabench.envs.cli.seeds")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Screen seeds and write or check the seed manifests.")
    ap.add_argument("--task", action="append", choices=sorted(TASKS), help="default: every task")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="screen the pools and rewrite the manifests")
    mode.add_argument("--check", action="store_true", help="re-verify the committed manifests")
    ap.add_argument("--limit", type=int, default=None, help="--check only the first N accepted seeds")
    ap.add_argument(
        "--max-tries",
        type=int,
        default=None,
        help="another robot: at most N candidates per task, a resumed manifest's counted",
    )
    ap.add_argument("--resume", action="store_true", help="another robot: continue after the manifest's last candidate")
    ap.add_argument("--robot", default=Robot.PANDA, choices=list(Robot), help="the embodiment (default panda)")
    ap.add_argument(
        "--split", default=Split.EVAL, choices=list(Split), help="the manifests of this split (default eval)"
    )
    ap.add_argument("--count", type=int, default=TRAIN_SEEDS_PER_TASK, help="--split train --write: seeds per task")
    args = ap.parse_args(argv)
    env = VABenchEnv(EnvConfig(render=False, robot=args.robot))
    bad = 0
    for task in args.task or sorted(TASKS):
        if args.write and args.split == Split.TRAIN:
            data = write_train_manifest(env, task, args.count)
            print(f"{task}: train seeds accepted {len(data['accepted'])}, rejected {len(data['rejected'])}", flush=True)
        elif args.write:
            data = write_manifest(env, task, max_tries=args.max_tries, resume=args.resume)
            n_ok, n_bad = len(data["accepted"]), len(data["rejected"])
            why = f" (declared: {data['declared']})" if data.get("declared") else ""
            print(f"{task}: accepted {n_ok}, rejected {n_bad}, demo seed {data['demo_seed']}{why}", flush=True)
        else:
            failures = check_manifest(env, task, args.limit, split=args.split)
            bad += len(failures)
            print(f"{task}: {'all seeds verified' if not failures else f'{len(failures)} seed(s) FAILED'}")
    env.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
