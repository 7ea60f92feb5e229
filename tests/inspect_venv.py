"""A separate venv with inspect_ai and the mcp SDK, for playing an episode the way an inspect user
does (tests/inspect_eval.py). inspect_ai's own dependencies (aiobotocore, s3fs) would move the
project's boto3 and fsspec, so it never lives in the project's venv.

Built once under ``$VABENCH_CACHE/inspect-venv/<key>`` (the key names the pinned versions, so a
new pin builds a new venv beside the old one) and reused. A build that did not finish has no
``.complete`` marker and is made again.

    python -m tests.inspect_venv     # build it now (prints its path)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cached_venv import cache_dir, cached_venv

PINS = ("inspect_ai==0.3.285", "mcp==2.3.0")
KEY = "py" + "".join(map(str, sys.version_info[:2])) + "-" + "-".join(p.replace("==", "") for p in PINS)


def venv_dir() -> Path:
    return cache_dir() / "inspect-venv" / KEY


def inspect_venv(log=None) -> Path:
    """The venv's folder, built when missing (tests.cached_venv: one build at a time)."""
    out = log or subprocess.DEVNULL

    def build(root: Path) -> str:
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, stdout=out, stderr=out)
        pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *PINS], check=True, stdout=out, stderr=out)
        return " ".join(PINS) + "\n"

    return cached_venv(venv_dir(), build)


if __name__ == "__main__":
    print(inspect_venv(log=sys.stdout))
