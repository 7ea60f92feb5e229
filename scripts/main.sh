#!/usr/bin/env bash
# Main job: set up whatever is missing, then run the smoke experiment on Ray with the built-in
# offline oracle (the privileged scripted expert) through the agent harness, write the Parquet
# outcome table and print the success table. Extra arguments are Hydra overrides, e.g.
#   ./scripts/main.sh seeds=all protocol=both run_id=my-run
#   ./scripts/main.sh model=random
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m vabench.launch +experiment=smoke "$@"
