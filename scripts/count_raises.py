"""Count the builtin exceptions vabench raises (``raise ValueError(...)``, ``raise SystemExit("...")``),
by module, and say which are on a path a user can reach: issue 47 wants every error a user can reach
to be a :class:`vabench.core.errors.VabenchError` (one line, exit status 2) and builtins left only for
programming errors. tests/test_errors.py fails when a new one appears on a reachable path.

    .venv/bin/python scripts/count_raises.py [--list] [ROOT]

Reachable: the config and the launcher, the command lines, everything that reads a file or a run
folder, and the replies of servers (:data:`REACHABLE`); inside those, :data:`PROGRAMMING` names the
functions whose raises only a caller's bug reaches.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "vabench"

# Module prefixes a user's input reaches: the config and what checks it, the commands, the readers of
# files and run folders, and the clients of servers.
REACHABLE = (
    "vabench.run.config",  # the config
    "vabench.launch",
    "vabench.core.checks",  # the config dataclasses' range checks
    "vabench.core.vocab",  # summary=... and the other words of the config
    "vabench.core.interventions",  # intervention=...
    "vabench.envs.config",  # recording.*
    "vabench.envs.render",  # render.* and the observer's size
    "vabench.envs.sim.camera",  # the cameras a config names
    "vabench.agents.models.kinds",  # model.id and its extras
    "vabench.agents.models.ratelimit",  # model.rpm / model.tpm
    "vabench.agents.models.policy",  # model.extra of model=policy
    "vabench.agents.models.llm",  # model.extra, and a provider's replies
    "vabench.agents.models.policy_wire",  # a policy server's replies
    "vabench.agents.chat.model",  # a provider's replies (images it cannot read)
    "vabench.run.probe",  # the endpoint's reply to the probe
    "vabench.analysis",  # readers of run folders and label files
    "vabench.review",
    "vabench.verify",
    "vabench.site",
    "vabench.export",
    "vabench.results.bundle",
    "vabench.run.folder",
    "vabench.results.outcomes",  # an outcome row read back
    "vabench.results.outcometable",
    "vabench.results.recordfile",
    "vabench.results.records",
    "vabench.agents.summaries.summary_store",  # summary files
    "vabench.agents.summaries.summary_schema",
    "vabench.agents.summaries.demo_tools",  # demonstration files
    "vabench.envs.seeds",  # seed manifests
    "vabench.envs.demo_recorder",
    "vabench.envs.cli",
    "vabench.learn",  # exports and checkpoints read back
    "vabench.serve_policy",
    "vabench.tasks",
)

# Functions, inside reachable modules, whose builtin raises only a caller's bug reaches (a check of
# an argument that code, never a user, passes). One line each: why it is a programming error.
PROGRAMMING = {
    ("vabench.analysis", "__getattr__"),  # a lazy export misspelt in code
    ("vabench.results.recordfile", "checked"),  # an event written with fields its dataclass does not declare
    ("vabench.verify", "__getattr__"),
    ("vabench.analysis.stats", "wilson_interval"),  # counts the tally made: k <= n always
    ("vabench.analysis.agreement", "_items"),  # raters and positives from one table
    ("vabench.analysis.paired", "paired_comparison"),  # level and n_boot: code's constants
    ("vabench.analysis.power", "excess_sd"),  # its command line checks the flags first
    ("vabench.analysis.power", "simulate_power"),  # n_sim and sizes from sample_size_table
    ("vabench.analysis.diagnostics", "episode_labels"),  # --rule is an argparse choice
    ("vabench.analysis.diagnostics", "diagnostic_components"),  # modules named in code
    ("vabench.analysis.report", "write_table"),  # --format is an argparse choice
    ("vabench.site.build", "build"),  # --media is an argparse choice
    ("vabench.envs.sim.camera", "apply"),  # camera actions are parsed (ActionError) before
    ("vabench.agents.models.policy_wire", "_pack_array"),  # the client encodes only arrays it made
    ("vabench.agents.chat.model", "image_media_type"),  # images vabench encoded itself
    ("vabench.results.records", "_jsonable"),  # a record field code wrote that JSON cannot hold
    ("vabench.agents.models.ratelimit", "__init__"),  # rpm/tpm are checked by ModelConfig; headroom is code's
    ("vabench.results.outcomes", "write_row"),  # a row the harness built: a bad one is a bug
    ("vabench.run.folder.scratch", "__init__"),  # a worker id the driver made
    ("vabench.run.folder.scratch", "land"),  # a bundle path the writer made
}


@dataclass(frozen=True)
class Raise:
    module: str
    function: str
    line: int
    name: str  # the builtin raised

    @property
    def reachable(self) -> bool:
        if (self.module, self.function) in PROGRAMMING or self.name in ("NotImplementedError", "AssertionError"):
            return False
        return any(self.module == p or self.module.startswith(p + ".") for p in REACHABLE)


def _builtin(node: ast.expr | None) -> str | None:
    """The builtin exception ``raise`` names (``ValueError(...)`` or ``ValueError``), or None.
    ``SystemExit`` counts only with a message: its exit status is then 1, with no one-line rule."""
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call else node
    if not isinstance(target, ast.Name):
        return None
    found = getattr(builtins, target.id, None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        return None
    if found is SystemExit and not (call and call.args and _text(call.args[0])):
        return None
    return target.id


def _text(node: ast.expr) -> bool:
    """Whether ``node`` is a message: a string, an f-string or ``str(...)``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "str"
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _module(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def raises(root: Path = ROOT) -> list[Raise]:
    """Every builtin raise under ``root``, with the function it is in."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = _module(path, root)
        tree = ast.parse(path.read_text())
        for func in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            name = getattr(func, "name", "<module>")
            for node in _own_nodes(func):
                if isinstance(node, ast.Raise) and (builtin := _builtin(node.exc)):
                    found.append(Raise(module, name, node.lineno, builtin))
    return found


def _own_nodes(func: ast.AST):
    """The nodes of ``func`` outside the functions nested in it (each is walked on its own)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", type=Path, default=ROOT)
    ap.add_argument("--list", action="store_true", help="list each reachable raise")
    args = ap.parse_args(argv)
    found = raises(args.root.resolve())
    total, reach = Counter(r.module for r in found), Counter(r.module for r in found if r.reachable)
    for module in sorted(total):
        print(f"{total[module]:4d} {reach[module]:4d}  {module}")
    print(f"{sum(total.values()):4d} {sum(reach.values()):4d}  total (builtin raises, on user-reachable paths)")
    if args.list:
        for r in sorted((r for r in found if r.reachable), key=lambda r: (r.module, r.line)):
            print(f"  {r.module}:{r.line} {r.function}: {r.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
