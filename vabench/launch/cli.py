"""The entry point: ``--help``, the words users type (checked before Hydra, :mod:`.words`), then
Hydra's run or sweep; the exit status is the worst over the jobs run (:class:`~.exits.Exit`)."""

from __future__ import annotations

import sys

from vabench.launch import sweep
from vabench.launch.exits import Exit, leave
from vabench.launch.words import CONF, canonical, composed, misspelt, wrong_word

EXAMPLES = """\
usage: python -m vabench.launch [+experiment=NAME] [key=value ...] [-m]

Runs episodes into one run folder, results_dir/run_id (rerun the same run_id to resume).

examples:
  python -m vabench.launch +experiment=smoke                       # oracle, two tasks, on Ray
  python -m vabench.launch +experiment=smoke ray.address=none      # no Ray: in this process
  python -m vabench.launch model=servo protocol=both seeds=2 tasks=[grasp_single_cube,place_single_cube]
  python -m vabench.launch model=posetext intervention=object_poses perturbation=blur:2 robot=ur5 seeds=2
  OPENAI_API_KEY=... python -m vabench.launch model=openai model.id=openai/gpt-4o summary=own
  python -m vabench.launch model=vllm model.id=hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct model.api_base=http://host:8000/v1
  python -m vabench.launch model=human human.operators=2 tasks=[grasp_single_cube] seeds=4   # people: one URL each
  python -m vabench.launch -m summary=own,none +experiment=summary_sources   # a sweep: one folder per job

lookups:
  python -m vabench.launch +experiment=main model=openai plan=true   # calls, tokens, dollars, time; runs nothing
                                                # (plan.calibrate=RUN, plan.difference=D)
  python -m vabench.tasks [--robot ur5] [--track base]   # tasks: track, arms, step budget, verified seeds
  python -m vabench.launch --cfg job [...]      # the composed config, without running
  python -m vabench.launch --hydra-help         # Hydra's own options

exit status: 0 every episode judged; 2 refused or stopped (one line says why); 3 the run ended with
episodes not judged (infra_error rows; rerun the same run_id); 130 interrupted; 1 a crash.
"""


def _condition_lines() -> list[str]:
    """Each condition key with what it may be (the paper's value first), from its rules
    (vabench.core.condition.key)."""
    from vabench.core.condition import KEYS, default, named, rule, word

    lines = ["condition keys (key=value; the paper's value is the default; any other is recorded in every row):"]
    for key in KEYS:
        listed = named(rule(key, "choices") or rule(key, "check"))  # a registry lists its names
        names = [str(v) for v in listed] if hasattr(listed, "__iter__") else []
        values = [word(default(key)), *(v for v in names if v != word(default(key)))] if names else []
        form = named(rule(key, "form")) if rule(key, "form") else ""
        lines.append(f"  {key:<13} {', '.join(values) or form}  (default {word(default(key))})")
        lines += [f"                {form}"] if values and form else []
    return lines


def help_text() -> str:
    """The examples, the config groups, the condition keys, the top-level keys and the sections."""
    lines = [EXAMPLES, "config groups (group=option):"]
    for group in sorted(p for p in CONF.iterdir() if p.is_dir()):
        options = sorted(f.stem for f in group.glob("*.yaml"))
        plus = "+" if group.name in ("experiment", "study") else ""
        lines.append(f"  {plus}{group.name:<11} {', '.join(options)}")
    lines += ["", *_condition_lines()]
    node = composed()
    from vabench.run.config.choices import CONDITION_KEYS

    keys = [k for k, v in node.items() if not isinstance(v, dict) and k not in CONDITION_KEYS]
    lines += ["", "top-level keys (key=value; conf/config.yaml explains each):", "  " + ", ".join(keys)]
    lines += ["", "sections (section.key=value; defaults and comments in their dataclasses):"]
    lines += [f"  {k:<11} {', '.join(map(str, v))}" for k, v in node.items() if isinstance(v, dict) and k != "hydra"]
    return "\n".join(lines)


def cli() -> None:
    """``--help`` / ``-h`` print :func:`help_text`; anything else goes to Hydra once every word is
    known. The exit status is the worst over the jobs run."""
    if any(a in ("--help", "-h") for a in sys.argv[1:]):
        print(help_text())
        return
    sys.argv[1:] = canonical(sys.argv[1:])
    wrong = wrong_word(sys.argv[1:]) or misspelt(sys.argv[1:])
    if wrong:
        leave(Exit.REFUSED, f"config error: {wrong}")
    from vabench.launch.job import main

    main()
    raise SystemExit(max([int(Exit.JUDGED), *sweep.worst.values()]))
