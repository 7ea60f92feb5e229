"""The dated summary of a nightly run (scripts/nightly.sh writes the logs, this the page).

    python scripts/nightly_summary.py SUMMARY.md LOGS TESTS_RC TESTS_S PYTEST_ARGS [NAME|ARGS|RC|SECONDS ...]

Counts come from pytest's JUnit XML (LOGS/tests.xml): passed, failed, errors, skipped; each
benchmark's figures are the last lines it printed (LOGS/NAME.log holds all of it).
"""

from __future__ import annotations

import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

TAIL = 25  # lines of a benchmark's output kept in the summary


def counts(xml: Path) -> dict[str, int]:
    """passed, failed, errors, skipped and the total, over every test suite in pytest's JUnit XML."""
    if not xml.is_file():
        return {}
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
    return {
        "passed": passed,
        "failed": n["failures"],
        "errors": n["errors"],
        "skipped": n["skipped"],
        "total": n["tests"],
    }


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()


def page(logs: Path, tests_rc: int, tests_s: int, pytest_args: str, benches: list[str]) -> str:
    c = counts(logs / "tests.xml")
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    lines = [
        f"# Nightly {logs.name}",
        "",
        f"Commit `{git('rev-parse', '--short', 'HEAD')}`{dirty}, finished "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.node()} ({platform.platform()}).",
        "",
        "## Tests",
        "",
        f"`scripts/test.sh --nightly{' ' + pytest_args if pytest_args else ''}`: exit {tests_rc}, "
        f"wall {tests_s // 60} min {tests_s % 60} s.",
        "",
        "| passed | failed | errors | skipped | total |",
        "|---|---|---|---|---|",
        "| " + " | ".join(str(c.get(k, "?")) for k in ("passed", "failed", "errors", "skipped", "total")) + " |",
        "",
        f"Log: `{logs / 'tests.log'}`.",
    ]
    if benches:
        lines += ["", "## Benchmarks"]
    for row in benches:
        name, args, rc, seconds = row.split("|")
        tail = (logs / f"{name}.log").read_text(errors="replace").splitlines()[-TAIL:]
        lines += ["", f"### {name}", "", f"`.venv/bin/python benchmarks/{name}.py {args}`: exit {rc}, "
                  f"wall {int(seconds) // 60} min {int(seconds) % 60} s.", "", "```", *tail, "```"]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    summary, logs, tests_rc, tests_s, pytest_args, *benches = argv
    Path(summary).write_text(page(Path(logs), int(tests_rc), int(tests_s), pytest_args, benches))


if __name__ == "__main__":
    main(sys.argv[1:])
