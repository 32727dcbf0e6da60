#!/usr/bin/env bash
# The main job: installs the dependencies, builds posenc's release preset, fetches Tiny Shakespeare,
# trains the study's RoPE model for a short demo and prints a generated sample.
#   scripts/run-example.sh [STEPS]     default 300 steps (a few minutes on 2 cores)
# Run again, it continues the demo run in runs/demo-rope up to STEPS (or just samples).
set -euo pipefail
cd "$(dirname "$0")/.."

steps="${1:-300}"
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target shakespeare
scripts/fetch-data.sh

shakespeare=build/release/examples/shakespeare
run=runs/demo-rope
resume=()
if [ -f "$run/config.json" ]; then resume=(--resume); fi
if [ ${#resume[@]} -eq 0 ]; then
  "$shakespeare" train --posenc rope --steps "$steps" --eval-every 100 --eval-iters 20 --out "$run"
else
  "$shakespeare" train --resume --steps "$steps" --out "$run"
fi
"$shakespeare" sample --checkpoint "$run/model.safetensors" --prompt "ROMEO:" --tokens 300 --seed 1
