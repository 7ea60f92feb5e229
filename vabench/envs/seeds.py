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
    python -m vabench.envs.cli.seeds --robot ur5 --write   # another embodiment: its own manifests

Every embodiment (vabench.envs.sim.embodiments) has its own manifests, ``seed_manifests/<robot>/``
(the Panda's are ``seed_manifests/`` itself), screened by the same criteria from the same pool with
the robot's own expert run.

The training split (``split=train``) has manifests of its own, ``seed_manifests/train/`` (another
robot's under ``train/<robot>/``), screened by the same criteria from :data:`TRAIN_POOL`, a range
that shares no seed with the evaluation and demonstration pools; :func:`held_out` is the one rule
for what training never plays, and tests/test_seeds_split.py checks every robot's train seeds
against every evaluation manifest. Train on these, evaluate on the others:

    python -m vabench.envs.cli.seeds --split train --write [--robot xarm7] [--count 20]

A task the robot cannot do is declared: when no seed of the first
:data:`GIVE_UP_AFTER` candidates is accepted (or the pool runs out first), its manifest keeps the
seeds it accepted and says why in ``declared``, from the rejections. ``max_tries`` caps the
candidates one screening visits (a task with a low acceptance rate cannot eat a session); a task
stopped at the cap is declared short *by the cap*, with the count tried, and ``resume`` later
continues after the last candidate tried instead of starting over. Demonstrations stay the
Panda's (the demo seed is the Panda manifest's): a model learns the task once, then acts with
whichever robot the run names.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from vabench.core.errors import BadFile, ConfigError, NotFound
from vabench.core.vocab import SEEDS_PER_TASK, TRAIN_SEEDS_PER_TASK, Robot, Split

from .env import VABenchEnv
from .tasks import task_class

MANIFEST_DIR = Path(__file__).with_name("seed_manifests")
FORMAT = "vabench.seed_manifest.v1"
EVAL_POOL = (1000, 1199)
DEMO_POOL = (0, 999)
TRAIN_POOL = (100_000, 199_999)  # the training split's candidates: no evaluation or demonstration seed
GIVE_UP_AFTER = 30  # another robot: no seed accepted among this many candidates declares the task


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
    env: VABenchEnv,
    task: str,
    pool=EVAL_POOL,
    n_accept: int = SEEDS_PER_TASK,
    log=print,
    strict: bool = True,
    max_tries: int | None = None,
    prior: tuple[list[int], list[dict]] = ((), ()),
    held: frozenset[int] = frozenset(),
) -> tuple[list[int], list[dict]]:
    """Candidates in order until ``n_accept`` pass; ``strict=False`` (another robot) returns short
    instead of raising, gives up after GIVE_UP_AFTER candidates without one accepted, and stops after
    ``max_tries`` candidates in all. ``prior`` (accepted, rejected) resumes after its last seed. A
    seed in ``held`` (the training split's :func:`held_out`) is rejected unplayed."""
    accepted, rejected = list(prior[0]), list(prior[1])
    start = max([*accepted, *(r["seed"] for r in rejected)], default=pool[0] - 1) + 1
    for seed in range(start, pool[1] + 1):
        if len(accepted) >= n_accept:
            break
        if not strict and not accepted and len(rejected) >= GIVE_UP_AFTER:
            break
        if max_tries is not None and len(accepted) + len(rejected) >= max_tries:
            break
        if seed in held:
            rejected.append({"seed": seed, "reason": HELD_OUT})
            continue
        v = probe(env, task, seed)
        log(f"[{task}] seed {seed}: {'accepted' if v.ok else 'rejected: ' + v.reason}")
        if v.ok:
            accepted.append(seed)
        else:
            rejected.append({"seed": seed, "reason": v.reason})
    if len(accepted) < n_accept and strict:
        raise NotFound(f"{task}: only {len(accepted)} of {n_accept} seeds accepted in pool {pool}")
    return accepted, rejected


def manifest_path(task: str, robot: str = Robot.PANDA, split: str = Split.EVAL) -> Path:
    folder = MANIFEST_DIR if split == Split.EVAL else MANIFEST_DIR / Split(split)
    return folder / f"{task}.json" if robot == Robot.PANDA else folder / robot / f"{task}.json"


def load_manifest(task: str, robot: str = Robot.PANDA, split: str = Split.EVAL) -> dict:
    path = manifest_path(task, robot, split)
    if not path.exists():
        on, how = ("", "") if robot == Robot.PANDA else (f" on {robot}", f" --robot {robot}")
        kind, how = ("", how) if split == Split.EVAL else (f"{split} ", f"{how} --split {split}")
        raise NotFound(
            f"no {kind}seed manifest for {task!r}{on}; run "
            f"`python -m vabench.envs.cli.seeds --task {task}{how} --write`"
        )
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT or data.get("task") != task or data.get("split", Split.EVAL) != split:
        raise BadFile(f"{path} is not a {FORMAT} {split} manifest for {task!r}")
    return data


def eval_seeds(task: str, robot: str = Robot.PANDA) -> list[int]:
    return list(load_manifest(task, robot)["accepted"])


def train_seeds(task: str, robot: str = Robot.PANDA) -> list[int]:
    """The training split's screened seeds (disjoint from :func:`eval_seeds` and the demo seed)."""
    return list(load_manifest(task, robot, Split.TRAIN)["accepted"])


def split_seeds(task: str, robot: str = Robot.PANDA, split: str = Split.EVAL) -> list[int]:
    """The seeds of ``split`` (``eval``: the evaluation manifest; ``train``: the training pool's)."""
    return train_seeds(task, robot) if Split(split) == Split.TRAIN else eval_seeds(task, robot)


def demo_seed(task: str) -> int:
    return int(load_manifest(task)["demo_seed"])


HELD_OUT = "held out: an evaluation or demonstration seed"


def held_out(task: str) -> frozenset[int]:
    """The seeds of ``task`` no training may play: every robot's evaluation manifest and the
    demonstration seed. The one rule that the training screening, the launcher (``split=train``)
    and Gym (``split="train"``) each ask, so a seed one robot evaluates on never trains another."""
    held = {demo_seed(task)}
    for robot in Robot:
        if manifest_path(task, robot).exists():
            held |= set(eval_seeds(task, robot))
    return frozenset(held)


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("vabench", "sapien", "mplib", "numpy"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def write_manifest(env: VABenchEnv, task: str, log=print, max_tries: int | None = None, resume: bool = False) -> dict:
    """Screen ``task`` for the env's robot and write its manifest; ``max_tries`` and ``resume``
    apply to another robot's (the Panda's manifests are screened whole, to 20)."""
    robot = env.config.robot
    if robot != Robot.PANDA:
        return _write_robot_manifest(env, task, robot, log, max_tries, resume)
    if max_tries is not None or resume:
        raise ConfigError("--max-tries and --resume apply to another robot's manifests; the Panda's screen to 20")
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


def write_train_manifest(env: VABenchEnv, task: str, count: int = TRAIN_SEEDS_PER_TASK, log=print) -> dict:
    """Screen :data:`TRAIN_POOL` for ``task`` on the env's robot until ``count`` seeds pass (more
    than the manifest holds: it continues after its last candidate) and write the train manifest.
    Another robot's gives up as its evaluation screening does and says why in ``declared``."""
    robot, path = env.config.robot, manifest_path(task, env.config.robot, Split.TRAIN)
    prior = ((), ())
    if path.exists():
        old = load_manifest(task, robot, Split.TRAIN)
        prior = (old["accepted"], old["rejected"])
    strict = robot == Robot.PANDA
    accepted, rejected = screen(
        env, task, pool=TRAIN_POOL, n_accept=count, log=log, strict=strict, prior=prior, held=held_out(task)
    )
    data = {
        "format": FORMAT,
        "task": task,
        "split": Split.TRAIN.value,
        "robot": robot,
        "criteria": "as the evaluation manifests'",
        "candidate_pool": list(TRAIN_POOL),
        "accepted": accepted,
        "rejected": rejected,
        "versions": _versions(),
    }
    if not strict:
        data["declared"] = None if len(accepted) >= count else _why_short(accepted, rejected)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return data


def _write_robot_manifest(env: VABenchEnv, task: str, robot: str, log, max_tries: int | None, resume: bool) -> dict:
    """Another embodiment's manifest: its own screening, the Panda's demo seed, and ``declared``
    (why) when fewer than 20 seeds pass."""
    prior = ((), ())
    if resume and manifest_path(task, robot).exists():
        old = load_manifest(task, robot)
        prior = (old["accepted"], old["rejected"])
    accepted, rejected = screen(env, task, log=log, strict=False, max_tries=max_tries, prior=prior)
    data = {
        "format": FORMAT,
        "task": task,
        "robot": robot,
        "budget": task_class(task).budget,
        "criteria": "as the Panda's, with this robot's expert run",
        "candidate_pool": list(EVAL_POOL),
        "accepted": accepted,
        "rejected": rejected,
        "demo_seed": demo_seed(task),  # demonstrations stay the Panda's
        "declared": None if len(accepted) == SEEDS_PER_TASK else _why_short(accepted, rejected, max_tries),
        "versions": _versions(),
    }
    path = manifest_path(task, robot)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return data


def _why_short(accepted: list[int], rejected: list[dict], max_tries: int | None = None) -> str:
    """The declared reason: the commonest rejection kinds, counted, and whether the cap on tries
    (not the robot) stopped the screening."""
    kinds = Counter(r["reason"].split(":")[0].split(" at step")[0] for r in rejected)
    top = "; ".join(f"{k} ({n})" for k, n in kinds.most_common(3))
    texts = Counter(r["reason"].split(": ", 1)[-1] for r in rejected)  # the whole reason without its step
    if texts:
        (text, n), *_ = texts.most_common(1)
        top += f"; commonest ({n}): {text}"
    tried = len(accepted) + len(rejected)
    gave_up = not accepted and len(rejected) >= GIVE_UP_AFTER
    capped = not gave_up and max_tries is not None and tried >= max_tries
    stop = f"; stopped at the cap of {max_tries} tries (resume with --resume)" if capped else ""
    return f"{len(accepted)} of {tried} candidates accepted; rejected: {top or 'none'}{stop}"


def check_manifest(
    env: VABenchEnv, task: str, limit: int | None = None, log=print, split: str = Split.EVAL
) -> list[Verdict]:
    """Re-run the expert on the manifest's accepted seeds (and the demo seed); return failures."""
    data = load_manifest(task, env.config.robot, split)
    seeds = data["accepted"][:limit] if limit else data["accepted"]
    failures = []
    demo = (
        [data["demo_seed"]] if "demo_seed" in data and env.config.robot == Robot.PANDA else []
    )  # a robot's: the Panda's
    for seed in [*seeds, *demo]:
        v = probe(env, task, seed)
        log(f"[{task}] seed {seed}: {'ok' if v.ok else 'FAILED: ' + v.reason}")
        if not v.ok:
            failures.append(v)
    return failures
