#!/usr/bin/env bash
# Power (issue 18): the published design (learned, sinusoidal, rope, alibi-single; 2,000 steps;
# the study's settings) with ten seeds. The finished runs' records committed here are copied first,
# so only the missing runs train. Resumable: the same command continues. Writes runs/power10.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
out=runs/power10
mkdir -p "$out/records"
cp -n docs/results/power-10-seeds/records/*.json "$out/records/"
nice -n 19 build/release/examples/study --variants learned,sinusoidal,rope,alibi-single \
  --seeds 1337,2024,42,1,2,3,4,5,6,7 --extended-steps 0 --jobs 2 --out "$out"
