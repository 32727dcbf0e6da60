#!/usr/bin/env bash
# The main job: installs the dependencies, builds posenc's release preset, fetches Tiny Shakespeare,
# trains the study's RoPE model for a short demo and prints a generated sample.
#   scripts/run-example.sh [STEPS]     default 300 steps (a few minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."

steps="${1:-300}"
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target quickstart
scripts/fetch-data.sh
build/release/examples/quickstart data/tinyshakespeare/input.txt "$steps"
