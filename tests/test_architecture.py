"""The architecture as rules a change can break: the import graph (no circle, no upward import,
analysis free of simulator/Ray/agent code), one task registry that agrees with the seed manifests
and the paper's table, and module size."""

from __future__ import annotations

import ast
import json
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from vabench.core import paper
from vabench.core.errors import UnknownName
from vabench.core.vocab import SEEDS_PER_TASK, TRACKS, arms_label
from vabench.envs.seeds import FORMAT, MANIFEST_DIR
from vabench.envs.tasks import TASKS, demo_tasks, registry, task_class, tasks_of_track

ROOT = Path(__file__).resolve().parents[1] / "vabench"

# Layers, lowest first, one folder each: a module may import its own layer and the ones before it,
# never later ones. A folder inside a layer's folder is a layer of its own (agents/chat, run/config).
LAYERS = [
    "vabench.core",  # the words and types: errors, Registry, vocab, checks, paper, condition, episodes
    "vabench.results",  # what a run folder holds: outcome rows and table, episode records, media, bundles
    "vabench.envs",  # the simulator; the env API is the privilege boundary (its own order: WITHIN)
    "vabench.gym",  # the Gymnasium envs over the env API
    "vabench.agents.chat",  # the chat harness: the model interface, protocol, prompts, dialogue, history, tools
    "vabench.agents.models",  # the things that answer: LiteLLM (cache, rate limits), offline agents, policy
    "vabench.agents.summaries",  # demonstration summaries: learned, stored, expert-written
    "vabench.agents",  # the episode loop
    "vabench.analysis",
    "vabench.export",  # datasets from run folders and demonstrations: records and envs, no agents
    "vabench.learn",  # the learned baseline: reads exports, trains (torch); serve_policy serves it
    "vabench.review",
    "vabench.run.config",  # what a run is: its validated config and its episodes
    "vabench.run.folder",  # the run folder's bookkeeping: lock, writes, state, provenance
    "vabench.run.actors",  # the Ray-facing workers and their backends
    "vabench.plan",  # plan=true: what a run will cost
    "vabench.run",  # the driver: a run's episodes, summaries, progress and stops
    "vabench.human",  # model=human: people play through seats (run.seat) on the review app's access layer
    "vabench.verify",
    "vabench.site",  # reads runs as the review app does, and verify's row-against-record check
    "vabench.launch",
    "vabench.judge",  # labels episodes with a model or the proxies: reads run folders, takes launch's model words
    "vabench.mcp",  # python -m vabench.mcp: a run's episodes played by MCP clients through seats (launch's words)
]
# python -m vabench.<name> needs a module at the top: the commands, above every layer.
COMMANDS = ("vabench.tasks", "vabench.serve_policy", "vabench.bundle")
# Inside a layer's folder, where its modules are files: their order, lowest first (longest prefix).
WITHIN = {
    "vabench.envs": [
        ("vabench.envs.actions", "vabench.envs.control", "vabench.envs.state"),
        ("vabench.envs.sim",),
        ("vabench.envs.objects", "vabench.envs.privileged", "vabench.envs.render"),
        ("vabench.envs.tasks",),
        ("vabench.envs.env", "vabench.envs"),
        ("vabench.envs.seeds",),
        ("vabench.envs.demo_recorder",),
        ("vabench.envs.cli",),
    ],
}
RUN_LEVEL = ("vabench.run", "vabench.plan", "vabench.launch")
READERS = ("vabench.envs", "vabench.agents", *RUN_LEVEL)  # what code that only reads run folders never imports
ISOLATED = {
    "vabench.analysis": READERS,
    "vabench.agents": ("vabench.analysis",),
    "vabench.review": READERS,
    "vabench.export": (
        "vabench.agents",
        "vabench.run.actors",
        "vabench.run",
        "vabench.run.folder",
        "vabench.launch",
    ),  # no Ray
    "vabench.site": (*READERS, "vabench.verify.check", "vabench.verify.resim"),
}
# third-party frameworks that only these modules may import
CONFINED = {
    "ray": ("vabench.run.actors.backends",),
    "hydra": ("vabench.launch.job", "vabench.launch.sweep", "vabench.launch.words", "vabench.run.config.sections"),
    "litellm": ("vabench.agents.models.llm", "vabench.agents.chat.tokens"),  # tokens: the tokenizers
    "fastapi": ("vabench.review.app", "vabench.human.app"),
    "uvicorn": ("vabench.review.__main__", "vabench.human.serve", "vabench.mcp.__main__"),
    "imageio": ("vabench.results.media",),
    "av": ("vabench.results.media",),  # PyAV: the videos' encoder
    "gymnasium": ("vabench.gym", "vabench.gym.env", "vabench.gym.spaces"),  # the gym extra
    "websockets": ("vabench.agents.models.policy_wire", "vabench.serve_policy"),  # the policy extra
    "torch": ("vabench.learn.model", "vabench.learn.train", "vabench.learn.policy"),  # the learn extra
    "mcp": ("vabench.mcp.server", "vabench.mcp.__main__"),  # the mcp extra
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """Every vabench module ``name`` imports, at module level or inside a function."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:  # vabench.envs.tasks.registry.TASKS -> the module
                t = t.rpartition(".")[0]
            if t.startswith("vabench"):
                out.add(t)
    out.discard(name)
    return out


EDGES = {(m, i) for m in MODULES for i in imports_of(m)}


def layer(name: str) -> tuple[int, int] | None:
    """The layer of module ``name``: (its folder's place in LAYERS, its place inside the folder by
    WITHIN), the commands above all; None where LAYERS names none."""
    if name in COMMANDS:
        return (len(LAYERS), 0)
    found = [(len(f), k) for k, f in enumerate(LAYERS) if name == f or name.startswith(f + ".")]
    if not found:
        return None
    k = max(found)[1]
    groups = WITHIN.get(LAYERS[k], ())
    inner = [(len(p), j) for j, group in enumerate(groups) for p in group if name == p or name.startswith(p + ".")]
    return (k, max(inner)[1] if inner else 0)


def test_the_layers_are_the_folders():
    """LAYERS maps one to one onto folders: each layer is a package, every package at the top of
    vabench/ is a layer, and the only modules at the top are the commands."""
    packages = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    assert set(LAYERS) <= packages and len(set(LAYERS)) == len(LAYERS)
    top = {m for m in MODULES if m.count(".") == 1}
    assert top & packages == {f for f in LAYERS if f.count(".") == 1}
    assert top - packages == set(COMMANDS)


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in MODULES if m != "vabench" and layer(m) is None)
    assert unplaced == [], f"add each to LAYERS, at the place its imports allow: {unplaced}"


def test_the_import_graph_has_no_circle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for a, b in EDGES:
        graph[a].add(b)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        pytest.fail(f"import circle: {' -> '.join(e.args[1])}")


def test_no_module_imports_a_layer_above_its_own():
    placed = {m for m in MODULES if m != "vabench" and layer(m) is not None}  # the others fail the test above
    upward = [(a, b) for a, b in EDGES if a in placed and b in placed and layer(b) > layer(a)]
    assert upward == []


def third_party(name: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out |= {m.split(".")[0] for m in mods}
    return out


def within(name: str, packages: tuple[str, ...]) -> bool:
    """``name`` is one of ``packages`` or inside one (vabench.results.layout is not inside vabench.run)."""
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_analysis_imports_no_simulator_ray_or_agent_code():
    bad = [(a, b) for a, b in EDGES for p, banned in ISOLATED.items() if within(a, (p,)) and within(b, banned)]
    assert within("vabench.run.driver", RUN_LEVEL) and not within("vabench.results.layout", RUN_LEVEL)
    assert bad == []
    analysis = set().union(*(third_party(m) for m in MODULES if m.startswith("vabench.analysis")))
    assert not analysis & {"sapien", "mplib", "ray", "litellm", "hydra"}


def test_ray_hydra_and_litellm_stay_in_their_modules():
    strays = {
        lib: sorted(m for m in MODULES if lib in third_party(m) and m not in owners) for lib, owners in CONFINED.items()
    }
    assert strays == {lib: [] for lib in CONFINED}
    assert all(lib in third_party(owners[0]) for lib, owners in CONFINED.items())  # the rule sees them


def test_the_rules_see_the_edges_they_police():
    """The graph is real: known edges are found (else every rule above passes vacuously)."""
    assert ("vabench.envs.sim.executor", "vabench.envs.actions") in EDGES
    assert ("vabench.agents.models.kinds", "vabench.agents.models.offline") in EDGES
    assert ("vabench.envs.tasks.heldout", "vabench.envs.tasks.grasp_single_cube") in EDGES
    assert ("vabench.agents.summaries.demo_tools", "vabench.envs.tasks") in EDGES  # a lazy import counts


def test_no_module_is_longer_than_400_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


# -- the task registry: one source of truth ----------------------------------------------------------


def test_every_registered_task_has_a_track_and_a_manifest_of_verified_seeds():
    for name, cls in TASKS.items():
        assert cls.track in TRACKS and cls.summary_task in TASKS and cls.demos, name
        manifest = json.loads((MANIFEST_DIR / f"{name}.json").read_text())
        assert (manifest["format"], manifest["task"]) == (FORMAT, name)
        assert len(manifest["accepted"]) >= SEEDS_PER_TASK and manifest["budget"] == cls.budget, name
    assert {p.stem for p in MANIFEST_DIR.glob("*.json")} == set(TASKS)  # no manifest without a task


def test_the_paper_table_agrees_with_the_registry():
    for t in paper.PAPER_TASKS:
        cls = task_class(t.name)
        assert (cls.track, arms_label(cls.arms)) == (t.track, t.arms), t.name
        assert cls.summary_task == (t.base or t.name), t.name
    assert (paper.PAPER_COUNTS, len(paper.PAPER_HELD_OUT)) == ({"single": 11, "dual": 3, "all": 14}, 7)
    assert set(paper.PAPER_FAMILIES) == set(tasks_of_track("base")) == set(demo_tasks())


def test_held_out_variants_and_the_basket_take_their_demos_from_the_registry():
    for name in tasks_of_track("transfer"):
        cls = task_class(name)
        assert cls.summary_task != name and cls.demos == (cls.summary_task,)
    basket = task_class("put_everything_in_basket")
    assert basket.summary_task == basket.name and len(basket.demos) == 4 and set(basket.demos) <= set(demo_tasks())


def test_registration_mistakes_are_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(registry, "TASKS", registry.TASKS.copy())

    class Extra:
        name = "extra_family"
        arms, budget = ("right",), 10

    registry.register_task()(Extra)
    assert "extra_family" in registry.tasks_of_track("base") and registry.task_class("extra_family") is Extra
    assert (Extra.track, Extra.summary_task, Extra.demos) == ("base", "extra_family", ("extra_family",))

    class Twin:
        name = "extra_family"

    class Orphan:
        name = "orphan_heldout"

    class Nameless(Extra):
        pass

    with pytest.raises(ValueError, match="registered twice"):
        registry.register_task()(Twin)
    with pytest.raises(ValueError, match="summary_task 'nowhere' is not registered"):
        registry.register_task("transfer", summary_task="nowhere")(Orphan)
    with pytest.raises(TypeError, match="must set its own class attribute 'name'"):
        registry.register_task()(Nameless)
    with pytest.raises(UnknownName, match="unknown track 'heldout' choices: base, long_horizon, transfer"):
        registry.register_task("heldout")
    with pytest.raises(UnknownName, match="unknown task 'grasp_single_cub'; did you mean 'grasp_single_cube'"):
        registry.task_class("grasp_single_cub")


# -- one source for every default, word and function size ----------------------------------------------

MAX_FUNCTION_LINES = 60


def test_no_function_is_longer_than_60_lines():
    long = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{name}:{node.name}"] = lines
    assert long == {}


def vocabulary() -> dict[str, str]:
    """The distinctive words of vocab.py and the record's event kinds (word -> where it is declared);
    generic ones (ok, none, success, stop, budget, paper, small) double as column names and decision
    kinds, so they are not policed here (an event kind still is, where events are written and read:
    :func:`event_kind_literals`)."""
    from vabench.core import vocab
    from vabench.results.recordfile import Event

    words = {
        m.value: f"vocab.{e.__name__}.{m.name}"
        for e in vocab.StrEnum.__subclasses__()
        if e.__module__ == vocab.__name__
        for m in e
    }
    words |= {p: f"vocab.{p.upper()}.name" for p in vocab.PROTOCOLS} | {vocab.LEARNED: "vocab.LEARNED"}
    words |= {arm: f"vocab.{arm.upper()}" for arm in vocab.ARM_NAMES}
    words |= {kind.value: f"recordfile.Event.{kind.name}" for kind in Event}
    for generic in ("ok", "none", "success", "stop", "budget", "paper", "small", "infra", "permanent"):
        words.pop(generic, None)
    return words


# Literals that are another vocabulary spelled alike, each with why.
OTHER_MEANINGS = {
    ("vabench.envs.tasks", "base"): "the module name tasks/base.py",
    ("vabench.envs.tasks", "expert"): "the module name tasks/expert.py",
    ("vabench.agents.chat.protocol", "camera"): "the reply's decision kind (camera | action | tool | stop)",
    ("vabench.agents.chat.agent", "invalid"): "the compaction digest's wording (valid | invalid)",
    ("vabench.envs.sim.embodiments", "robot"): "the URDF root element",
    ("vabench.analysis.tables.looks", "robot"): "the outcome column robot (the embodiment)",
    ("vabench.run.config.choices", "robot"): "the condition key robot (the embodiment)",
    ("vabench.envs.config", "robot"): "the condition key robot (the embodiment)",
    ("vabench.envs.cli.tasks", "robot"): "the condition key robot (the embodiment)",
    ("vabench.gym.env", "robot"): "the condition key robot (the embodiment)",
    ("vabench.verify.compare", "robot"): "the state event's robot field (joint positions; envs.privileged)",
    (
        "vabench.agents.chat.dialogue",
        "reply",
    ): "the conversation turn's kind (history: observation | reply | repair ...)",
    ("vabench.agents.chat.protocol", "action"): "the reply's JSON key and its decision kind",
    ("vabench.agents.chat.protocol", "decision"): "the parse error's name for the reply's JSON object",
    ("vabench.export.features", "action"): "the LeRobot dataset's action feature",
    ("vabench.analysis.load", "state"): "the analysis's row state (judged | unjudged | superseded | infra_error)",
    ("vabench.analysis.tables.common", "state"): "the analysis's row state column",
    ("vabench.analysis.tables.infra", "state"): "the analysis's row state column",
    ("vabench.site.episodes", "state"): "the analysis's row state column",
    ("vabench.analysis.seedyield", "rejected"): "the seed manifest's rejected seeds",
    ("vabench.core.errors", "interrupted"): "the headline of the Interrupted stop",
    ("vabench.run.driver", "interrupted"): "the end-of-run message: how the run stopped",
}


def _not_values(tree: ast.AST) -> set[int]:
    """Constants that are not values: docstrings, dict keys and subscripts (column names),
    ``__all__`` entries, ``.get`` keys."""
    out = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body:
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
        if isinstance(n, ast.Dict):
            out |= {id(k) for k in n.keys if k is not None}
        if isinstance(n, ast.Subscript):
            out.add(id(n.slice))
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
            out |= {id(e) for e in ast.walk(n.value)}
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
            out.add(id(n.args[0]))
    return out


def _is_type_field(node: ast.AST) -> bool:
    """``e["type"]`` or ``e.get("type")``: an event's kind being read."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "type"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "type"
    )


def event_kind_literals(tree: ast.AST) -> set[tuple[str, int]]:
    """(word, line) of every event kind written as a literal where events are written
    (``record.event("reply", ...)``) or read (``e["type"] == "reply"``, ``e.get("type") in ("stop",)``),
    generic words (stop, result) included: the ``Event`` member is the only spelling there."""
    from vabench.results.recordfile import Event

    kinds, found = set(Event), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "event" and n.args:
            sides = [n.args[0]]
        elif isinstance(n, ast.Compare) and any(map(_is_type_field, [n.left, *n.comparators])):
            sides = [n.left, *n.comparators]
        else:
            continue
        for side in sides:
            found |= {(c.value, c.lineno) for c in ast.walk(side) if isinstance(c, ast.Constant) and c.value in kinds}
    return found


def literal_words(source: str, words: dict[str, str]) -> set[tuple[str, int]]:
    """(word, line) of every vocabulary word, event kind or arm name ``source`` writes as a value."""
    tree = ast.parse(source)
    skip = _not_values(tree)
    found = {
        (n.value, n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in words and id(n) not in skip
    }
    return found | event_kind_literals(tree)


def test_vocabulary_words_are_written_only_in_vocab_py():
    words = vocabulary()
    assert {"long_horizon", "dual", "own", "explained", "infra_error", "camera", "active", "learned"} <= set(words)
    assert {"reply", "tool_result", "episode_start", "left", "right"} <= set(words)
    found = set()
    for name, path in MODULES.items():
        if name in ("vabench.core.vocab", "vabench.results.recordfile"):
            continue
        found |= {(name, word, line) for word, line in literal_words(path.read_text(), words)}
    strays = sorted(
        f"{m}:{line} '{w}' (use {words.get(w, 'Event')})" for m, w, line in found if (m, w) not in OTHER_MEANINGS
    )
    assert strays == []
    assert {(m, w) for m, w, _ in found} == set(OTHER_MEANINGS), "an OTHER_MEANINGS entry is gone: drop it"


def test_the_literal_check_finds_a_planted_event_kind_arm_name_and_word(tmp_path):
    """The check is real: a module that writes an event kind, an arm name or a vocabulary word as a
    literal is reported, line by line; one that uses the declared names is not."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(record, e, arm):\n"
        "    record.event('reply', step=1)\n"
        "    if e['type'] == 'stop' or e.get('type') in ('result', 'crash'):\n"
        "        return 'left'\n"
        "    return arm == 'long_horizon'\n"
    )
    found = literal_words(planted.read_text(), vocabulary())
    assert found == {("reply", 2), ("stop", 3), ("result", 3), ("crash", 3), ("left", 4), ("long_horizon", 5)}
    clean = "from vabench.results.recordfile import Event\nfrom vabench.core.vocab import LEFT\n\n\n"
    clean += "def f(record, e):\n    record.event(Event.REPLY, step=1)\n    return e['type'] == Event.STOP and LEFT\n"
    assert literal_words(clean, vocabulary()) == set()


def _declared_defaults() -> dict:
    """Every config default as its dataclass declares it, by section ("": the top level)."""
    from vabench.agents.chat.harness_config import HarnessConfig
    from vabench.agents.chat.model import ModelConfig
    from vabench.core.condition import KEYS, config_default
    from vabench.envs import RecordingConfig
    from vabench.run.config.run import PlanConfig, RayConfig, RunOptions
    from vabench.run.config.sections import defaults

    condition = {k: config_default(k) for k in KEYS}
    return {
        "harness": defaults(HarnessConfig),
        "ray": defaults(RayConfig),
        "recording": defaults(RecordingConfig),
        "model": defaults(ModelConfig),
        "plan": defaults(PlanConfig),
        "": {**defaults(RunOptions), **condition},  # the top-level keys
    }


def test_no_yaml_restates_a_config_dataclass_default():
    """harness.*, ray.*, recording.*, model.*, plan.*, the run's options and the condition's keys have
    their defaults in dataclasses; a YAML file (config.yaml, an experiment, a model template) states
    only what differs."""
    from omegaconf import OmegaConf

    sections = _declared_defaults()
    assert sections["model"]["max_tokens"] == 4096 and sections[""]["render"] == "paper"
    conf = ROOT.parent / "conf"
    restated = []
    for path in sorted(conf.rglob("*.yaml")):
        raw = OmegaConf.to_container(OmegaConf.load(path))
        nodes = {"model": raw} if path.parent.name == "model" else {s: raw.get(s) if s else raw for s in sections}
        for section, node in nodes.items():
            for key, value in (node or {}).items() if isinstance(node, dict) else ():
                if key in sections[section] and sections[section][key] == value:
                    restated.append(f"{path.relative_to(conf)}: {section or '(top level)'}.{key}: {value!r}")
    assert restated == []


def test_the_composed_config_has_every_dataclass_default_and_no_other_value():
    """What Hydra composes with no override is, key for key, what the dataclasses declare."""
    from vabench.launch.words import composed

    node = composed(["model=openai"])
    found = {s: (node if not s else node[s]) for s in _declared_defaults()}
    for section, declared in _declared_defaults().items():
        for key, value in declared.items():
            if section == "model" and key in ("id", "api_key_env", "extra"):
                continue  # the model template's own: what the template is for
            assert found[section][key] == value, f"{section or '(top level)'}.{key}"


def test_every_exception_class_is_under_the_project_base():
    """One exception tree: every exception class vabench defines derives from VabenchError, and the
    reasons a run stops early from RunStopped (the driver catches that family once)."""
    import importlib
    import inspect

    from vabench.core.errors import RunStopped, VabenchError

    found, strays = [], []
    for name in sorted(MODULES):
        if name.endswith("__main__") or name == "vabench.tasks":
            continue
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls)
                if not issubclass(cls, VabenchError):
                    strays.append(f"{name}.{cls.__qualname__}")
    assert strays == [] and len(found) >= 25
    stops = {c.__name__ for c in found if issubclass(c, RunStopped)}
    assert {"CostCapReached", "RunAborted", "RunLocked", "ClusterStarved", "Interrupted", "NodeCheckFailed"} <= stops
