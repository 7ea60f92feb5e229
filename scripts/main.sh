#!/usr/bin/env bash
# Main job: set up whatever is missing, then run the built-in offline oracle (the scripted expert)
# through the env API on every verified seed. Extra arguments go to vabench.envs.expert_run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m vabench.envs.expert_run "$@"
