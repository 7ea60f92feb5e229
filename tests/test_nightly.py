"""scripts/nightly.sh's summary: the counts come from pytest's own JUnit XML (a real pytest run of
a passing, a failing, a skipped and an erroring test), each benchmark keeps its command, exit
status, wall time and the last lines it printed; a wrong argument is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from nightly_summary import counts, main  # noqa: E402

SAMPLE = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup")

def test_passes(): pass
def test_passes_too(): pass
def test_fails(): assert False
@pytest.mark.skip(reason="no")
def test_skipped(): pass
def test_errors(broken): pass
"""


def test_the_summary_counts_what_pytest_reported_and_keeps_each_benchmarks_figures(tmp_path):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    logs = tmp_path / "2026-12-07"
    logs.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "test_sample.py",
         f"--junitxml={logs / 'tests.xml'}"], cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1, done.stdout
    assert counts(logs / "tests.xml") == {"passed": 2, "failed": 1, "errors": 1, "skipped": 1, "total": 5}
    (logs / "docs_build.log").write_text("".join(f"line {i}\n" for i in range(40)) + "median 12.3 s\n")
    summary = tmp_path / "2026-12-07.md"
    main([str(summary), str(logs), "1", "3725", "-k sample", "docs_build|--runs 1|0|75"])
    text = summary.read_text()
    assert text.startswith("# Nightly 2026-12-07\n") and "Commit `" in text
    assert "`scripts/test.sh --nightly -k sample`: exit 1, wall 62 min 5 s." in text
    assert "| 2 | 1 | 1 | 1 | 5 |" in text
    assert "`.venv/bin/python benchmarks/docs_build.py --runs 1`: exit 0, wall 1 min 15 s." in text
    assert "median 12.3 s" in text and "line 16\n" in text and "line 15\n" not in text  # the last 25 lines


def test_no_junit_xml_is_counted_as_unknown(tmp_path):
    main([str(tmp_path / "s.md"), str(tmp_path), "2", "5", ""])
    assert "| ? | ? | ? | ? | ? |" in (tmp_path / "s.md").read_text()


def test_a_wrong_argument_is_one_line_and_exit_2():
    done = subprocess.run(["bash", "scripts/nightly.sh", "--frobnicate"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "unknown argument --frobnicate" in done.stderr
