#!/usr/bin/env bash
# The main job: installs the dependencies, builds posenc's release preset, fetches Tiny Shakespeare,
# trains the study's RoPE model for a short demo and prints a generated sample.
#   scripts/run-example.sh [STEPS]     default 300 steps (a few minutes on 2 cores)
# Run again, it continues the demo run in runs/demo-rope up to STEPS (or just samples).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac
[ $# -le 1 ] || { echo "run-example.sh: one argument at most, the steps (got $#)" >&2; usage >&2; exit 2; }
steps="${1:-300}"
[[ "$steps" =~ ^[1-9][0-9]{0,8}$ ]] ||
  { echo "run-example.sh: STEPS must be a whole number from 1 to 999999999, got '$steps'" >&2; usage >&2; exit 2; }
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target shakespeare
scripts/fetch-data.sh

shakespeare=build/release/examples/shakespeare
run=runs/demo-rope
# the step the demo run has reached, 0 before it has one
reached=0
if [ -s "$run/log.jsonl" ]; then
  reached=$(tail -n 1 "$run/log.jsonl" | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
fi
if [ ! -f "$run/config.json" ]; then
  "$shakespeare" train --posenc rope --steps "$steps" --eval-every 100 --eval-iters 20 --out "$run"
elif [ -f "$run/model.safetensors" ] && [ "${reached:-0}" -ge "$steps" ]; then
  echo "the demo run in $run is at step $reached already: sampling from it (give more steps to train it further)"
else
  "$shakespeare" train --resume --steps "$steps" --out "$run"
fi
"$shakespeare" sample --checkpoint "$run/model.safetensors" --prompt "ROMEO:" --tokens 300 --seed 1
