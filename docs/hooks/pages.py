"""The reference pages, made from the code each time the site builds (``docs/hooks/build.py``), never
committed: every config key with its default and meaning, the config groups, the tasks per track
and robot, the looks (render presets, robots, perturbations), the interventions, the outcome row and
the record's events. Each function returns one page's markdown."""

from __future__ import annotations

from pathlib import Path

from sources import (
    ROOT,
    constants,
    field_rows,
    first_sentence,
    flat,
    member_comments,
    rst,
    shown,
    table,
    yaml_data,
    yaml_header,
    yaml_keys,
)

CONF = ROOT / "conf"
GENERATED = "*Made from the code when the site builds ({src}); edit the code, not this page.*"


def _made(*sources: str) -> str:
    return GENERATED.format(src=", ".join(f"`{s}`" for s in sources))


# -- config keys ------------------------------------------------------------------------------------
def _allowed() -> dict[str, str]:
    """The values each condition key takes, from its rules (``vabench.core.condition.key``): its
    registry's names, and the words of its form."""
    from vabench.core.condition import KEYS, named, rule

    out = {}
    for key in KEYS:
        listed = named(rule(key, "choices") or rule(key, "check"))
        names = ", ".join(f"`{n}`" for n in listed) if hasattr(listed, "__iter__") else ""
        form = f"`{named(rule(key, 'form'))}`" if rule(key, "form") else ""
        out[key] = "; ".join(x for x in (names, form) if x)
    return out


def config_page() -> str:
    from vabench.agents.chat.harness_config import HarnessConfig
    from vabench.agents.chat.model import ModelConfig
    from vabench.core.condition import KEYS, default, rule
    from vabench.envs.config import RecordingConfig
    from vabench.run.config.run import PlanConfig, RayConfig, RunOptions

    out = [
        "# Config keys",
        "",
        _made("vabench/core/condition.py", "vabench/run/config/run.py", "conf/config.yaml", "the section dataclasses"),
        "",
        "Every key is set on the command line as `key=value` (`python -m vabench.launch key=value ...`);",
        "every default is declared once, in a dataclass, and `conf/` states only what differs. A misspelt",
        "key is one line naming the closest one. Groups (`model=`, `protocol=`, ...) are on",
        "[Config groups](groups.md).",
        "",
        "## Top-level keys (`conf/config.yaml`)",
        "",
    ]
    top = [(k, v, c) for k, v, c in yaml_keys(CONF / "config.yaml") if k not in ("defaults", "hydra")]
    out += [table(("key", "default", "meaning"), [(f"`{k}`", f"`{v}`", c) for k, v, c in top]), ""]
    allowed = _allowed()
    out += [
        "## The condition's keys (`Condition`, `vabench/core/condition.py`)",
        "",
        "Their defaults are the paper's measurement; any other value is a named departure, recorded in",
        "every outcome row and in the condition label, so its rows never pool with the paper's.",
        "",
    ]
    rows = [(f"`{k}`", shown(default(k)), allowed[k], rule(k, "about")) for k in KEYS]
    out += [table(("key", "default", "values", "meaning"), rows), ""]
    out += ["## Run options (`RunOptions`, `vabench/run/config/run.py`)", ""]
    out += [table(("key", "default", "meaning"), [(f"`{k}`", shown(v), c) for k, v, c in field_rows(RunOptions)]), ""]
    sections = (
        (
            "model",
            ModelConfig,
            "vabench/agents/chat/model.py",
            "How to reach one model; `conf/model/` sets what differs.",
        ),
        ("harness", HarnessConfig, "vabench/agents/chat/harness_config.py", "The agent loop's limits."),
        (
            "ray",
            RayConfig,
            "vabench/run/config/run.py",
            "Workers and episodes in flight ([the cluster](../cluster.md)).",
        ),
        ("recording", RecordingConfig, "vabench/envs/config.py", "The evaluator's recording views and video."),
        ("plan", PlanConfig, "vabench/run/config/run.py", "`plan=true` is `plan.enabled=true`."),
    )
    for name, cls, path, about in sections:
        out += [f"## `{name}.*` (`{cls.__name__}`, `{path}`)", "", about, ""]
        rows = [(f"`{name}.{k}`", shown(v), c) for k, v, c in field_rows(cls)]
        out += [table(("key", "default", "meaning"), rows), ""]
    return "\n".join(out)


# -- config groups ----------------------------------------------------------------------------------
def _sets(path: Path) -> str:
    data = yaml_data(path)
    sweep = ((data.pop("hydra", None) or {}).get("sweeper") or {}).get("params") or {}
    data.pop("defaults", None)
    typed = lambda v: f"[{','.join(map(str, v))}]" if isinstance(v, list) else str(v)  # noqa: E731  (as users type it)
    said = [f"`{k}={typed(v)}`" for k, v in flat(data)]
    said += [f"sweeps `{k}={v}`" for k, v in sweep.items()]
    return ", ".join(said)


def groups_page() -> str:
    from vabench.agents.models.kinds import OFFLINE_AGENTS

    out = ["# Config groups", "", _made("conf/"), ""]
    out += ["A group option is a file of `conf/<group>/`, chosen with `group=NAME` (`+experiment=NAME` and",
            "`+study=NAME` take a `+`: they have no default). Each sets only what differs from the",
            "dataclasses' defaults ([Config keys](config.md)).", ""]  # fmt: skip
    for group in sorted(p.name for p in CONF.iterdir() if p.is_dir()):
        plus = "+" if group in ("experiment", "study") else ""
        out += [f"## `{plus}{group}=`", ""]
        rows = []
        for f in sorted((CONF / group).glob("*.yaml")):
            about = yaml_header(f)
            if group == "model" and f.stem in OFFLINE_AGENTS:
                about = f"offline agent: {OFFLINE_AGENTS[f.stem].about}"
            rows.append((f"`{plus}{group}={f.stem}`", about, _sets(f)))
        out += [table(("option", "what it is", "what it sets"), rows), ""]
    return "\n".join(out)


# -- tasks ------------------------------------------------------------------------------------------
def _seeds(said: str) -> str:
    """``20: 1000,1002,...,1032`` as ``20 (1000-1032)``; a range or a reason as it is."""
    count, _, seeds = said.partition(": ")
    if not count.isdigit() or "," not in seeds:
        return said.replace("..", "-")
    listed = seeds.split(",")
    return f"{count} ({listed[0]}-{listed[-1]}, not all)"


def tasks_page() -> str:
    from vabench.core.vocab import Track
    from vabench.envs.cli.tasks import rows
    from vabench.envs.sim.embodiments import EMBODIMENTS
    from vabench.envs.tasks import task_class

    robots = list(EMBODIMENTS)
    out = ["# Tasks", "", _made("the task registry", "vabench/envs/seed_manifests/"), ""]
    out += ["Every registered task with its arms, step budget and verified seeds per robot (the seed",
            "manifests). `tasks=all` runs every task of the `track`; `python -m vabench.tasks --robot NAME`",
            "prints the same list.", ""]  # fmt: skip
    for track in Track:
        out += [f"## `track={track}`", ""]
        by_robot = {r: {row[0]: row[4] for row in rows(str(track), r)} for r in robots}
        body = []
        for name, _, arms, budget, _ in rows(str(track), robots[0]):
            cls = task_class(name)
            summary = "" if cls.summary_task == name else f" (summary of `{cls.summary_task}`)"
            seeds = [_seeds(by_robot[r][name]) for r in robots]
            body.append((f"`{name}`{summary}", arms, budget, cls.instruction, *seeds))
        out += [table(("task", "arms", "budget", "instruction", *robots), body), ""]
    return "\n".join(out)


# -- looks: render presets, robots, perturbations ---------------------------------------------------
def looks_page() -> str:
    from vabench.core.vocab import PERTURBATION_LEVELS, Render, Robot
    from vabench.envs import perturb
    from vabench.envs.perturb import KINDS, scene
    from vabench.envs.render import RENDER_PRESETS
    from vabench.envs.sim.embodiments import EMBODIMENTS, Embodiment

    out = ["# Render presets, robots and perturbations", ""]
    out += [_made("vabench/envs/render.py", "vabench/envs/sim/embodiments.py", "vabench/envs/perturb/"), ""]
    out += ["## `render=`", ""]
    said = member_comments(Render)
    rows = []
    for name, p in RENDER_PRESETS.items():
        q = lambda e: f"JPEG {e.quality}" + (f" (stored at {e.source_quality})" if e.source_quality else "")  # noqa: E731
        active = f"{p.active.width}x{p.active.height}, {q(p.active_encoding)}"
        passive = f"five {p.observer_size[0]}x{p.observer_size[1]}, {q(p.passive_encoding)}"
        rows.append((f"`{name}`", active, passive, f"{p.demo_fps:g} fps", said.get(Render(name).name, "")))
    out += [table(("preset", "active image", "passive views", "demos", "meaning"), rows), ""]
    out += ["## `robot=`", ""]
    said, fields_said = member_comments(Robot), member_comments(Embodiment)
    rows = [(f"`{n}`", e.dof, f"{e.base_z:g}", e.package or "(the Panda's own)", said.get(Robot(n).name, ""))
            for n, e in EMBODIMENTS.items()]  # fmt: skip
    out += [table(("robot", "arm DoF", "base height (m)", "example-robot-data package", "what it is"), rows), ""]
    out += [f"Base height: {fields_said['base_z']}.", ""]
    out += ["## `perturbation=<kind>:<level>`", ""]
    levels = ", ".join(map(str, PERTURBATION_LEVELS))
    out += [f"Levels {levels} (1 mild, 2 moderate, 3 strong); `none` is the paper's look.", ""]
    out += [table(("kind", "what changes"), [(f"`{k}`", v) for k, v in KINDS.items()]), ""]
    out += ["What a level means, per kind (the constants in the code):", ""]
    rows = [(f"`{n}`", f"`{v}`", c) for mod in (perturb.config, scene) for n, v, c in constants(mod)]
    out += [table(("constant", "value", "meaning"), rows), ""]
    return "\n".join(out)


# -- interventions ----------------------------------------------------------------------------------
def interventions_page() -> str:
    from vabench.core.interventions import MANIFESTS

    out = ["# Interventions", "", _made("vabench/core/interventions.py"), ""]
    out += ["Each intervention hands the model exactly one declared input beyond the paper's boundary",
            "(its manifest); `intervention=NAME` names it (`summary=expert` is `expert_summary`).", ""]  # fmt: skip
    rows = []
    for name, m in MANIFESTS.items():
        views = ", ".join(m.views) if m.views else ""
        rows.append((f"`{name}`", m.removes, "; ".join(m.adds) or "nothing", ", ".join(m.protocols), views))
    out += [table(("intervention", "removes", "what the model also receives", "protocols", "views"), rows)]
    return "\n".join(out)


# -- the outcome row and the record -----------------------------------------------------------------
def outcomes_page() -> str:
    from dataclasses import fields

    from vabench.results import outcomes

    out = ["# The outcome row", "", _made("vabench/results/outcomes.py"), ""]
    out += [f"One row per episode attempt, schema version {outcomes.SCHEMA_VERSION}. Columns are added, never",
            "renamed or dropped; `pandas.read_parquet(run_folder)` reads them.", ""]  # fmt: skip
    rows = [("`schema_version`", "int64", "", "the row's schema version")]
    for f in fields(outcomes.OutcomeRow):
        arrow = str(f.metadata["arrow"])
        default = "" if f.default is None else shown(f.default)
        rows.append((f"`{f.name}`", arrow, default, f.metadata.get("about", "")))
    out += [table(("column", "type", "default", "meaning"), rows), ""]
    history = [c for n, v, c in constants(outcomes) if n == "SCHEMA_VERSION"]
    if history:
        out += [f"Schema history: {history[0]}", ""]
    return "\n".join(out)


def events_page() -> str:
    from vabench.results.recordfile import Event

    said = member_comments(Event)
    out = ["# Record events", "", _made("vabench/results/recordfile.py"), ""]
    out += [f"{rst(' '.join(Event.__doc__.split()))} `events.jsonl` holds one event per line.", ""]
    rows = [(f"`{e.value}`", said.get(e.name, "")) for e in Event]
    out += [table(("type", "what it carries"), rows)]
    return "\n".join(out)


# -- commands ---------------------------------------------------------------------------------------
def commands_page() -> str:
    import ast

    out = ["# Commands", "", _made("each command's module docstring"), ""]
    out += ["Every command is `.venv/bin/python -m MODULE --help` for its options.", ""]
    mains = sorted(ROOT.glob("vabench/**/__main__.py")) + sorted(
        p for p in ROOT.glob("vabench/**/*.py") if p.name != "__main__.py" and '__name__ == "__main__"' in p.read_text()
    )
    rows = []
    for path in mains:
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts[:-1] if path.name == "__main__.py" else rel.parts)
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if path.name == "__main__.py" and (not doc or "see :mod:" in doc):  # the package says what it is
            doc = ast.get_docstring(ast.parse((path.parent / "__init__.py").read_text())) or ""
        rows.append((f"`python -m {module}`", rst(first_sentence(doc))))
    out += [table(("command", "what it does"), sorted(rows))]
    return "\n".join(out)


PAGES = {
    "reference/config.md": config_page,
    "reference/groups.md": groups_page,
    "reference/tasks.md": tasks_page,
    "reference/looks.md": looks_page,
    "reference/interventions.md": interventions_page,
    "reference/outcomes.md": outcomes_page,
    "reference/events.md": events_page,
    "reference/commands.md": commands_page,
}
