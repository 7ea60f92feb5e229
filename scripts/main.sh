#!/usr/bin/env bash
# Main job: set up whatever is missing, then run the built-in offline oracle (the scripted expert,
# privileged) through the agent harness on every verified seed. Extra arguments go to
# vabench.agents.evaluate (e.g. --protocol both, --model random, --seeds 3).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m vabench.agents.evaluate "$@"
