#!/usr/bin/env bash
# Longer contexts (issue 19): the twelve encodings × seeds 4, 5, 6 × 2,000 steps under the
# published design's settings, then every base run's final model evaluated at 128–1,024 tokens
# (both protocols, the loss by position in 16 ranges), with the copy probe at 16–512, and each
# rotary encoding again under every RoPE scaling method at ×8 (1,024 / 128); and every base run
# fine-tuned for 200 steps at context 512 (a rotary one also under linear ×4 and YaRN ×4), the
# fine-tuned models evaluated the same way. Resumable: the same
# command continues. The four published encodings' runs of these seeds are the power study's
# (runs/power10, docs/results.md "Power"; finish it first): their records
# are copied where their checkpoints are here, so they are not trained again. Writes
# runs/longer-contexts.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
out=runs/longer-contexts
mkdir -p "$out/records"
# Runs finished in earlier sessions, committed as they finished (a new checkout has no runs/).
# A fine-tune needs its base run's checkpoint, which is not committed: commit a base run's record
# only together with the records of all its fine-tunes (the study runs them right after it).
if [ -d docs/results/longer-contexts/records ]; then
  cp -n docs/results/longer-contexts/records/*.json "$out/records/"
fi
for v in learned sinusoidal rope alibi-single; do
  for seed in 4 5 6; do
    record="runs/power10/records/$v-seed$seed-steps2000.json"
    [ -e "$record" ] && [ ! -e "$out/records/$(basename "$record")" ] || continue
    checkpoint="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["checkpoint"])' "$record")"
    if [ -e "$checkpoint" ]; then cp "$record" "$out/records/"; fi
  done
done
nice -n 19 build/release/examples/study \
  --variants nope,learned,sinusoidal,rope,rope-interleaved,rope-partial,xpos,alibi,alibi-single,t5,kerple,fire \
  --seeds 4,5,6 --extended-steps 0 --jobs 2 --out "$out" \
  --extrapolate 128,256,512,1024 --per-position --bins 16 --copy-probe 16,64,128,256,512 \
  --extrapolate-rope linear:8,ntk:8,dynamic-ntk:8,yarn:8 \
  --fine-tune 512 --fine-tune-steps 200 --fine-tune-rope linear:4,yarn:4
