"""A separate Python 3.11 venv with LeRobot and lerobot-doctor, for checking exports the way a user
opens them. LeRobot needs numpy 2 (mplib pins numpy 1), so it can never live in the project's venv.

Built when missing under ``$VABENCH_CACHE/lerobot-venv/<key>`` (the key names the pinned versions,
so a new pin builds a new venv beside the old one) and reused. A build that did not finish has no
``.complete`` marker and is made again.

torch is its CPU build (``torch==2.13.0+cpu``: the file this kind of machine keeps on disk, or
PyTorch's CPU index named in ``TORCH_INDEX``, as scripts/setup.sh): the package index has no CPU
build for Linux x86_64, so a machine without one fails at once instead of pulling the CUDA build
(several GB). lerobot 0.4.4 asks for torch < 2.11 and torchvision 0.24.1 for torch 2.9.1, whose
only x86_64 builds there are CUDA ones, so those two install without their dependencies and the
rest of what LeRobot's dataset loader and lerobot-doctor import installs at lerobot's own bounds.
torchvision's compiled operators cannot load beside this torch; tests/lerobot_open.py says how it
imports the package's Python (which is all the loader uses: it decodes with PyAV).

    python -m tests.lerobot_venv            # build it now (prints pip's output, then its path)
    python -m tests.lerobot_venv --quiet    # as scripts/test.sh does: pip's output to a log beside it
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cached_venv import built, cache_dir, cached_venv, python_of

PYTHON = "3.11"
TORCH = "torch==2.13.0+cpu"
NO_DEPS = ("lerobot==0.4.4", "lerobot-doctor==0.2.0", "torchvision==0.24.1")
DEPS = (  # lerobot 0.4.4's requirements that its dataset loader imports, then lerobot-doctor's
    "numpy>=2,<3",
    "datasets>=4.0.0,<5.0.0",
    "huggingface-hub>=0.34.2,<0.36.0",
    "accelerate>=1.10.0,<2.0.0",
    "av>=15.0.0,<16.0.0",
    "draccus==0.10.0",
    "einops>=0.8.0,<0.9.0",
    "jsonlines>=4.0.0,<5.0.0",
    "packaging>=24.2,<26.0",
    "deepdiff>=7.0.1,<9.0.0",
    "termcolor>=2.4.0,<4.0.0",
    "imageio>=2.34.0,<3.0.0",
    "setuptools>=71.0.0,<81.0.0",
    "pyarrow>=14.0",
    "rich>=13.0",
)
PINS = (TORCH, *NO_DEPS, *DEPS)
KEY = "py" + PYTHON.replace(".", "") + "-" + "-".join(p.replace("==", "") for p in (TORCH, *NO_DEPS))
FIX = "python -m tests.lerobot_venv"


def venv_dir() -> Path:
    return cache_dir() / "lerobot-venv" / KEY


def _build(root: Path, out) -> str:
    python = python_of(PYTHON, "a LeRobot check (lerobot 0.4.x)")
    subprocess.run([python, "-m", "venv", str(root)], check=True, stdout=out, stderr=out)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    index = os.environ.get("TORCH_INDEX")
    steps = (
        [*pip, *(["--extra-index-url", index] if index else []), TORCH],
        [*pip, "--no-deps", *NO_DEPS],
        [*pip, *DEPS],
    )
    for step in steps:
        subprocess.run(step, check=True, stdout=out, stderr=out)
    cuda = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import torch; print(torch.version.cuda)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if cuda != "None":
        raise RuntimeError(f"the LeRobot venv got a CUDA torch ({cuda}), not the CPU build")
    return "\n".join(PINS) + "\n"


def lerobot_venv(log=None) -> Path:
    """The venv's folder, built when missing (tests.cached_venv: one build at a time)."""
    return cached_venv(venv_dir(), lambda root: _build(root, log or subprocess.DEVNULL))


def main(argv: list[str]) -> int:
    """Build it now; with ``--quiet`` pip's output goes to a log beside it, named on failure."""
    if "--quiet" not in argv:
        print(lerobot_venv(log=sys.stdout))
        return 0
    if built(venv_dir()):
        return 0
    log = venv_dir().parent / f"{KEY}.log"
    print(f"[test] building the LeRobot venv for the interop check (once): {venv_dir()}", file=sys.stderr)
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log, "w") as out:
            lerobot_venv(log=out)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"tests.lerobot_venv: the build failed ({e}); see {log}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
