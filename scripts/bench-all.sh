#!/usr/bin/env bash
# `npm run bench:all`: what issue 53 asks to be run on a quiet machine, in one command (~20–25 minutes):
# three full `npm run bench` runs in a row (each kept as bench/results/run-<n>.json), `npm run bench:scale`
# at 1,000 machines, then their medians against the goals (bench/summary.ts), also written into latest.json.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f bench/results/run-*.json
for n in 1 2 3; do
  echo "bench:all: full run $n of 3" >&2
  npm run bench
  cp bench/results/latest.json "bench/results/run-$n.json"
done
echo "bench:all: 1,000 simulated machines" >&2
npm run bench:scale
npx tsx bench/summary.ts
