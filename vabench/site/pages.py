"""Writing the site's pages: Jinja templates (autoescaped: model replies are untrusted text), links
relative to the page that holds them (the site opens from disk and from any static host), and the
analysis tables as HTML (``vabench.analysis.display``: the same cells as the Markdown report)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import quote

import pandas as pd
from jinja2 import Environment, FileSystemLoader, select_autoescape

from vabench.analysis import display
from vabench.results.recordfile import view_name

HERE = Path(__file__).parent
STYLE = "site.css"


def slug(label: str) -> str:
    """A file name for a label (a condition): its words, and a hash so two labels never collide."""
    words = re.sub(r"[^a-z0-9]+", "-", str(label).lower()).strip("-")[:70].strip("-")
    return f"{words}-{hashlib.sha1(str(label).encode()).hexdigest()[:6]}"


def href(target: Path, page: Path) -> str:
    """The URL of ``target`` from the page file ``page`` (both absolute), percent-encoded."""
    return quote(Path(os.path.relpath(target, page.parent)).as_posix())


def table(frame: pd.DataFrame) -> dict:
    """An analysis table as the template shows it: title, header, cells and notes."""
    shown = display(frame)
    return {
        "title": frame.attrs.get("title", ""),
        "columns": [str(c) for c in shown.columns],
        "rows": shown.astype(str).values.tolist(),
        "notes": frame.attrs.get("notes", []),
    }


class Writer:
    """Renders templates into the site folder ``out``; every page gets ``root`` (the site's top,
    relative to the page), ``link`` (a site path relative to the page) and the build's facts."""

    def __init__(self, out: Path, facts: dict):
        self.out = Path(out).resolve()
        self.facts = facts
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["view_name"] = view_name
        self.env.filters["url"] = lambda s: quote(str(s))
        self.sizes: dict[str, int] = {}

    def page(self, rel: str, template: str, **context) -> Path:
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        root = Path(os.path.relpath(self.out, path.parent)).as_posix()

        def link(target: str) -> str:
            return quote(f"{root}/{target}") if root != "." else quote(target)

        text = self.env.get_template(template).render(**self.facts, **context, root=root, link=link, here=rel)
        data = text.encode()
        path.write_bytes(data)
        self.sizes[rel] = len(data)
        return path

    def style(self) -> None:
        (self.out / STYLE).write_bytes((HERE / "static" / STYLE).read_bytes())
