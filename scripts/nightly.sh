#!/usr/bin/env bash
# Nightly: what the default suite (CI) leaves out, then a dated summary under benchmarks/nightly/.
#   scripts/nightly.sh                          every test (scripts/test.sh --nightly) and every benchmark below (hours)
#   scripts/nightly.sh --bench NAME ...         only these benchmarks (--bench none: no benchmark)
#   scripts/nightly.sh ... -- PYTEST ARGS       pytest arguments after -- (e.g. -- -k test_gym)
# Writes benchmarks/nightly/YYYY-MM-DD.md (the tests' counts and wall time, each benchmark's command,
# exit status, wall time and the figures it printed, the commit and the machine) and the full logs in
# benchmarks/nightly/YYYY-MM-DD/. Exits non-zero when the tests or a benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# The benchmarks meant to run nightly: the long versions of the interop checks and the figures that
# drift with the code. NAME=COMMAND ARGS (run as .venv/bin/python benchmarks/NAME.py ARGS).
BENCHMARKS=(
  "shared_limit=--jobs 1 2 --repeats 1 --control"  # the key's shared limit at scale, and its negative control
  "gym_oracle_replay=--tasks grasp_single_cube lift_pot place_shoe"  # the oracle through the Gym env
  "verify=--models oracle servo --seeds 2"          # runs, then verify reproduces them
  "export=--repeats 1"                              # LeRobot export time and sizes
  "docs_build=--runs 1"                             # mkdocs build --strict
)

only=() pytest_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench) only+=("$2"); shift 2 ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "scripts/nightly.sh: unknown argument $1 (--bench NAME, or pytest arguments after --)" >&2; exit 2 ;;
  esac
done

day=$(date -u +%F)
out=benchmarks/nightly/$day
summary=benchmarks/nightly/$day.md
mkdir -p "$out"
start=$(date +%s)
./scripts/test.sh --nightly --junitxml="$out/tests.xml" "${pytest_args[@]}" >"$out/tests.log" 2>&1
tests_rc=$?
tests_s=$(($(date +%s) - start))

bench_rows=() failed=$((tests_rc != 0))
for entry in "${BENCHMARKS[@]}"; do
  name=${entry%%=*} args=${entry#*=}
  if [[ ${#only[@]} -gt 0 && ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  t0=$(date +%s)
  # shellcheck disable=SC2086  # the arguments are words
  .venv/bin/python "benchmarks/$name.py" $args >"$out/$name.log" 2>&1
  rc=$?
  failed=$((failed || rc != 0))
  bench_rows+=("$name|$args|$rc|$(($(date +%s) - t0))")
done

quoted=$( ((${#pytest_args[@]})) && printf '%q ' "${pytest_args[@]}")
.venv/bin/python scripts/nightly_summary.py "$summary" "$out" "$tests_rc" "$tests_s" "${quoted% }" "${bench_rows[@]}"
echo "nightly: wrote $summary"
exit "$failed"
