"""The test suite's own instruments: tests that look for Ray's worker processes (kill tests, memory
probes) must never run beside each other, which ``--dist loadgroup`` guarantees only while
pytest-xdist can tag their ids with the group (under pytest 9.2 its tagging silently does nothing)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, pathlib, pytest

pytestmark = pytest.mark.xdist_group("together")

@pytest.mark.parametrize("n", range(6))
def test_note_worker(n):
    (pathlib.Path(os.environ["MARKS"]) / f"{n}.{os.environ['PYTEST_XDIST_WORKER']}").touch()
"""


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    marks = tmp_path / "marks"
    marks.mkdir()
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    cmd += ["--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")]
    env = {**os.environ, "MARKS": str(marks)}
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    workers = {p.suffix for p in marks.iterdir()}
    assert len(list(marks.iterdir())) == 6 and len(workers) == 1, sorted(p.name for p in marks.iterdir())
