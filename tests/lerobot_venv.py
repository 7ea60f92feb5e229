"""A separate Python 3.11 venv with LeRobot and lerobot-doctor, for checking exports the way a user
opens them. LeRobot needs numpy 2 (mplib pins numpy 1), so it can never live in the project's venv.

Built once under ``$VABENCH_CACHE/lerobot-venv/<key>`` (the key names the pinned versions, so a
new pin builds a new venv beside the old one) and reused: the install pulls torch, several GB and
minutes. A build that did not finish has no ``.complete`` marker and is made again.

    python -m tests.lerobot_venv     # build it now (prints its path)
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

PYTHON = "3.11"
PINS = ("lerobot==0.4.4", "lerobot-doctor==0.2.0", "torch==2.9.1", "torchvision==0.24.1")
KEY = "py" + PYTHON.replace(".", "") + "-" + "-".join(p.replace("==", "") for p in PINS)
DONE = ".complete"


def venv_dir() -> Path:
    cache = Path(os.environ.get("VABENCH_CACHE", Path.home() / ".cache" / "vabench"))
    return cache / "lerobot-venv" / KEY


def python_311() -> str:
    """A Python 3.11 interpreter (this one when it is 3.11)."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if not found:
        raise RuntimeError("a LeRobot check needs a python3.11 on PATH (lerobot 0.4.x)")
    return found


def lerobot_venv(log=None) -> Path:
    """The venv's folder, built when missing (under a lock: one build at a time)."""
    root = venv_dir()
    if (root / DONE).is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{KEY}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / DONE).is_file():
            return root
        shutil.rmtree(root, ignore_errors=True)
        out = log or subprocess.DEVNULL
        subprocess.run([python_311(), "-m", "venv", str(root)], check=True, stdout=out, stderr=out)
        pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
        subprocess.run([*pip, *PINS], check=True, stdout=out, stderr=out)
        (root / DONE).write_text(" ".join(PINS) + "\n")
    return root


if __name__ == "__main__":
    print(lerobot_venv(log=sys.stdout))
