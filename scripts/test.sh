#!/usr/bin/env bash
# Tests: set up whatever is missing, then run pytest.
#   scripts/test.sh              default suite (CI; about 2 minutes on 2 cores)
#   scripts/test.sh --nightly    also the long checks marked `slow` (re-screening, rendered runs; +5 min)
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
args=()
for a in "$@"; do
  if [[ "$a" == "--nightly" ]]; then args+=(-m "slow or not slow"); else args+=("$a"); fi
done
exec .venv/bin/python -m pytest "${args[@]}"
