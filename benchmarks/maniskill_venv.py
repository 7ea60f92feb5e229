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

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PYTHON = "3.11"
TORCH = "torch==2.13.0"  # scripts/setup.sh's CPU build
PINS = ("mani_skill==3.0.1",)
KEY = "py" + PYTHON.replace(".", "") + "-" + "-".join(p.replace("==", "") for p in (TORCH, *PINS))
DONE = ".complete"


def venv_dir() -> Path:
    cache = Path(os.environ.get("VABENCH_CACHE", Path.home() / ".cache" / "vabench"))
    return cache / "venvs" / "maniskill" / KEY


def python_311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python" + PYTHON)
    if not found:
        raise RuntimeError(f"ManiSkill3's venv needs a python{PYTHON} on PATH")
    return found


def maniskill_python(log=None) -> Path:
    """The venv's interpreter, the venv built first when missing (under a lock: one build at a time)."""
    root = venv_dir()
    if not (root / DONE).is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        with open(root.parent / f".{KEY}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (root / DONE).is_file():
                build(root, log or subprocess.DEVNULL)
    return root / "bin" / "python"


def build(root: Path, out) -> None:
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([python_311(), "-m", "venv", str(root)], check=True, stdout=out, stderr=out)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    index = os.environ.get("TORCH_INDEX")
    subprocess.run([*pip, *(["--index-url", index] if index else []), TORCH], check=True, stdout=out, stderr=out)
    subprocess.run([*pip, *PINS], check=True, stdout=out, stderr=out)
    seconds = time.perf_counter() - started
    (root / DONE).write_text(f"{TORCH} {' '.join(PINS)}\nbuilt in {seconds:.0f} s\n")


if __name__ == "__main__":
    t = time.perf_counter()
    python = maniskill_python(log=sys.stdout)
    print(f"{python} ({time.perf_counter() - t:.0f} s)")
