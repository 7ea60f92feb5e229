#!/usr/bin/env bash
# Tests: set up whatever is missing, then run pytest on both cores (pytest-xdist; the Ray driver
# tests share one worker: group "ray"). Add -n 0 to run in one process.
#   scripts/test.sh              default suite (CI; about 22 minutes on 2 cores)
#   scripts/test.sh --nightly    also the long checks marked `slow` (re-screening, rendered oracle runs; +2-3 h)
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# The LeRobot interop check's venv (tests/lerobot_venv.py: torch's CPU build, about 1.5 GB), built once
# and cached: here rather than inside the test, so a cold build is not counted against its timeout.
.venv/bin/python -m tests.lerobot_venv --quiet
args=()
for a in "$@"; do
  if [[ "$a" == "--nightly" ]]; then args+=(-m "slow or not slow"); else args+=("$a"); fi
done
exec .venv/bin/python -m pytest -n 2 --dist loadgroup "${args[@]}"
