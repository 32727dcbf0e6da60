#!/usr/bin/env bash
# MPI on one machine (mpirun --oversubscribe -np 2): a distributed study (with fine-tunes, which
# follow their base run on its rank) whose summary equals the single-process study's, a failing run reported by the rank that ran it while the others finish,
# and data-parallel training that gives one process's losses (tolerance below), also when resumed.
#   test_mpi.sh STUDY_BINARY SHAKESPEARE_BINARY WORK_DIR
study="$1"
shakespeare="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cli/cli_test_lib.sh" "$3"
if ! command -v mpirun > /dev/null; then
  echo "mpirun not found: install openmpi-bin (scripts/install-deps.sh --mpi)"
  exit 77
fi
# One thread per process: the runs' arithmetic then does not depend on how the cores are shared,
# so the distributed study must reproduce the single-process numbers exactly.
export POSENC_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI containers run as root
export OMPI_MCA_btl_vader_single_copy_mechanism=none              # containers often forbid ptrace
export OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --oversubscribe -np 2)
# What a failed MPI command said: the program's own error lines (Open MPI's MPI_Abort notice
# follows them and would fill a plain tail), else the last lines.
last_words() {
  grep -m3 -e ' (rank [0-9]*): ' -e '^error' "$1" || tail -5 "$1"
}
write_corpus corpus.txt 5

design=(--variants rope,alibi --seeds 1,2 --steps 60 --extended-steps 90 --extended-seeds 1
        --eval-every 30 --eval-iters 2 --layers 2 --dim 64 --heads 4 --batch 4 --context 16
        --extrapolate 16,32 --fine-tune 32 --fine-tune-steps 10 --fine-tune-rope linear:2 --data corpus.txt)
"$study" "${design[@]}" --out single > single.log 2>&1 || failed "single-process study: $(tail -3 single.log)"
if "${mpi[@]}" "$study" "${design[@]}" --out distributed > distributed.log 2>&1 &&
   grep -q "2 MPI rank(s)" distributed.log && [ "$(ls distributed/records | wc -l)" -eq 12 ] &&
   grep -q "(rank 1)" distributed.log; then
  pass "mpirun -np 2 study hands runs to both ranks and rank 0 writes every record"
else
  failed "distributed study: $(last_words distributed.log)"
fi
# The summaries must agree in everything but the clocks (wall time, tokens/s) and the paths.
compare_summaries() {
  python3 - "$1" "$2" <<'PY'
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if "seconds" not in k and "tokens_per_second" not in k and k not in ("checkpoint", "out")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PY
}
if compare_summaries single/summary.json distributed/summary.json && cmp -s <(sed 1d single/summary.csv | cut -d, -f1-5) <(sed 1d distributed/summary.csv | cut -d, -f1-5); then
  pass "the distributed study's summary equals the single-process summary of the same runs"
else
  failed "summaries differ: $(diff <(python3 -m json.tool single/summary.json) <(python3 -m json.tool distributed/summary.json) | head -20)"
fi
if "${mpi[@]}" "$study" "${design[@]}" --out distributed > again.log 2>&1 && grep -q "12 finished, 0 to run" again.log; then
  pass "a finished distributed study skips every run"
else
  failed "distributed rerun: $(last_words again.log)"
fi

# A run that cannot start (its directory's name is taken by a file): the rank that got it reports
# it, the other runs (but its fine-tune) finish, the summary names it missing and the study exits 1.
mkdir -p broken/runs && echo "in the way" > broken/runs/alibi-seed2-steps60
"${mpi[@]}" "$study" "${design[@]}" --out broken > broken.log 2>&1
status=$?
if [ "$status" -ne 0 ] && grep -q "alibi-seed2-steps60 (rank [01])" broken.log &&
   [ "$(ls broken/records | wc -l)" -eq 10 ] && grep -q "Missing runs.*alibi-seed2-steps60" broken/summary.md; then
  pass "a failed run is reported with its rank and reason; the others finish; the summary names it missing"
else
  failed "failure report (exit $status): $(last_words broken.log)"
fi
expect_error "--jobs under mpirun is refused" "start more ranks instead" \
  "${mpi[@]}" "$study" "${design[@]}" --out jobs --jobs 2

# Data-parallel training: the same seed and global batch over 2 ranks. Float rounding differs only
# in the order of the sums over the batch; after 60 AdamW steps the estimates agree to 1e-3 relative
# (measured: about 1e-6).
train=(train --posenc rope --layers 2 --dim 64 --heads 4 --batch 8 --context 16 --eval-every 30
       --eval-iters 4 --seed 3 --data corpus.txt)
"$shakespeare" "${train[@]}" --steps 60 --out alone > alone.log 2>&1 || failed "single-process training: $(tail -3 alone.log)"
compare_logs() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
if [r["step"] for r in a] != [r["step"] for r in b]:
    sys.exit("steps differ")
worst = max(abs(x[k] - y[k]) / abs(y[k]) for x, y in zip(a, b) for k in ("train_loss", "val_loss"))
print(f"# largest relative difference of the estimates: {worst:.2e}")
sys.exit(0 if worst < 1e-3 else 1)
PY
}
if "${mpi[@]}" "$shakespeare" "${train[@]}" --steps 60 --out parallel > parallel.log 2>&1 &&
   grep -q "data-parallel over 2 ranks" parallel.log && compare_logs parallel/log.jsonl alone/log.jsonl &&
   [ -s parallel/model.safetensors ]; then
  pass "mpirun -np 2 shakespeare train gives the single-process losses"
else
  failed "data-parallel training: $(last_words parallel.log)"
fi
"$shakespeare" eval --checkpoint alone/model.safetensors --data corpus.txt --json > alone.json
"$shakespeare" eval --checkpoint parallel/model.safetensors --data corpus.txt --json > parallel.json
if python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); sys.exit(0 if abs(a["val_loss"]-b["val_loss"])<1e-3*b["val_loss"] else 1)' parallel.json alone.json; then
  pass "the data-parallel model's full-pass validation loss equals the single-process model's"
else
  failed "final models differ: $(cat parallel.json alone.json)"
fi

# Resumed under mpirun: rank 0 reads the run and sends the configuration and state to the other
# rank. (Under the sanitizer preset, built only for 2x64x4, a rank that checked its own default
# model size instead of rank 0's refused to resume.)
"${mpi[@]}" "$shakespeare" "${train[@]}" --steps 30 --out resumed > resumed-start.log 2>&1 ||
  failed "data-parallel run to resume: $(last_words resumed-start.log)"
if "${mpi[@]}" "$shakespeare" train --resume --out resumed --steps 60 > resumed.log 2>&1 &&
   compare_logs resumed/log.jsonl alone/log.jsonl; then
  pass "a data-parallel run resumed under mpirun continues as the uninterrupted run"
else
  failed "data-parallel resume: $(last_words resumed.log)"
fi
expect_error "eval under mpirun is refused" "only train runs over several MPI ranks" \
  "${mpi[@]}" "$shakespeare" eval --checkpoint alone/model.safetensors --data corpus.txt
finish
