#!/usr/bin/env bash
# RoPE scaling, per-position loss and the copy probe on two 2,000-step checkpoints of the power study
# (seed 2 of rope and alibi-single); writes runs/longer-contexts-first-look/*.json.
set -u
root="$(cd "$(dirname "$0")/../../.." && pwd)"
B=$root/build/release/examples/shakespeare
D=$root/data/tinyshakespeare/input.txt
R=$root/runs/power10/runs   # the power study's run directories (docs/results.md, "Power")
mkdir -p "$root/runs/longer-contexts-first-look" && cd "$root/runs/longer-contexts-first-look"
export POSENC_NUM_THREADS=1
for method in none linear ntk dynamic-ntk yarn; do
  extra=()
  [ "$method" != none ] && extra=(--rope-scaling "$method" --rope-factor 8)
  [ -s "rope-seed2-$method.json" ] || $B eval --checkpoint $R/rope-seed2-steps2000/model.safetensors --data $D \
    --contexts 128,256,512,1024 --json "${extra[@]}" > "rope-seed2-$method.json.tmp" && mv "rope-seed2-$method.json.tmp" "rope-seed2-$method.json"
done
for v in rope alibi-single; do
  [ -s "$v-seed2-copy.json" ] || $B eval --checkpoint $R/$v-seed2-steps2000/model.safetensors --data $D \
    --copy-probe 16,64,128,256,512 --copy-segments 64 --json > "$v-seed2-copy.json.tmp" && mv "$v-seed2-copy.json.tmp" "$v-seed2-copy.json"
  [ -s "$v-seed2-positions.json" ] || $B eval --checkpoint $R/$v-seed2-steps2000/model.safetensors --data $D \
    --contexts 1024 --per-position --bins 8 --json > "$v-seed2-positions.json.tmp" && mv "$v-seed2-positions.json.tmp" "$v-seed2-positions.json"
done
echo done
