"""Seed screening and the per-task seed manifests (paper Appendix C.4).

A candidate seed is accepted when (1) the settled scene is stable: no object's orientation
drifts more than 3 deg over the last 200 of 500 watched steps after a 2000-step settle (the env
does this on every reset); (2) every pose stays finite; and (3) the scripted expert, acting only
through protocol actions, reaches the terminal predicate with no invalid action and no planner
failure. Candidates are visited in order from a fixed pool until 20 are accepted; rejections are
kept with their reason. The demonstration seed comes from a separate pool (0-999), so the demo
never shows an evaluation scene.

    python -m vabench.envs.cli.seeds --write        # screen every task, rewrite the manifests
    python -m vabench.envs.cli.seeds --check        # re-verify the committed manifests
    python -m vabench.envs.cli.seeds --task grasp_single_cube --check --limit 5
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from vabench.vocab import SEEDS_PER_TASK

from .env import VABenchEnv
from .tasks import task_class

MANIFEST_DIR = Path(__file__).with_name("seed_manifests")
FORMAT = "vabench.seed_manifest.v1"
EVAL_POOL = (1000, 1199)
DEMO_POOL = (0, 999)


@dataclass
class Verdict:
    seed: int
    ok: bool
    reason: str
    steps: int = 0


def probe(env: VABenchEnv, task: str, seed: int) -> Verdict:
    """Reset, check stability, run the expert; say why a seed fails."""
    env.reset(task, seed)
    if not env.stability.stable:
        return Verdict(
            seed,
            False,
            f"unstable: {env.stability.worst_body} turned {env.stability.max_drift_deg:.2f} deg "
            "in the last 200 settle steps (limit 3)",
        )
    result = None
    for result in env.expert_steps():
        if not result.action_valid:
            return Verdict(seed, False, f"expert action {result.step} invalid: {result.feedback}", result.step)
        if not result.planner_success:
            return Verdict(seed, False, f"planner failure at step {result.step}: {result.feedback}", result.step)
        if not all(np.isfinite(b.matrix()).all() for b in env.world.bodies.values()):
            return Verdict(seed, False, f"non-finite object pose at step {result.step}", result.step)
    if result is None or not result.success:
        steps = 0 if result is None else result.step
        return Verdict(
            seed, False, f"expert did not succeed within {steps} steps; checkpoints {env.checkpoints()}", steps
        )
    return Verdict(seed, True, "ok", result.step)


def screen(
    env: VABenchEnv, task: str, pool=EVAL_POOL, n_accept: int = SEEDS_PER_TASK, log=print
) -> tuple[list[int], list[dict]]:
    accepted, rejected = [], []
    for seed in range(pool[0], pool[1] + 1):
        v = probe(env, task, seed)
        log(f"[{task}] seed {seed}: {'accepted' if v.ok else 'rejected: ' + v.reason}")
        if v.ok:
            accepted.append(seed)
            if len(accepted) == n_accept:
                break
        else:
            rejected.append({"seed": seed, "reason": v.reason})
    if len(accepted) < n_accept:
        raise RuntimeError(f"{task}: only {len(accepted)} of {n_accept} seeds accepted in pool {pool}")
    return accepted, rejected


def manifest_path(task: str) -> Path:
    return MANIFEST_DIR / f"{task}.json"


def load_manifest(task: str) -> dict:
    path = manifest_path(task)
    if not path.exists():
        raise FileNotFoundError(
            f"no seed manifest for {task!r}; run `python -m vabench.envs.cli.seeds --task {task} --write`"
        )
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT or data.get("task") != task:
        raise ValueError(f"{path} is not a {FORMAT} manifest for {task!r}")
    return data


def eval_seeds(task: str) -> list[int]:
    return list(load_manifest(task)["accepted"])


def demo_seed(task: str) -> int:
    return int(load_manifest(task)["demo_seed"])


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("vabench", "sapien", "mplib", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def write_manifest(env: VABenchEnv, task: str, log=print) -> dict:
    accepted, rejected = screen(env, task, log=log)
    demo, demo_rejected = screen(env, task, pool=DEMO_POOL, n_accept=1, log=log)
    data = {
        "format": FORMAT,
        "task": task,
        "budget": task_class(task).budget,
        "criteria": "stable (<=3 deg over the last 200 of 500 steps after 2000), finite poses, "
        "expert success with no invalid action and no planner failure",
        "candidate_pool": list(EVAL_POOL),
        "accepted": accepted,
        "rejected": rejected,
        "demo_pool": list(DEMO_POOL),
        "demo_seed": demo[0],
        "demo_rejected": demo_rejected,
        "versions": _versions(),
    }
    MANIFEST_DIR.mkdir(parents=True, exist_ok=True)
    manifest_path(task).write_text(json.dumps(data, indent=2) + "\n")
    return data


def check_manifest(env: VABenchEnv, task: str, limit: int | None = None, log=print) -> list[Verdict]:
    """Re-run the expert on the manifest's accepted seeds (and the demo seed); return failures."""
    data = load_manifest(task)
    seeds = data["accepted"][:limit] if limit else data["accepted"]
    failures = []
    for seed in [*seeds, data["demo_seed"]]:
        v = probe(env, task, seed)
        log(f"[{task}] seed {seed}: {'ok' if v.ok else 'FAILED: ' + v.reason}")
        if not v.ok:
            failures.append(v)
    return failures
