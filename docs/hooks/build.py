"""The mkdocs hook (``hooks:`` in mkdocs.yml): adds the reference pages made from the code
(``pages.PAGES``) to the site, and fills each ``<!-- generated:NAME -->`` marker of a hand-written
page with the fragment ``FRAGMENTS[NAME]`` makes. Nothing it makes is written into ``docs/``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # mkdocs restores sys.path after loading the hook,
from fragments import exit_table, screened_table, study_table  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402
from pages import PAGES  # noqa: E402

import vabench  # noqa: E402, F401  (so this checkout's vabench, not an installed one, is imported now)

FRAGMENTS = {"study": study_table, "exits": exit_table, "screened": screened_table}
MARKER = re.compile(r"<!-- generated:(\w+) -->")


def on_files(files, config):
    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: FRAGMENTS[m.group(1)](), markdown)
