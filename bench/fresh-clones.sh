#!/usr/bin/env bash
# The bench from fresh clones, one after the other: each run clones this
# repository's HEAD into a folder of its own, installs from the lock file with the pinned Node
# (scripts/node-runtime) and runs `npm run bench`; the first run every scenario, the others every
# scenario but the three long ones (campaign-calls, scale-effects, webhooks-out). Results, logs
# and each run's latest.json go to OUT; `node bench/fresh-clones-table.mjs OUT` prints the medians.
# Usage: bash bench/fresh-clones.sh [RUNS=3] [OUT=/tmp/bench-fresh] [WORK=/tmp/bench-clones]
# FRESH_ONLY=a,b: every run those scenarios only (a change measured again on what it touches).
# Needs a quiet machine: the runs take about 30 + 8 + 8 minutes on two cores.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
out="${2:-/tmp/bench-fresh}"
work="${3:-/tmp/bench-clones}"
short="create-call,webhooks,webhook-bodies,campaigns,contacts-import,list-calls,intake-cost"
mkdir -p "$out" "$work"
head="$(git -C "$repo" rev-parse --short HEAD)"
for i in $(seq 1 "$runs"); do
  dir="$work/run-$i"
  rm -rf "$dir"
  git clone -q "$repo" "$dir"
  (
    cd "$dir" || exit 1
    node_bin="$(node scripts/node-runtime/ensure.mjs)" || exit 1
    export PATH="$node_bin:$PATH"
    npm ci --no-audit --no-fund > "$out/npm-ci-$i.log" 2>&1 || exit 1
    echo "run $i head $head start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/runs.txt"
    if [ -n "${FRESH_ONLY:-}" ]; then only=(-- "--only=$FRESH_ONLY")
    elif [ "$i" = 1 ]; then only=(); else only=(-- "--only=$short"); fi
    BENCH_DEADLINE_S="${BENCH_DEADLINE_S:-4000}" npm run bench "${only[@]}" > "$out/run-$i.out" 2> "$out/run-$i.err"
    echo "run $i rc $? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/runs.txt"
    cp bench/results/latest.json "$out/run-$i.json"
    cp bench/results/latest.meta.json "$out/run-$i.meta.json"
  )
done
