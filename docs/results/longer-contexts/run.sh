#!/usr/bin/env bash
# Longer contexts (issue 19): the twelve encodings × seeds 4, 5, 6 × 2,000 steps under the
# published design's settings, then every base run's final model evaluated at 128–1,024 tokens
# (both protocols, the loss by position in 16 ranges), with the copy probe at 16–512 (a distance n
# takes 2n positions: 512 reaches the longest evaluation length), and each rotary encoding again
# under every RoPE scaling method at ×8 (1,024 / 128, the factor a deployment at 1,024 sets) and
# linear, NTK and YaRN also at ×4 (the fine-tunes' factor, so stretching at inference and
# stretching with a fine-tune compare at one factor; dynamic NTK sets its own by length); and every
# base run fine-tuned for 200 steps at context 512 (a rotary one also under linear ×4 and YaRN ×4:
# the interpolation methods a fine-tune is usually paired with), the fine-tuned models evaluated
# the same way. The loss estimates every 250 steps use 50 batches, not
# 200: they draw their own batches and train the same bits whatever their size (test_training),
# and at 200 they took about a third of a run. Resumable: the same command continues. (The power
# study trained the four published encodings at these seeds too, but its checkpoints are gone
# and its estimates were of 200 batches: every run trains here.) Writes runs/longer-contexts.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
out=runs/longer-contexts
mkdir -p "$out/records"
# Runs finished in earlier sessions, committed as they finished (a new checkout has no runs/).
# A fine-tune needs its base run's checkpoint, which is not committed: commit a base run's record
# only together with the records of all its fine-tunes (the study runs them right after it), and
# no record the log calls "part-way" ("stopped … in its evaluation after training, its record
# part-way": it needs its checkpoint to be completed). collect.sh copies the runs that may be
# committed; commit them as they finish.
shopt -s nullglob
committed=(docs/results/longer-contexts/records/*.json)
if [ ${#committed[@]} -gt 0 ]; then
  cp -n "${committed[@]}" "$out/records/"
fi
nice -n 19 build/release/examples/study \
  --variants nope,learned,sinusoidal,rope,rope-interleaved,rope-partial,xpos,alibi,alibi-single,t5,kerple,fire \
  --seeds 4,5,6 --extended-steps 0 --eval-iters 50 --jobs 2 --out "$out" \
  --extrapolate 128,256,512,1024 --per-position --bins 16 --copy-probe 16,64,128,256,512 \
  --extrapolate-rope linear:4,linear:8,ntk:4,ntk:8,dynamic-ntk:8,yarn:4,yarn:8 \
  --fine-tune 512 --fine-tune-steps 200 --fine-tune-rope linear:4,yarn:4
