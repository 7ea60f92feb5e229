"""The README and the docs site stay true: the README opens with the two commands and fits on a page,
the site builds with ``mkdocs build --strict`` (its reference pages made from the code), the plan
the README quotes is what the plan prints, and no hand-written page names a config key, group
option, condition value, task, command, file or identifier the code does not have."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TWO_COMMANDS = (  # the README's opening block, as it has always been
    "```bash\n"
    "./scripts/main.sh    # set up what is missing, then run the smoke experiment on Ray with the offline oracle and "
    "print the table\n"
    "./scripts/test.sh    # set up what is missing, then run the test suite (what CI runs; about 22 minutes on 2 "
    "cores)\n"
    "```"
)
# Names the Extending walk-throughs register themselves (tests/test_extending.py runs them).
WALKTHROUGH = {"place_small_cube", "open_then_stop", "xarm7_high", "posterize", "PlaceSmallCube", "OpenThenStop"}
SECTIONS = ("model", "harness", "ray", "recording", "plan")
PLACEHOLDER = re.compile(r"[<>$]|\.\.\.|NAME|\bN\b|^[A-Z]$")
# Names of other projects the pages mention (LeRobot's push_to_hub, a UR5 link in its URDF).
EXTERNAL = {"push_to_hub", "wrist_1_link", "upper_arm_link"}
TASKLIKE = re.compile(r"^(grasp|place|click|beat|handover|lift|put)_[a-z0-9_]+$")


def pages() -> list[Path]:
    """The hand-written pages: the README and docs/**/*.md (generated pages are never on disk)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)]


# -- what the code has ------------------------------------------------------------------------------
@cache
def config_keys() -> frozenset[str]:
    """Every dotted key of the composed config (with the summary group that has a source)."""
    from vabench.launch.words import composed

    def flat(node, prefix=""):
        for k, v in node.items():
            yield f"{prefix}{k}"
            if isinstance(v, dict) and k not in ("extra", "hydra"):
                yield from flat(v, f"{prefix}{k}.")

    keys = set(flat(composed(["summary=shared"]))) | set(flat(composed()))
    return frozenset(keys | {"plan"})


@cache
def groups() -> dict[str, set[str]]:
    conf = ROOT / "conf"
    return {p.name: {f.stem for f in p.glob("*.yaml")} for p in conf.iterdir() if p.is_dir()}


@cache
def tasks() -> frozenset[str]:
    from vabench.envs.tasks import TASKS

    return frozenset(TASKS)


SOURCES = (".py", ".yaml", ".json", ".html", ".css", ".ipynb", ".sh", ".js")


@cache
def universe() -> frozenset[str]:
    """Every identifier-shaped word in the code, configs, tests, benchmarks, scripts and notebook (this
    file's planted mistakes aside)."""
    words: set[str] = set()
    for folder in ("vabench", "conf", "tests", "benchmarks", "scripts", "experiments"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in SOURCES and path.is_file() and path != Path(__file__).resolve():
                words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(errors="replace")))
    return frozenset(words)


# -- what a page says -------------------------------------------------------------------------------
def _fenced(text: str) -> list[tuple[str, int, str]]:
    """(language, first line number, body) of every fenced block."""
    out = []
    for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        out.append((m.group(1), text.count("\n", 0, m.start()) + 2, m.group(2)))
    return out


def _spans(text: str) -> list[tuple[int, str]]:
    """(line number, content) of every inline code span outside fenced blocks."""
    bare = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.MULTILINE | re.DOTALL)
    return [(bare.count("\n", 0, m.start()) + 1, m.group(1)) for m in re.finditer(r"`([^`\n]+)`", bare)]


def _logical_lines(body: str, first: int) -> list[tuple[int, str]]:
    """(line number, text) of a shell block's commands, a line ending in ``\\`` joined to the next."""
    out, start, parts = [], None, []
    for i, line in enumerate(body.split("\n")):
        start = first + i if start is None else start
        parts.append(line.split(" # ")[0].rstrip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            out.append((start, " ".join(parts)))
            start, parts = None, []
    return out


def _launch_args(body: str, first: int) -> list[tuple[int, str]]:
    """(line number, argument) of every ``vabench.launch`` / ``scripts/main.sh`` command in a shell block."""
    out = []
    for n, line in _logical_lines(body, first):
        m = re.search(r"(?:-m vabench\.launch|scripts/main\.sh)\b(.*)", line)
        out += [(n, a) for a in (m.group(1).split() if m else [])]
    return out


def _is_config_claim(token: str) -> bool:
    """A ``key=value`` in a prose code span claims a config key when its key is one vabench's config
    speaks of (a group, a condition key, a top-level key, a section's key); other spans with ``=``
    are Python keyword arguments or another tool's options."""
    key = token.partition("=")[0].lstrip("+~")
    top = {k for k in config_keys() if "." not in k} | set(groups())
    return key in top or key.split(".")[0] in (*SECTIONS, "summary", "hydra")


def claims(path: Path) -> list[tuple[int, str, str]]:
    """(line, kind, text) of what a page claims exists: config arguments (every ``key=value`` of a
    launch command in a shell block, and config-shaped ones in code spans), section keys named in the
    text, commands, files and single backticked identifiers."""
    text = path.read_text()
    out = []
    for lang, first, body in _fenced(text):
        if lang in ("bash", "sh"):
            out += [(n, "arg", a) for n, a in _launch_args(body, first) if "=" in a and not a.startswith("-")]
            out += [(first + i, "module", m) for i, line in enumerate(body.split("\n"))
                    for m in re.findall(r"python -m (vabench[\w.]*)", line)]  # fmt: skip
    for n, span in _spans(text):
        if "(" not in span:  # a call's keyword arguments are Python, not config
            out += [(n, "arg", tok) for tok in span.split() if "=" in tok and _is_config_claim(tok)]
        out += [(n, "module", m) for m in re.findall(r"python -m (vabench[\w.]*)", span)]
        if re.fullmatch(r"(vabench|docs|tests|benchmarks|conf|scripts|experiments)/[\w./-]*(/|\.\w+)", span):
            out.append((n, "path", span))
        elif re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", span):
            out.append((n, "name", span))
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(rf"(?<![\w./$(-])(?:{'|'.join(SECTIONS)})\.[a-z_]+(?![\w(=])", line):
            out.append((n, "section", m.group(0)))
    return out


def _placeholder(value: str) -> bool:
    return bool(PLACEHOLDER.search(value))


def _walkthrough(text: str) -> bool:
    """A name the Extending walk-throughs register (or a file they would add)."""
    return any(name in text for name in WALKTHROUGH)


def _config_problem(text: str) -> str | None:
    """Why ``key=value`` is no config argument of today's launcher, or None."""
    from vabench.core.errors import closest
    from vabench.run.config.choices import CONDITION_KEYS, MOVED, condition_keys

    key, _, value = text.partition("=")
    name = key.lstrip("+~")
    values = [v for v in re.split(r"[,|]", value.strip("[]")) if v and not _placeholder(v) and not _walkthrough(v)]
    if name.startswith(("hydra", "model.extra.")) or _placeholder(name) or name == "key":
        return None
    if name in MOVED:
        return f"'{name}' is now '{MOVED[name]}'"
    if name in groups():
        bad = [v for v in values if v not in groups()[name]]
        return f"{name}={bad[0]}: no such option (conf/{name}/)" if bad else None
    if name in CONDITION_KEYS:
        for v in values:
            try:
                condition_keys({name: v})
            except Exception as e:  # noqa: BLE001 (the check's one line is the finding)
                return f"{text}: {e}"
        return None
    if name == "tasks":
        bad = [v for v in values if v != "all" and v not in tasks()]
        return f"tasks: no task {bad[0]} (did you mean {closest(bad[0], tasks())}?)" if bad else None
    if name not in config_keys():
        near = closest(name, config_keys())
        return f"unknown config key '{name}'" + (f" (did you mean '{near}'?)" if near else "")
    return None


def problem(kind: str, text: str) -> str | None:
    """Why a claim names something the code does not have, or None."""
    from vabench.core.errors import closest
    from vabench.run.config.choices import MOVED

    if kind == "module":
        module = ROOT / Path(*text.split("."))
        ok = module.with_suffix(".py").is_file() or (module / "__main__.py").is_file()
        return None if ok else f"no module {text}"
    if kind == "path":
        there = (ROOT / text.rstrip("/")).exists()
        return None if there or _placeholder(text) or _walkthrough(text) or "*" in text else f"no file {text}"
    if kind == "name":
        if text in universe() or text in EXTERNAL or _walkthrough(text):
            return None
        near = f" (did you mean {closest(text, tasks())}?)" if TASKLIKE.match(text) else ""
        return f"`{text}` is nowhere in the code{near}"
    if kind == "section":
        if text in config_keys() or text in MOVED:
            return None
        section, key = text.split(".", 1)
        near = closest(key, [k.split(".", 1)[1] for k in config_keys() if k.startswith(section + ".")])
        return f"unknown config key '{text}'" + (f" (did you mean '{section}.{near}'?)" if near else "")
    return _config_problem(text)


def findings(paths: list[Path]) -> list[str]:
    out = []
    for path in paths:
        for line, kind, text in claims(path):
            why = problem(kind, text)
            if why:
                out.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    return out


# -- the tests --------------------------------------------------------------------------------------
def test_no_page_names_a_key_task_column_or_file_the_code_does_not_have():
    found = findings(pages())
    assert not found, "hand-written docs name what the code does not have:\n" + "\n".join(found)


def test_the_drift_check_catches_a_wrong_key_a_wrong_task_and_a_wrong_column(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Run `model.timeout_secs=60` with `tasks=[grasp_single_cubes]`; the row's `cost_dollars` says it.\n"
        "```bash\n.venv/bin/python -m vabench.launch protocol=sideways render=huge\n```\n"
    )
    found = "\n".join(problem(k, t) or "" for _, k, t in claims(page))
    for wrong in ("model.timeout_secs", "grasp_single_cubes", "cost_dollars", "protocol=sideways", "render"):
        assert wrong in found, found
    page.write_text("Run `model.timeout_s=60 tasks=[grasp_single_cube]`; the row's `cost_usd` says it.\n")
    assert not [problem(k, t) for _, k, t in claims(page) if problem(k, t)]


def test_the_readme_opens_with_the_two_commands_and_fits_on_a_page():
    text = (ROOT / "README.md").read_text()
    assert text.split("\n\n", 2)[1] == TWO_COMMANDS
    assert len(text.splitlines()) <= 250
    for script in ("scripts/main.sh", "scripts/test.sh"):
        assert os.access(ROOT / script, os.X_OK)


def test_the_plan_the_readme_quotes_is_what_the_plan_prints():
    """The README's cost lines for one model on one task come from the plan itself, today."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from omegaconf import OmegaConf

    from vabench.launch.words import canonical, composed
    from vabench.plan.report import plan_text
    from vabench.run.config.run import from_config

    text = (ROOT / "README.md").read_text()
    command = re.search(r"-m vabench\.launch (.*plan=true)\n", text).group(1).split()
    quoted = re.search(r"```text\n(plan of run .*?)```", text, re.DOTALL).group(1)
    cfg = composed(canonical(command)) | {"run_id": "readme", "results_dir": "results"}
    run = from_config(OmegaConf.to_container(OmegaConf.create(cfg), resolve=True), Path("results/readme"))
    printed = plan_text(run, run.plan).splitlines()
    for line in quoted.splitlines()[1:]:
        if line.strip() != "...":
            assert any(p.startswith(line.removesuffix("...)").rstrip()) for p in printed), (line, printed)


def test_the_site_builds_with_strict(tmp_path):
    """``mkdocs build --strict``: every nav page exists, every link and anchor resolves, and the
    reference pages are made from the code."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    config = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "model.max_cost_usd" in config and "harness.max_episode_cost_usd" in config
    tasks_page = (tmp_path / "site" / "reference" / "tasks" / "index.html").read_text()
    assert all(t in tasks_page for t in tasks())
    assert "generated:" not in (tmp_path / "site" / "study" / "index.html").read_text()
    assert not list(DOCS.glob("reference/config.md")), "generated pages are never written into docs/"


def test_one_model_on_one_task_is_on_the_first_screen():
    """A new user finds how to run one real model on one task in the first lines of the site."""
    first = "\n".join((DOCS / "index.md").read_text().splitlines()[:12])
    assert "model=openai tasks=[grasp_single_cube]" in first and "plan=true" in first and "run_id=" in first


def test_every_config_key_says_what_it_means():
    """The reference page's meanings are the fields' comments (a condition key's: its ``about``): a key
    without one would show none."""
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        from sources import field_rows, yaml_keys
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    from vabench.agents.chat.harness_config import HarnessConfig
    from vabench.agents.chat.model import ModelConfig
    from vabench.core.condition import KEYS, rule
    from vabench.envs.config import RecordingConfig
    from vabench.run.config.run import PlanConfig, RayConfig, RunOptions

    silent = [f"{cls.__name__}.{k}" for cls in (ModelConfig, HarnessConfig, RayConfig, RecordingConfig, PlanConfig,
              RunOptions) for k, _, said in field_rows(cls) if not said]  # fmt: skip
    silent += [f"Condition.{k}" for k in KEYS if not rule(k, "about")]
    silent += [f"conf/config.yaml {k}" for k, _, said in yaml_keys(ROOT / "conf" / "config.yaml")
               if not said and k not in ("defaults", "hydra")]  # fmt: skip
    assert not silent, f"config keys without a comment saying what they mean: {silent}"
