"""ManiSkill3 in a venv of its own, for benchmarks/policy_rate.py (issue 49): mani_skill pins its
own sapien, numpy and gymnasium, so it never lives in the project's venv.

Built once under ``$VABENCH_CACHE/venvs/maniskill/<key>`` (default ``~/.cache/vabench``; the key
names the pins, so a new pin builds a new venv beside the old one) and reused. torch's CPU build is
installed first (the project's pin; ``TORCH_INDEX``, as scripts/setup.sh reads it, names an index
such as https://download.pytorch.org/whl/cpu where the default index serves only the CUDA build), so
mani_skill's install does not pull a CUDA torch. A build that did not finish has no ``.complete``
marker and is made again. ``PickCube-v1`` needs no asset download.

    python benchmarks/maniskill_venv.py     # build it now (prints its path and the seconds taken)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cached_venv import cache_dir, cached_venv, python_of  # noqa: E402

PYTHON = "3.11"
TORCH = "torch==2.13.0"  # scripts/setup.sh's CPU build
PINS = ("mani_skill==3.0.1",)
KEY = "py" + PYTHON.replace(".", "") + "-" + "-".join(p.replace("==", "") for p in (TORCH, *PINS))


def venv_dir() -> Path:
    return cache_dir() / "venvs" / "maniskill" / KEY


def maniskill_python(log=None) -> Path:
    """The venv's interpreter, the venv built first when missing (tests.cached_venv: one build at a time)."""
    return cached_venv(venv_dir(), lambda root: build(root, log or subprocess.DEVNULL)) / "bin" / "python"


def build(root: Path, out) -> str:
    started = time.perf_counter()
    python = python_of(PYTHON, "ManiSkill3's venv")
    subprocess.run([python, "-m", "venv", str(root)], check=True, stdout=out, stderr=out)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    index = os.environ.get("TORCH_INDEX")
    subprocess.run([*pip, *(["--index-url", index] if index else []), TORCH], check=True, stdout=out, stderr=out)
    subprocess.run([*pip, *PINS], check=True, stdout=out, stderr=out)
    seconds = time.perf_counter() - started
    return f"{TORCH} {' '.join(PINS)}\nbuilt in {seconds:.0f} s\n"


if __name__ == "__main__":
    t = time.perf_counter()
    python = maniskill_python(log=sys.stdout)
    print(f"{python} ({time.perf_counter() - t:.0f} s)")
