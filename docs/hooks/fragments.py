"""Tables that hand-written pages embed (``<!-- generated:NAME -->``), made when the site builds:
the paper's study on docs/study.md (every experiment in ``conf/experiment/``, its jobs, episodes,
model calls, dollars and hours, from the same code ``plan=true`` runs: the priors and LiteLLM's local
price map, for one reference model), the launcher's exit statuses, and each robot's screened seeds."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from sources import ROOT, table, yaml_data, yaml_header

REFERENCE = ("model=openai", "model.id=openai/gpt-4o")
LOCAL = ("model.id=hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct", "model.api_base=http://localhost:8000/v1")
STUDY = ("main", "passive_ablation", "transfer", "long_horizon")  # conf/study/paper.yaml's experiments


def _jobs(name: str) -> list[dict[str, str]]:
    """The top-level keys each job of an experiment's sweep sets (one empty dict: no sweep)."""
    data = yaml_data(ROOT / "conf" / "experiment" / f"{name}.yaml")
    params = ((data.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    choices = [[(k, v) for v in str(values).split(",")] for k, values in params.items()]
    return [dict(combo) for combo in itertools.product(*choices)]


def _runs(name: str) -> list:
    """The validated RunConfig of each job, as ``plan=true`` would build it (nothing is written):
    composed once, each job's sweep keys (top-level condition keys) set on a copy."""
    from omegaconf import OmegaConf

    from vabench.launch.words import composed
    from vabench.run.config.run import from_config

    model = LOCAL if name == "local_models" else REFERENCE
    base = composed([f"+experiment={name}", *model]) | {"run_id": "plan", "results_dir": "results"}
    runs = []
    for job in _jobs(name):
        resolved = OmegaConf.to_container(OmegaConf.create(base | job), resolve=True)
        runs.append(from_config(resolved, Path("results/plan"), log=lambda _: None))
    return runs


def _sum(parts: list[dict]) -> dict:
    out = {}
    for key in ("episodes", "calls", "usd", "hours"):
        values = [p[key] for p in parts]
        out[key] = None if any(v is None for v in values) else sum(values)
    return out


def _row(name: str, size: dict, jobs: int) -> tuple:
    usd = "local (no price)" if size["usd"] is None else f"${size['usd']:,.0f}"
    return (f"`+experiment={name}`", jobs, f"{size['episodes']:,.0f}", f"{size['calls']:,.0f}", usd,
            f"{size['hours']:,.1f}")  # fmt: skip


def study_table() -> str:
    """The experiments' sizes and costs, and the whole study's (``+study=paper``)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from vabench.plan.report import totals

    rows, sizes = [], {}
    for path in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        runs = _runs(path.stem)
        sizes[path.stem] = _sum([totals(run) for run in runs])
        rows.append((*_row(path.stem, sizes[path.stem], len(runs)), yaml_header(path).split(". ")[0]))
    study = _sum([sizes[n] for n in STUDY])
    rows.append((*_row("main", study, len(STUDY)), "the paper's study: " + ", ".join(STUDY)))
    rows[-1] = ("`+study=paper`", *rows[-1][1:])
    head = ("experiment", "jobs", "episodes", "model calls", "gpt-4o $", "hours (1 model)", "what it is")
    note = (
        f"*Made when the site builds from `conf/experiment/`, the seed manifests and the plan's priors, for "
        f"`{' '.join(REFERENCE)}` (`local_models`: a vLLM server, no price); wall hours at the default "
        "episodes in flight and no rate limit. Your model's figures: add `plan=true` to its command.*"
    )
    return table(head, rows) + "\n\n" + note


def exit_table() -> str:
    """The launcher's exit statuses (``vabench.launch.exits.Exit``) and their comments."""
    from sources import member_comments

    from vabench.launch.exits import Exit

    said = member_comments(Exit)
    return table(("status", "name", "meaning"), [(int(e), f"`{e.name}`", said.get(e.name, "")) for e in Exit])


def screened_table() -> str:
    """Per task, each robot's accepted / tried seeds (its manifest's ``accepted`` and ``rejected``), and
    ``declared`` when it can do none."""
    from vabench.core.vocab import Robot, Track
    from vabench.envs.seeds import load_manifest
    from vabench.envs.sim.embodiments import EMBODIMENTS
    from vabench.envs.tasks import tasks_of_track

    robots = [r for r in EMBODIMENTS if r != Robot.PANDA]
    rows = []
    for track in Track:
        for task in tasks_of_track(track):
            cells = []
            for robot in robots:
                try:
                    m = load_manifest(task, robot)
                except FileNotFoundError:
                    cells.append("not screened")
                    continue
                accepted, tried = len(m["accepted"]), len(m["accepted"]) + len(m.get("rejected", []))
                cells.append(f"{accepted} / {tried}" + (" (declared)" if not accepted else ""))
            rows.append((f"`{task}`", *cells))
    return table(("task", *(f"{r} accepted / tried" for r in robots)), rows)
