#!/usr/bin/env bash
# Why the published table differs (issue 18): the published four encodings × seeds 1337, 2024, 42
# × 2,000 steps at every combination of PyTorch's default initialisation (--init pytorch: every
# module as PyTorch starts it, embeddings N(0, 1)) and nanoGPT's dropout 0.1, the two unstated
# choices most likely to move the ranking. The first setting (init normal, no dropout) is the
# published design as reproduced: its 12 records are copied from results/published-design under
# the grid's names, so 36 runs train. Resumable: the same command continues. Writes
# runs/published-settings.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
out=runs/published-settings
mkdir -p "$out/records"
for v in learned sinusoidal rope alibi-single; do
  for seed in 1337 2024 42; do
    target="$out/records/$v-seed$seed-steps2000-init-normal-dropout-0.json"
    [ -e "$target" ] || cp "docs/results/published-design/records/$v-seed$seed-steps2000.json" "$target"
  done
done
nice -n 19 build/release/examples/study --variants learned,sinusoidal,rope,alibi-single \
  --seeds 1337,2024,42 --extended-steps 0 --jobs 2 --out "$out" \
  --grid init=normal,pytorch --grid dropout=0,0.1
