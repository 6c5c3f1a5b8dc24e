#!/usr/bin/env bash
# Run the peer benchmark (../shared/bench) with toolreel beside its raw_httpx baseline.
# The bench folder is copied to a temporary directory (it writes results/raw/ there);
# extra arguments go to its run.py, e.g.:  tests/bench/peer_bench.sh --reps 3 --rounds 10 50
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="${TOOLREEL_PEER_BENCH:-$root/../shared/bench}"
if [ -z "${TOOLREEL_PEER_BENCH:-}" ] && [ ! -d "$bench" ]; then
  bench="$root/../../shared/bench"  # a git worktree one level deeper (e.g. wt/NAME)
fi
work="$(mktemp -d)"
cp -r "$bench/." "$work/"
chmod -R u+w "$work"
export TOOLREEL_BENCH_DIR="$work"
"$root/.venv/bin/python" "$work/run.py" --only toolreel \
  --contestant "toolreel=$root/.venv/bin/python $root/tests/bench/contestant_toolreel.py" \
  --out "$work/summary.md" "$@"
echo "summary: $work/summary.md"
