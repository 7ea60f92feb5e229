"""Build the robot description cache ahead of time (the Franka Panda for SAPIEN and mplib).

The cache and why each file is generated: :mod:`vabench.envs.sim.assets`.

    python -m vabench.envs.cli.assets            # build it (if needed) and print the URDF path
    python -m vabench.envs.cli.assets --quiet
"""

from __future__ import annotations

import argparse
import sys

from vabench.core.errors import command

from ..sim.assets import build_panda, cache_dir


@command("python -m vabench.envs.cli.assets")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    files = build_panda(cache_dir(), quiet=args.quiet)
    if not args.quiet:
        print(files.urdf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
