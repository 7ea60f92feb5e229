"""What the reference pages read from the code: each dataclass field's or enum member's comment (the
code's own words for what it means), a YAML file's header comment and keys, and a markdown table.
Comments are read with ``ast`` and ``tokenize`` from the source, so a page never restates them."""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from dataclasses import MISSING
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def rst(text: str) -> str:
    """Docstring markup as markdown: ``x`` and :role:`x` become `x`."""
    return re.sub(r":\w+:`([^`]*)`", r"`\1`", text.replace("``", "`"))


def first_sentence(text: str) -> str:
    """A docstring's first sentence, on one line."""
    flat = " ".join(text.split("\n\n")[0].split())
    return flat.split(". ")[0].rstrip(".") + "."


def _comments(source: str) -> dict[int, str]:
    """{line number: comment text} of every comment in ``source``."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = rst(tok.string.lstrip("#").strip())
    return out


def _own_comment(lines: list[str], comments: dict[int, str], first: int, last: int) -> str:
    """The comment on a statement's lines, else the block of comment lines right above it."""
    trailing = [comments[n] for n in range(first, last + 1) if n in comments]
    if trailing:
        return " ".join(trailing)
    above, n = [], first - 1
    while n >= 1 and lines[n - 1].strip().startswith("#"):
        above.insert(0, comments.get(n, ""))
        n -= 1
    return " ".join(above)


def member_comments(cls: type) -> dict[str, str]:
    """{field or member name: its comment} of a class whose body declares names (a dataclass's
    annotated fields, an enum's members), in declaration order."""
    source = inspect.getsource(inspect.getmodule(cls))
    tree, lines, comments = ast.parse(source), source.splitlines(), _comments(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    out = {}
    for stmt in node.body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else None
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else target
        if isinstance(target, ast.Name):
            out[target.id] = _own_comment(lines, comments, stmt.lineno, stmt.end_lineno)
    return out


def constants(module) -> list[tuple[str, str, str]]:
    """(NAME, value as written, comment) of a module's upper-case constants that carry a comment."""
    source = inspect.getsource(module)
    tree, lines, comments = ast.parse(source), source.splitlines(), _comments(source)
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id.isupper():
            comment = _own_comment(lines, comments, stmt.lineno, stmt.end_lineno)
            if comment and stmt.lineno == stmt.end_lineno:
                out.append((stmt.targets[0].id, ast.get_source_segment(source, stmt.value), comment))
    return out


def field_rows(cls) -> list[tuple[str, object, str]]:
    """(name, default, meaning) of every field of a dataclass (the defaults as Hydra gets them)."""
    from vabench.run.config.sections import REQUIRED, defaults

    said = member_comments(cls)
    return [(k, MISSING if v == REQUIRED else v, said.get(k, "")) for k, v in defaults(cls).items()]


def shown(value) -> str:
    """A default as a user types it on the command line."""
    if value is MISSING:
        return "(required)"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{value:g}`" if abs(value) < 1e6 else f"`{value:,.0f}`"
    return f"`{value}`"


def yaml_header(path: Path) -> str:
    """The comment lines that open a YAML file (Hydra's ``@package`` line and the boilerplate about
    ModelConfig's defaults left out)."""
    said = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith("@package") or text.startswith("Every key not set here"):
            continue
        said.append(text)
    return " ".join(said)


def yaml_keys(path: Path) -> list[tuple[str, str, str]]:
    """(key, value as written, comment) of a YAML file's top-level keys; a comment continued on the
    following indented comment lines is joined."""
    out, lines = [], path.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line or line[0] in " #-" or ":" not in line:
            continue
        key, _, rest = line.partition(":")
        value, _, comment = rest.partition("#")
        said = [comment.strip()] if comment.strip() else []
        for more in lines[i + 1 :]:
            if not more.startswith(" ") or not more.strip().startswith("#"):
                break
            said.append(more.strip().lstrip("#").strip())
        out.append((key.strip(), value.strip(), " ".join(said)))
    return out


def yaml_data(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def flat(data: dict, prefix: str = "") -> list[tuple[str, object]]:
    """``a.b=value`` pairs of a nested mapping."""
    out = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out += flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def cell(value) -> str:
    """A table cell: ``|``, ``<`` and ``>`` escaped outside code spans (inside one a pipe splits no
    column, and ``<model id>`` is no tag)."""
    parts = str(value).replace("\n", " ").split("`")
    plain = lambda p: p.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
    return "`".join(p if i % 2 else plain(p) for i, p in enumerate(parts))


def table(header: tuple[str, ...], rows) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
