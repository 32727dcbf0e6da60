#!/usr/bin/env bash
# posenc checkpoints in PyTorch: for every policy `shakespeare --list-posenc` lists, trains a small
# model at context 64, then checks that tools/posenc_torch.py (the model written independently in
# PyTorch) gives the same full-pass losses as `shakespeare eval`, at the trained context and at
# twice it (past training: T5's far buckets, FIRE's rows past its threshold, RoPE's unseen angles),
# models trained at randomized positions, and byte and BPE tokens (the twin encodes the text with its
# own tokenizer, so equal target counts and losses check its pre-split and merge order as well).
# Where PyTorch is missing it skips (exit 77), or fails with `require` (the developer preset, which
# CI runs: scripts/test.sh installs Debian's python3-torch).
#   test_pytorch_interop.sh SHAKESPEARE_BINARY WORK_DIR [require]
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import torch" > /dev/null 2>&1; then python="$candidate"; break; fi
done
if [ -z "$python" ]; then
  if [ "${3:-}" = "require" ]; then
    echo "PyTorch is not installed, and this build requires the cross-check (scripts/install-deps.sh --bench)"
    exit 1
  fi
  echo "PyTorch is not installed (scripts/install-deps.sh --bench installs it): skipped"
  exit 77
fi
source "$root/tests/cli/cli_test_lib.sh" "$2"
export POSENC_NUM_THREADS=1
write_corpus corpus.txt 3
policies="$("$bin" --list-posenc | cut -d' ' -f1)"
[ -n "$policies" ] || { echo "shakespeare --list-posenc listed nothing"; exit 1; }
rotary="$("$bin" --list-posenc | grep -F '[rotary' | cut -d' ' -f1)"
[ -n "$rotary" ] || { echo "shakespeare --list-posenc marked no policy rotary"; exit 1; }
# cross_check RUN POLICY CONTEXTS... [-- OPTIONS]: shakespeare eval's losses for RUN's model on $data
# (corpus.txt unless set), each given OPTIONS (RoPE scaling), queued beside the same evaluation for
# the PyTorch model; compare_all runs the queue in one PyTorch process (whose start takes seconds)
# and checks each pair: losses and bits per byte, and the splits' target counts (their tokens).
: > jobs.txt
: > names.txt
checks=0
cross_check() {
  local run="$1" policy="$2" data="${data:-corpus.txt}"
  shift 2
  local contexts=() options=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do contexts+=("$1"); shift; done
  [ $# -gt 0 ] && shift && options=("$@")
  for context in "${contexts[@]}"; do
    checks=$((checks + 1))
    "$bin" eval --checkpoint "$run/model.safetensors" --data "$data" --context "$context" --json "${options[@]}" |
      tr -d '\n' > "posenc-$checks.json"
    echo >> "posenc-$checks.json"
    echo "$run/model.safetensors $data --context $context ${options[*]}" >> jobs.txt
    echo "$run on $data at context $context ${options[*]}" >> names.txt
  done
}
compare_all() {
  "$python" "$root/tools/posenc_torch.py" --batch jobs.txt > torch.jsonl 2> torch.err ||
    { failed "posenc_torch.py --batch: $(tail -3 torch.err)"; return; }
  local i=0
  while IFS= read -r name; do
    i=$((i + 1))
    if "$python" - "posenc-$i.json" <(sed -n "${i}p" torch.jsonl) <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
keys = ("train_loss", "val_loss", "train_bits_per_byte", "val_bits_per_byte")
ok = all(abs(a[k] - b[k]) < 2e-5 for k in keys)  # they agree to ~1e-6
ok = ok and all(a[k] == b[k] for k in ("train_targets", "val_targets"))
print("posenc", *(f"{a[k]:.6f}" for k in keys), a["val_targets"], " pytorch", *(f"{b[k]:.6f}" for k in keys),
      b["val_targets"])
sys.exit(0 if ok else 1)
PY
    then
      pass "$name"
    else
      failed "$name"
    fi
  done < names.txt
  [ "$i" -eq "$checks" ] || failed "compared $i of $checks checks"
}
small_run=(--layers 2 --dim 64 --heads 4 --batch 4 --context 64 --steps 20 --eval-every 20 --eval-iters 2
           --data corpus.txt)
for policy in $policies; do
  "$bin" train --posenc "$policy" "${small_run[@]}" --out "$policy" > /dev/null 2>&1
  if [ "$policy" = learned ]; then
    cross_check "$policy" "$policy" 64  # a learned table has no rows past its training context
  else
    cross_check "$policy" "$policy" 64 128
  fi
done
# RoPE scaling at 4× the trained context, on models whose attention depends on position (after 20
# steps at N(0, 0.02) every method's loss lies within 1e-4 of the others', so a swapped formula
# would pass): each method for rope; YaRN (whose ramp depends on the rotated dimensions and the
# pairing) for the other rotary policies
sharp_run=(--layers 2 --dim 64 --heads 4 --batch 4 --context 64 --steps 40 --eval-every 40 --eval-iters 2
           --data corpus.txt --init pytorch --lr 0.01)
for policy in $rotary; do
  "$bin" train --posenc "$policy" "${sharp_run[@]}" --out "$policy-sharp" > /dev/null 2>&1
done
cross_check rope-sharp rope 256
first_method=$((checks + 1))
for method in linear ntk dynamic-ntk yarn; do
  cross_check rope-sharp rope 256 -- --rope-scaling "$method" --rope-factor 4
done
if "$python" - $(seq -f "posenc-%g.json" $((first_method - 1)) "$checks") <<'PY'
import itertools, json, sys
losses = [json.load(open(f))["val_loss"] for f in sys.argv[1:]]
print("none, linear, ntk, dynamic-ntk, yarn at 4x:", " ".join(f"{x:.4f}" for x in losses))
sys.exit(0 if all(abs(a - b) > 1e-3 for a, b in itertools.combinations(losses, 2)) else 1)
PY
then
  pass "the scalings' losses differ from each other by far more than the cross-check's tolerance"
else
  failed "the scaling cross-check cannot tell the methods apart"
fi
for policy in $rotary; do
  [ "$policy" = rope ] || cross_check "$policy-sharp" "$policy" 256 -- --rope-scaling yarn --rope-factor 4
done
cross_check rope-sharp rope 128 -- --rope-base 500 --rope-scaling yarn --rope-factor 2 --yarn-beta-fast 16 \
  --yarn-beta-slow 2 --yarn-attention-factor 1.2
# a model trained with a scaling keeps it in its checkpoint, which both sides read
"$bin" train --posenc rope "${small_run[@]}" --rope-scaling linear --rope-factor 2 --out rope-linear > /dev/null 2>&1
cross_check rope-linear rope 64 128
# a tied lm_head (no lm_head.weight in the file), PyTorch's initialisation, and the training settings
"$bin" train --posenc kerple "${small_run[@]}" --tie-weights --init pytorch --lr-schedule cosine \
  --warmup-steps 5 --grad-clip 1 --grad-accum 2 --decay-on matrices --dropout 0.1 --out kerple-tied > /dev/null 2>&1
cross_check kerple-tied kerple 64
# randomized positions (Ruoss et al.): each batch read at the positions posenc draws for its tokens,
# which the twin draws again; every policy, at the trained context and at the range's end
for policy in $policies; do
  "$bin" train --posenc "$policy" "${small_run[@]}" --random-positions 256 --out "$policy-random" > /dev/null 2>&1
  cross_check "$policy-random" "$policy" 64 256
done
# byte and BPE tokens, on the corpus and on text it lacks, whose validation part has every case of
# the pre-split: UTF-8 (letters, to it), contractions, digits, runs of spaces, tabs and blank lines
"$bin" train --posenc rope "${small_run[@]}" --tokenizer byte --out rope-byte > /dev/null 2>&1
cross_check rope-byte rope 64
"$bin" train --posenc rope "${small_run[@]}" --tokenizer bpe --vocab-size 300 --out rope-bpe > /dev/null 2>&1
cross_check rope-bpe rope 64 128
{
  head -n 600 corpus.txt
  for i in $(seq 30); do
    printf "JULIET: it's 'tis they'll  be—café naïve %d,\t%d5 to  \n\n   ROMEO's 'TIS!! '\n" "$i" "$((i * 37))"
  done
} > mixed.txt
data=mixed.txt cross_check rope-bpe rope 64
compare_all
finish
