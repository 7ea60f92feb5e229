"""Run one model through the harness on the verified seeds, in one process, and print the table.

This is the laptop path (and the main job until the Ray launcher exists): sequential episodes,
one env reused across them, one outcome row per episode appended to ``results.jsonl`` and a
full record per episode.

    python -m vabench.agents.evaluate                                  # oracle, every task, active
    python -m vabench.agents.evaluate --model random --protocol both --seeds 5
    python -m vabench.agents.evaluate --model openai/gpt-4o --api-key-env OPENAI_API_KEY --summary own
    python -m vabench.agents.evaluate --model hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct \\
        --api-base http://localhost:8000/v1 --seeds 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from vabench.envs import CAMERA_PRESETS, TASKS, EnvConfig, VABenchEnv

from .harness import HarnessConfig, run_episode
from .learning import summary_for_episode
from .models import LiteLLMModel, Model, ModelConfig, ModelError, make_model
from .records import EpisodeResult
from .summaries import SummaryStore, parse_summary_mode, resolve_summary


def evaluate(
    env,
    model: Model,
    tasks: list[str],
    protocols: list[str],
    out: Path,
    seeds: int | None = None,
    config: HarnessConfig | None = None,
    summary_mode: str = "none",
    summary_root: Path | None = None,
    log=print,
) -> list[EpisodeResult]:
    """Every (task, protocol, manifest seed) episode; a crash in one never costs another its row."""
    from vabench.envs.seeds import eval_seeds

    out = Path(out)
    if (out / "results.jsonl").exists():
        raise FileExistsError(f"{out} already holds results; choose a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    store = SummaryStore(summary_root or out / "summaries")
    if not isinstance(model, LiteLLMModel) and summary_mode != "none":
        log(f"{model.name} is an offline agent and reads no summary: summary {summary_mode} -> none")
        summary_mode = "none"
    if summary_mode.startswith("shared:"):  # fail before any episode, not half-way through
        for task in tasks:
            resolve_summary(store, summary_mode, model.name, task)
    rows = []
    with (out / "results.jsonl").open("a") as table:
        for task in tasks:
            try:
                summary, lost = summary_for_episode(store, summary_mode, model, task, out / "learning"), None
            except ModelError as e:  # infrastructure: this task's episodes cannot be judged
                summary, lost = None, f"summary learning could not reach the model: {e}"
                log(f"{task}: {lost}")
            for protocol in protocols:
                for seed in eval_seeds(task)[:seeds]:
                    if lost:
                        r = _unjudged(model, task, seed, protocol, summary_mode, lost)
                        table.write(json.dumps(r.row()) + "\n")
                        rows.append(r)
                        continue
                    r = run_episode(
                        env,
                        model,
                        task,
                        seed,
                        out / task / protocol / f"seed_{seed}",
                        protocol,
                        config,
                        summary=summary,
                        summary_source=summary_mode,
                    )
                    r.record = str(Path(task) / protocol / f"seed_{seed}" / r.record)
                    table.write(json.dumps(r.row()) + "\n")
                    table.flush()
                    rows.append(r)
                    log(
                        f"{task:28s} {protocol:7s} {seed:5d} {r.end_reason:17s} {r.steps:3d}/{r.budget:<3d} "
                        f"calls {r.model_calls:3d} ckpt {r.checkpoints_done}/{r.checkpoints_total} {r.wall_s:6.1f}s"
                        + (f"  {r.error}" if r.error else "")
                    )
    return rows


def _unjudged(model: Model, task: str, seed: int, protocol: str, summary_mode: str, error: str) -> EpisodeResult:
    return EpisodeResult(
        model=model.name,
        protocol=protocol,
        task=task,
        arms="",
        seed=seed,
        status="infra_error",
        success=False,
        end_reason="infra_error",
        steps=0,
        budget=0,
        summary_source=summary_mode,
        privileged=model.privileged,
        error=error,
    )


def table(rows: list[EpisodeResult]) -> str:
    """Success per (task, protocol), infra errors excluded from the rate as the paper does."""
    groups: dict[tuple[str, str], list[EpisodeResult]] = defaultdict(list)
    for r in rows:
        groups[(r.task, r.protocol)].append(r)
    lines = [f"{'task':28s} {'protocol':8s} {'success':>9s} {'rate':>6s} {'infra':>5s} {'mean steps':>10s}"]
    for (task, protocol), rs in sorted(groups.items()):
        judged = [r for r in rs if r.status == "ok"]
        ok = sum(r.success for r in judged)
        rate = f"{100 * ok / len(judged):5.1f}%" if judged else "   n/a"
        steps = sum(r.steps for r in judged) / len(judged) if judged else 0.0
        lines.append(
            f"{task:28s} {protocol:8s} {ok:4d}/{len(judged):<4d} {rate:>6s} {len(rs) - len(judged):5d} {steps:10.1f}"
        )
    if any(r.privileged for r in rows):
        lines.append("PRIVILEGED agent (reads simulator state): a harness ceiling, not a model score.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="oracle", help="oracle | random | replay | any LiteLLM model string")
    ap.add_argument("--task", action="append", choices=sorted(TASKS), help="default: every task")
    ap.add_argument("--protocol", choices=("active", "passive", "both"), default="active")
    ap.add_argument("--seeds", type=int, default=None, help="only the first N manifest seeds per task")
    ap.add_argument("--out", type=Path, default=None, help="default: results/evaluate-<time>")
    ap.add_argument("--camera", choices=sorted(CAMERA_PRESETS), default="default")
    ap.add_argument("--summary", default="none", help="none | own | shared:<model id>")
    ap.add_argument("--summary-root", type=Path, default=None, help="default: <out>/summaries")
    ap.add_argument("--api-base", default=None)
    ap.add_argument("--api-key-env", default=None, help="name of the variable holding the key (never the key)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--record", type=Path, default=None, help="replay: the events.jsonl to replay")
    args = ap.parse_args(argv)
    try:
        parse_summary_mode(args.summary)
    except ValueError as e:
        ap.error(f"--summary: {e}")
    extra = {"record": str(args.record)} if args.record else {}
    model = make_model(
        ModelConfig(
            model=args.model,
            api_base=args.api_base,
            api_key_env=args.api_key_env,
            timeout_s=args.timeout,
            max_tokens=args.max_tokens,
            extra=extra,
        )
    )
    out = args.out or Path("results") / time.strftime("evaluate-%Y%m%d-%H%M%S")
    protocols = ["active", "passive"] if args.protocol == "both" else [args.protocol]
    env = VABenchEnv(EnvConfig(camera=CAMERA_PRESETS[args.camera]))
    try:
        rows = evaluate(
            env, model, args.task or sorted(TASKS), protocols, out, args.seeds, None, args.summary, args.summary_root
        )
    finally:
        env.close()
    print()
    print(table(rows))
    print(f"records and results.jsonl in {out}")
    return 0 if rows and all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
