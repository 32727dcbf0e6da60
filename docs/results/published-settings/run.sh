#!/usr/bin/env bash
# Why the published table differs (issue 18): the published four encodings × seeds 1337, 2024, 42
# × 2,000 steps at the study's settings and at five more, the unstated choices most likely to move
# the ranking — each alone, then all three together:
#   init=pytorch                               every module as PyTorch starts it (embeddings N(0, 1))
#   dropout=0.1                                nanoGPT's dropout at its four places
#   lr_schedule=cosine warmup_steps=100        100 steps of linear warm-up, then cosine decay to lr/10
#   all three together
#   dropout=0.2                                added because dropout 0.1 moved the ranking (the issue asks)
# The study's own settings are the published design as reproduced: its 12 records are copied from
# results/published-design, so 60 runs train (about 12 h on two idle cores of a Zen 4, 7 h on a
# Zen 5). Resumable: the same command continues, also from a new checkout: commit the records
# with a setting in their name (runs/published-settings/records/*-steps2000-*.json, not the copied
# study's-settings ones) to docs/results/published-settings/records as runs finish. Writes
# runs/published-settings.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
out=runs/published-settings
mkdir -p "$out/records"
cp -n docs/results/published-design/records/*-steps2000.json "$out/records/"
# the runs finished in earlier sessions, committed as they finished (a new checkout has no runs/)
if [ -d docs/results/published-settings/records ]; then
  cp -n docs/results/published-settings/records/*.json "$out/records/"
fi
nice -n 19 build/release/examples/study --variants learned,sinusoidal,rope,alibi-single \
  --seeds 1337,2024,42 --extended-steps 0 --jobs 2 --out "$out" \
  --grid-point init=pytorch --grid-point dropout=0.1 --grid-point 'lr_schedule=cosine warmup_steps=100' \
  --grid-point 'init=pytorch dropout=0.1 lr_schedule=cosine warmup_steps=100' --grid-point dropout=0.2
