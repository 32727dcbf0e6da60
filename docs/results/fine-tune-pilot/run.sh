#!/usr/bin/env bash
# Fine-tuning at context 512, a pilot (issue 19): the power study's 2,000-step checkpoints of
# seeds 2 and 3 of rope and alibi-single (trained at context 128), each fine-tuned for 200 steps
# at 512 (batch 8: the training steps' 4,096 tokens), rope also under linear ×4 and YaRN ×4; then
# every base and fine-tuned model evaluated at 128–1,024 (both protocols, the loss by position
# in 16 ranges) with the copy probe at 16–512. Needs runs/power10 with those runs' checkpoints;
# resumable (the same command continues). Writes runs/fine-tune-pilot.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
out=runs/fine-tune-pilot
mkdir -p "$out/records"
for v in rope alibi-single; do
  for seed in 2 3; do
    record="runs/power10/records/$v-seed$seed-steps2000.json"
    [ -e "$out/records/$(basename "$record")" ] || cp "$record" "$out/records/"
  done
done
build/release/examples/study --variants rope,alibi-single --seeds 2,3 --extended-steps 0 --jobs 2 --out "$out" \
  --extrapolate 128,256,512,1024 --per-position --bins 16 --copy-probe 16,64,128,256,512 \
  --fine-tune 512 --fine-tune-steps 200 --fine-tune-rope linear:4,yarn:4
