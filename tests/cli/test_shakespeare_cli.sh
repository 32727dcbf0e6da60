#!/usr/bin/env bash
# Command-line tests of the shakespeare program on a small corpus this script writes itself:
# train, eval and sample work; --resume reproduces an uninterrupted run; and every kind of bad
# input exits with status 2 and a message that names the problem.
#   test_shakespeare_cli.sh SHAKESPEARE_BINARY WORK_DIR
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/cli_test_lib.sh" "$2"
export POSENC_NUM_THREADS=1
write_corpus corpus.txt 7
small=(--posenc rope --layers 2 --dim 64 --heads 4 --eval-every 10 --eval-iters 3)
tiny=("${small[@]}" --batch 4 --context 16)

# --- what works -----------------------------------------------------------------------------
if "$bin" --list-posenc > list.txt 2>&1 && [ -s list.txt ] && ! grep -qvE '^[a-z0-9-]+ +[^ ]' list.txt &&
   grep -q '^rope  *rotary embedding' list.txt && grep -q '^alibi-single  *ALiBi' list.txt; then
  pass "--list-posenc lists every encoding of the registry with its summary, and exits 0"
else
  failed "--list-posenc: $(head -3 list.txt)"
fi

if "$bin" train "${tiny[@]}" --data corpus.txt --steps 30 --out full > train.log 2>&1 && [ -f full/model.safetensors ] &&
   [ "$(wc -l < full/log.jsonl)" -eq 4 ] && [ -f full/checkpoint-step000030.safetensors ]; then
  pass "train writes the log, a checkpoint per eval and the final model"
else
  failed "train: $(tail -5 train.log)"
fi

"$bin" train "${tiny[@]}" --data corpus.txt --steps 20 --out resumed > /dev/null 2>&1
if "$bin" train --resume --steps 30 --out resumed > resume.log 2>&1 &&
   cmp -s full/model.safetensors resumed/model.safetensors &&
   diff <(python3 -c 'import json,sys; [print(json.loads(l)["step"], json.loads(l)["train_loss"], json.loads(l)["val_loss"]) for l in open(sys.argv[1])]' full/log.jsonl) \
        <(python3 -c 'import json,sys; [print(json.loads(l)["step"], json.loads(l)["train_loss"], json.loads(l)["val_loss"]) for l in open(sys.argv[1])]' resumed/log.jsonl) > /dev/null; then
  pass "a resumed run's losses and final model equal the uninterrupted run's"
else
  failed "resume: $(tail -5 resume.log)"
fi

# Checkpoints are pruned to the newest N evaluations and the best one; the run still resumes.
"$bin" train --posenc rope --layers 2 --dim 64 --heads 4 --eval-iters 3 --batch 4 --context 16 --data corpus.txt \
  --steps 40 --eval-every 5 --keep-checkpoints 2 --out pruned > /dev/null 2>&1
kept=$(ls pruned/checkpoint-step*.safetensors 2>/dev/null | wc -l)
if [ "$kept" -ge 2 ] && [ "$kept" -le 3 ] && [ -f pruned/checkpoint-step000040.safetensors ] &&
   [ -f pruned/checkpoint-step000035.safetensors ] && "$bin" train --resume --steps 45 --out pruned > /dev/null 2>&1 &&
   [ -f pruned/checkpoint-step000045.safetensors ] && [ -f pruned/checkpoint-step000040.safetensors ] &&
   [ "$(ls pruned/checkpoint-step*.safetensors | wc -l)" -le 3 ]; then
  pass "--keep-checkpoints keeps the newest N and the best checkpoint, and the run resumes"
else
  failed "--keep-checkpoints: $(ls pruned)"
fi

# A binary corpus trains, with a warning; sample prints every byte it generates, NUL included.
python3 -c '
import random
random.seed(5)
open("binary.bin", "wb").write(bytes(random.choice(b"\x00abc\n") for _ in range(30000)))'
if "$bin" train "${tiny[@]}" --data binary.bin --steps 2 --out binary > binary.log 2> binary.err &&
   grep -q "does not look like text: .* control bytes such as NUL" binary.err &&
   "$bin" sample --checkpoint binary/model.safetensors --prompt a --tokens 300 --seed 3 > binary-sample.txt 2>&1 &&
   [ "$(wc -c < binary-sample.txt)" -eq 302 ]; then
  pass "a binary corpus trains with a warning, and sample prints all 300 bytes it generated"
else
  failed "binary corpus: $(head -c 300 binary.err); sample of $(wc -c < binary-sample.txt) bytes"
fi

# --embedding-std is kept in config.json, so --resume starts nothing differently: the resumed run
# equals the uninterrupted one, and both differ from the default start.
"$bin" train "${tiny[@]}" --data corpus.txt --steps 30 --embedding-std 1 --out wide > /dev/null 2>&1
"$bin" train "${tiny[@]}" --data corpus.txt --steps 20 --embedding-std 1 --out wide-resumed > /dev/null 2>&1
if "$bin" train --resume --steps 30 --out wide-resumed > wide-resume.log 2>&1 &&
   python3 -c 'import json,sys; sys.exit(0 if json.load(open("wide-resumed/config.json"))["embedding_std"] == 1 else 1)' &&
   cmp -s wide/model.safetensors wide-resumed/model.safetensors && ! cmp -s wide/model.safetensors full/model.safetensors; then
  pass "--embedding-std is part of the run's configuration and survives --resume"
else
  failed "--embedding-std: $(tail -5 wide-resume.log)"
fi

# The training settings (schedule, clipping, accumulation, decay scope, initialisation, tying) are
# kept in config.json and the checkpoints: --resume continues them to the uninterrupted run's bits.
settings=(--lr-schedule wsd --warmup-steps 4 --decay-fraction 0.5 --grad-clip 0.5 --grad-accum 2 --decay-on matrices
          --beta2 0.95 --init pytorch --tie-weights --dropout 0.1)
"$bin" train "${tiny[@]}" --data corpus.txt --steps 30 "${settings[@]}" --out settings > settings.log 2>&1
"$bin" train "${tiny[@]}" --data corpus.txt --steps 30 "${settings[@]}" --out settings-resumed > /dev/null 2>&1 &
pid=$!
while [ ! -f settings-resumed/checkpoint-step000020.safetensors ] && kill -0 "$pid" 2> /dev/null; do sleep 0.05; done
kill -9 "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
if "$bin" train --resume --out settings-resumed > settings-resume.log 2>&1 &&
   cmp -s settings/model.safetensors settings-resumed/model.safetensors &&
   python3 - settings/config.json settings/model.safetensors <<'PY'
import json, struct, sys
c = json.load(open(sys.argv[1]))
want = {"lr_schedule": "wsd", "warmup_steps": 4, "decay_fraction": 0.5, "grad_clip": 0.5, "grad_accum": 2,
        "weight_decay_scope": "matrices", "beta2": 0.95, "init": "pytorch", "tie_weights": True, "embedding_std": 1.0,
        "dropout": 0.1}
assert all(c[k] == v for k, v in want.items()), {k: c[k] for k in want}
f = open(sys.argv[2], "rb")
header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
meta = header["__metadata__"]
assert meta["tie_weights"] == "true" and "lm_head.weight" not in header, meta
assert (meta["init"], meta["embedding_std"], meta["dropout"]) == ("pytorch", "1.0", "0.1"), meta
assert json.loads(meta["training"])["lr_schedule"] == "wsd", meta["training"]
PY
then
  pass "training settings are recorded in config.json and the checkpoint, and --resume continues them exactly"
  # the progress shows each step's rate (warm-up: lr·step/4) and gradient norm
  if grep -qE "^step 1/30 loss [0-9.]+ lr 0.00025 grad_norm [0-9.e+-]+ " settings.log &&
     grep -qE "^step 4/30 loss [0-9.]+ lr 0.001 grad_norm [0-9.e+-]+ " settings.log; then
    pass "train's progress shows the learning rate and the gradient norm"
  else
    failed "progress: $(grep -m 4 '^step' settings.log)"
  fi
else
  failed "training settings: $(tail -3 settings.log) $(tail -3 settings-resume.log)"
fi
if "$bin" train --help > train-help.txt 2>&1 && grep -q -- "--lr-schedule" train-help.txt &&
   grep -q "TEXT:{constant,cosine,linear,wsd}\|constant,cosine,linear,wsd\|{constant,cosine,linear,wsd}" train-help.txt &&
   grep -q -- "--grad-accum" train-help.txt && grep -q -- "--tie-weights" train-help.txt; then
  pass "train --help lists the schedules and the other training settings"
else
  failed "train --help: $(grep -- '--lr-schedule' train-help.txt)"
fi

# Ctrl-C (SIGINT) stops the run after its step, saves that step, says how to resume and exits 130;
# resumed, the run equals an uninterrupted one bit for bit. A second Ctrl-C quits at once, and the
# run still resumes from its last complete state.
long=("${tiny[@]}" --data corpus.txt --steps 1000 --lr-schedule cosine --dropout 0.1)
"$bin" train "${long[@]}" --out sigint-whole > /dev/null 2>&1
# start_and_signal OUT SIGNALS...: trains into OUT and sends the signals once its first checkpoint exists
start_and_signal() {
  local out="$1"
  shift
  "$bin" train "${long[@]}" --out "$out" > "$out.log" 2> "$out.err" &
  local pid=$!
  while [ ! -f "$out/checkpoint-step000000.safetensors" ] && kill -0 "$pid" 2> /dev/null; do sleep 0.02; done
  sleep 0.2
  for signal in "$@"; do kill "-$signal" "$pid"; done
  wait "$pid"
}
# The folder's name needs quoting: the printed command, run by the shell as printed, resumes it.
start_and_signal "sig int;x" INT
status=$?
stopped_at=$(python3 -c 'import json,struct,sys; f=open(sys.argv[1],"rb"); print(json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]["optimizer_step"])' "sig int;x/optimizer.safetensors")
resume_command=$(sed -n 's/^  \(.* train --resume .*\)$/\1/p' "sig int;x.err")
if [ "$status" -eq 130 ] && grep -q "interrupted at step $stopped_at of 1000" "sig int;x.err" &&
   grep -q "train --resume --out 'sig int;x'" "sig int;x.err" && [ "$stopped_at" -gt 0 ] && [ "$stopped_at" -lt 1000 ] &&
   [ -f "sig int;x/checkpoint-step$(printf %06d "$stopped_at").safetensors" ] &&
   eval "$resume_command" > sigint-resume.log 2>&1 && [ ! -e "sig int" ] &&
   cmp -s "sig int;x/model.safetensors" sigint-whole/model.safetensors; then
  pass "Ctrl-C saves the step it stopped at, exits 130 and prints a resume command the shell runs as is; the resumed run equals the uninterrupted one"
else
  failed "Ctrl-C: exit $status at step $stopped_at: $(cat "sig int;x.err") $(tail -2 sigint-resume.log)"
fi
start_and_signal sigterm-twice TERM TERM
status=$?
if [ "$status" -eq 130 ] && "$bin" train --resume --out sigterm-twice > /dev/null 2>&1 &&
   cmp -s sigterm-twice/model.safetensors sigint-whole/model.safetensors; then
  pass "a second SIGTERM quits at once, and the run resumes from its last complete state"
else
  failed "second signal: exit $status: $(cat sigterm-twice.err)"
fi

# A run folder has one writer: while a run trains, a second train or a --resume into its folder is
# refused, naming the process, and leaves the folder as it was.
"$bin" train "${long[@]}" --out busy > busy.log 2> busy.err &
busy_pid=$!
while [ ! -f busy/checkpoint-step000000.safetensors ] && kill -0 "$busy_pid" 2> /dev/null; do sleep 0.02; done
cp busy/config.json busy-config.json
expect_error "a second train into a running run's folder" "the directory 'busy' is in use by another process (process $busy_pid on" \
  "$bin" train "${long[@]}" --out busy
expect_error "a --resume into a running run's folder" "is in use by another process (process $busy_pid" \
  "$bin" train --resume --out busy
if cmp -s busy/config.json busy-config.json && kill -0 "$busy_pid" 2> /dev/null; then
  pass "the refused runs left the running run's folder as it was"
else
  failed "a refused run changed busy/config.json or stopped the running run"
fi
kill -INT "$busy_pid"
wait "$busy_pid"
if "$bin" train --resume --out busy > busy-resume.log 2>&1 && cmp -s busy/model.safetensors sigint-whole/model.safetensors; then
  pass "once its process has ended the run folder is free again: --resume finishes it"
else
  failed "resume after the lock's holder ended: $(tail -2 busy-resume.log)"
fi

# A run whose first save never finished (a full disk at step 0 leaves step 0's checkpoint and log
# but no optimizer state) resumes from the start instead of failing, says so, and gives the
# uninterrupted run's model. Once a later step was saved, a lost optimizer state is refused
# instead: starting over would overwrite the run's checkpoints and log.
"$bin" train "${tiny[@]}" --data corpus.txt --steps 30 --out no-state > /dev/null 2>&1
cp -r no-state lost-state
rm -f no-state/optimizer.safetensors no-state/model.safetensors
find no-state -name 'checkpoint-step*' ! -name checkpoint-step000000.safetensors -delete
head -1 lost-state/log.jsonl > no-state/log.jsonl
if "$bin" train --resume --out no-state > no-state.log 2>&1 && grep -q "no state saved yet: from step 0" no-state.log &&
   cmp -s no-state/model.safetensors full/model.safetensors; then
  pass "--resume of a run with no complete state yet starts it over and says so"
else
  failed "--resume without an optimizer state: $(tail -3 no-state.log)"
fi
rm lost-state/optimizer.safetensors
cp lost-state/log.jsonl lost-log.jsonl
expect_error "--resume of a run that lost its optimizer state after saving step 30" \
  "its optimizer state 'lost-state/optimizer.safetensors' is missing, yet the run saved step 30" \
  "$bin" train --resume --out lost-state
if cmp -s lost-state/log.jsonl lost-log.jsonl; then
  pass "the refused resume left the run's log as it was"
else
  failed "the refused resume rewrote lost-state/log.jsonl"
fi

# The first line names the GEMM backend, its kernel and the threads; config.json keeps them.
if [ "$(head -1 train.log | cut -c1-9)" = "compute: " ] && grep -q " GEMMs (" <(head -1 train.log) &&
   python3 -c 'import json,sys; c=json.load(open("full/config.json"))["compute"]; sys.exit(0 if c["gemm_backend"] in ("onednn","openblas") and c["gemm_kernel"] and c["threads"] == 1 and c["threads_adaptive"] is False else 1)'; then
  pass "train reports its GEMM backend, kernel and thread count first and in config.json"
else
  failed "compute report: $(head -2 train.log); $(cat full/config.json)"
fi

# bf16: trains and is recorded where the CPU and build have it, else a clear error before any file
if "$bin" train "${tiny[@]}" --data corpus.txt --steps 20 --precision bf16 --out bf16 > bf16.log 2> bf16.err; then
  if python3 - <<'PY'
import json, struct, sys
config = json.load(open("bf16/config.json"))
with open("bf16/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
sys.exit(0 if config["precision"] == "bf16" and header["__metadata__"]["precision"] == "bf16" else 1)
PY
  then
    # and a resumed bf16 run equals the uninterrupted one
    "$bin" train "${tiny[@]}" --data corpus.txt --steps 10 --precision bf16 --out bf16-resumed > /dev/null 2>&1
    if "$bin" train --resume --steps 20 --out bf16-resumed > /dev/null 2>&1 && cmp -s bf16/model.safetensors bf16-resumed/model.safetensors; then
      pass "--precision bf16 trains, is recorded in config.json and the checkpoint, and resumes exactly"
    else
      failed "--precision bf16 resume"
    fi
  else
    failed "--precision bf16 is not recorded: $(cat bf16/config.json)"
  fi
elif [ $? -eq 2 ] && grep -q "bf16 needs" bf16.err && [ ! -e bf16/config.json ]; then
  pass "--precision bf16 without bf16 support: a clear error before anything is written"
else
  failed "--precision bf16: $(cat bf16.err)"
fi

if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --json > eval.json &&
   python3 -c 'import json,sys; r=json.load(open("eval.json")); sys.exit(0 if r["protocol"]=="non-overlapping" and r["val_loss"] > 0 and r["train_targets"] > 0 else 1)'; then
  pass "eval prints the full-pass losses as JSON"
else
  failed "eval --json: $(cat eval.json)"
fi
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --estimate 3 | grep -q "val loss"; then
  pass "eval --estimate prints text"
else
  failed "eval --estimate"
fi

# --- tokens: the checkpoint carries them; bits per byte compare any two ----------------------
bpe=("${tiny[@]}" --data corpus.txt --tokenizer bpe --vocab-size 290)
"$bin" train "${bpe[@]}" --steps 20 --out bpe-full > /dev/null 2>&1
"$bin" train "${bpe[@]}" --steps 10 --out bpe-part > /dev/null 2>&1
if "$bin" train --resume --steps 20 --out bpe-part > bpe-resume.log 2>&1 &&
   cmp -s bpe-full/model.safetensors bpe-part/model.safetensors &&
   python3 -c 'import json,sys; c=json.load(open("bpe-full/config.json")); sys.exit(0 if (c["tokenizer"], c["vocab_size"]) == ("bpe", 290) else 1)'; then
  pass "a BPE run records its tokenizer in config.json and resumes to the uninterrupted run's model"
else
  failed "BPE train and resume: $(tail -3 bpe-resume.log)"
fi
"$bin" eval --checkpoint bpe-full/model.safetensors --data corpus.txt --json > bpe-eval.json
"$bin" eval --checkpoint full/model.safetensors --data corpus.txt --json > char-eval.json
if python3 - bpe-eval.json char-eval.json <<'PY'
import json, math, sys
bpe, char = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
per_byte = bpe["val_loss"] / bpe["bytes_per_target"]["validation"] / math.log(2)
ok = bpe["tokenizer"] == "bpe" and bpe["vocab_size"] == 290 and bpe["bytes_per_target"]["validation"] > 1.5
ok = ok and abs(bpe["val_bits_per_byte"] - per_byte) < 1e-12
ok = ok and char["tokenizer"] == "char" and char["bytes_per_target"] == {"train": 1, "validation": 1}
ok = ok and abs(char["val_bits_per_byte"] - char["val_loss"] / math.log(2)) < 1e-12
sys.exit(0 if ok else 1)
PY
then
  pass "eval reports bits per byte: nats per token over ln 2 and the bytes a token stands for (a char model's: 1)"
else
  failed "eval bits per byte: $(cat bpe-eval.json)"
fi
if "$bin" sample --checkpoint bpe-full/model.safetensors --prompt "ROMÉO:" --tokens 20 --seed 3 > bpe-sample.txt &&
   [ "$(head -c 7 bpe-sample.txt)" = "ROMÉO:" ]; then
  pass "a BPE model samples after a prompt of any bytes, the corpus's or not"
else
  failed "BPE sample: $(cat bpe-sample.txt)"
fi
expect_error "--tokenizer bpe without a vocabulary size" "tokenizer bpe needs a vocabulary size above the 256 bytes" \
  "$bin" train "${tiny[@]}" --data corpus.txt --tokenizer bpe --out bad-bpe
expect_error "--vocab-size without bpe" "--vocab-size applies to tokenizer bpe" \
  "$bin" train "${tiny[@]}" --data corpus.txt --vocab-size 300 --out bad-bpe
expect_error "a BPE vocabulary larger than the corpus yields" "data file 'corpus.txt': BpeTokenizer: the corpus has no pair" \
  "$bin" train "${tiny[@]}" --data corpus.txt --tokenizer bpe --vocab-size 5000 --out bad-bpe
expect_error "a task in BPE tokens" "task copy scores characters: train it with --tokenizer char or byte" \
  "$bin" train "${tiny[@]}" --task copy --task-lengths 1-4 --tokenizer bpe --vocab-size 300 --out bad-bpe
expect_error "fine-tuning a BPE checkpoint in other tokens" "differs from the --init-from checkpoint's bpe (290 tokens)" \
  "$bin" train --init-from bpe-full/model.safetensors --tokenizer char --context 32 --steps 5 --out bad-bpe
[ ! -e bad-bpe ] && pass "refused tokenizer settings write nothing" || failed "a refused tokenizer setting wrote bad-bpe"
if "$bin" prepare --data corpus.txt --tokenizer bpe --vocab-size 290 --out tokens > prepare.log 2>&1 &&
   "$bin" train "${tiny[@]}" --data tokens --steps 20 --out bpe-prepared > /dev/null 2>&1 &&
   cmp -s bpe-full/model.safetensors bpe-prepared/model.safetensors &&
   "$bin" eval --checkpoint bpe-full/model.safetensors --data tokens --json > tokens-eval.json &&
   python3 -c 'import json,sys; a,b=json.load(open("tokens-eval.json")),json.load(open("bpe-eval.json")); sys.exit(0 if a["val_loss"]==b["val_loss"] and a["val_bits_per_byte"]==b["val_bits_per_byte"] else 1)'; then
  pass "prepare writes a token folder; training and evaluating on it equal training and evaluating on the text"
else
  failed "prepare: $(tail -3 prepare.log)"
fi
expect_error "prepare into a folder that holds files" "--out 'tokens' already exists and is not empty" \
  "$bin" prepare --data corpus.txt --out tokens
expect_error "a token folder's tokens against another --tokenizer" "token folder 'tokens' holds tokens of bpe (290 tokens)" \
  "$bin" train "${tiny[@]}" --data tokens --tokenizer byte --out bad-tokens
expect_error "a token folder evaluated with a checkpoint of other tokens" "not of the checkpoint's char" \
  "$bin" eval --checkpoint full/model.safetensors --data tokens
mkdir -p texts/inner && head -c 3000 corpus.txt > texts/a.txt && tail -c +3001 corpus.txt > texts/inner/b.txt
if "$bin" train "${tiny[@]}" --data texts --steps 30 --out from-folder > /dev/null 2>&1 &&
   cmp -s full/model.safetensors from-folder/model.safetensors; then
  pass "a folder of texts is their bytes joined in path order: the run equals the one on the whole file"
else
  failed "train on a folder of texts"
fi

"$bin" sample --checkpoint full/model.safetensors --prompt "ROMEO:" --tokens 60 --seed 3 > cached.txt
"$bin" sample --checkpoint full/model.safetensors --prompt "ROMEO:" --tokens 60 --seed 3 --no-cache > uncached.txt
if cmp -s cached.txt uncached.txt && [ "$(head -c 6 cached.txt)" = "ROMEO:" ] && [ "$(wc -c < cached.txt)" -ge 67 ]; then
  pass "sample with and without the cache prints the same text"
else
  failed "sample: $(cat cached.txt) vs $(cat uncached.txt)"
fi

# Past --window the cache rolls: 600 characters through a window of 32 (the model accepts 256)
if "$bin" sample --checkpoint full/model.safetensors --prompt "ROMEO:" --tokens 600 --window 32 --seed 3 > rolled.txt &&
   [ "$(wc -c < rolled.txt)" -eq 607 ] && [ "$(head -c 6 rolled.txt)" = "ROMEO:" ]; then
  pass "sample --window 32 generates 600 characters past the window"
else
  failed "sample --window: $(wc -c < rolled.txt) bytes"
fi

# --samples N prints N samples, the i-th equal to a single sample with --seed + i; --top-p is accepted
"$bin" sample --checkpoint full/model.safetensors --prompt "ROMEO:" --tokens 60 --seed 3 --top-p 0.9 --samples 3 \
  > three.txt 2> three.err
"$bin" sample --checkpoint full/model.safetensors --prompt "ROMEO:" --tokens 60 --seed 5 --top-p 0.9 > seed5.txt
if [ "$(grep -c -- '---------- sample' three.txt)" -eq 3 ] && grep -q "sample 3 of 3 (seed 5)" three.txt &&
   [ "$(sed -n '/sample 3 of 3/,$p' three.txt | tail -n +2)" = "$(cat seed5.txt)" ]; then
  pass "sample --samples 3 prints three samples, the third equal to --seed 5 alone"
else
  failed "--samples: $(head -c 300 three.txt) $(cat three.err)"
fi

for sub in train eval sample; do
  if "$bin" "$sub" --help > help.txt 2>&1 && grep -q -- "--" help.txt; then pass "$sub --help"; else failed "$sub --help"; fi
done

# --- bad input: exit 2, a clear message, nothing half-written ---------------------------------
expect_error "missing data file" "cannot open data file 'nowhere.txt'" "$bin" train "${tiny[@]}" --data nowhere.txt --out bad1
: > empty.txt
expect_error "empty data file" "data file 'empty.txt' is empty" "$bin" train "${tiny[@]}" --data empty.txt --out bad2
printf 'too short\n' > short.txt
expect_error "too-short data file" "is too short" "$bin" train "${tiny[@]}" --data short.txt --out bad3
mkdir -p unreadable.txt
expect_error "an empty folder as the data" "data folder 'unreadable.txt' holds no file with any bytes" \
  "$bin" train "${tiny[@]}" --data unreadable.txt --out bad4
expect_error "unknown --posenc" "--posenc" "$bin" train --posenc rotary --out bad5
write_corpus drifting.txt 8
"$bin" train "${tiny[@]}" --data drifting.txt --steps 10 --out drift > /dev/null 2>&1
write_corpus drifting.txt 9  # other text under the same name
expect_error "resume on a corpus that changed since the run started" "changed since the run started" \
  "$bin" train --resume --out drift
expect_error "non-positive --steps" "--steps" "$bin" train "${tiny[@]}" --data corpus.txt --steps 0 --out bad6
expect_error "non-positive --batch" "--batch" "$bin" train "${small[@]}" --context 16 --data corpus.txt --batch -3 --out bad7
expect_error "non-positive --context" "--context" "$bin" train "${small[@]}" --batch 4 --data corpus.txt --context 0 --out bad8
expect_error "a step count past 2^64" "--steps: must be a whole number in [1, 1099511627776], got '18446744073709551616'" \
  "$bin" train "${tiny[@]}" --data corpus.txt --steps 18446744073709551616 --out bad-steps
expect_error "a negative seed" "--seed: must be a whole number in [0, 18446744073709551615], got '-1'" \
  "$bin" train "${tiny[@]}" --data corpus.txt --seed -1 --out bad-seed
expect_error "a context past 2^64" "--context: must be a whole number in [1, 1048576]" \
  "$bin" train "${small[@]}" --batch 4 --data corpus.txt --context 99999999999999999999 --out bad-context
if "$bin" train "${small[@]}" --batch 32 --context 1048576 --data corpus.txt --out bad-memory > out.txt 2> err.txt; then
  failed "a context too long for the machine's memory trained"
elif grep -q "needs about .* GiB to train; this machine has" err.txt && [ ! -e bad-memory ]; then
  pass "a context too long for the machine's memory is refused before anything is written"
else
  failed "a context too long for the machine's memory: $(head -c 300 err.txt); $(ls bad-memory 2>&1)"
fi
# Under an address-space limit (ulimit -v) the memory check counts what the limit leaves, so a
# batch that fits the machine but not the limit is refused before it allocates (not under
# AddressSanitizer, which needs far more address space than it uses).
if ldd "$bin" | grep -q libasan; then
  echo "# sanitizer build: the address-space limit is not exercised"
else
  (ulimit -v 3000000 && exec "$bin" train "${small[@]}" --batch 1048576 --context 64 --data corpus.txt --out bad-limit) \
    > out.txt 2> err.txt
  if grep -q "needs about .* GiB to train; this machine has .* GiB of memory available to it" err.txt &&
     [ ! -e bad-limit ]; then
    pass "a batch past an address-space limit is refused before anything is written"
  else
    failed "a batch past ulimit -v: $(head -c 300 err.txt)"
  fi
fi
mkdir -p a-directory
mkdir -p a-directory/.hidden && printf 'text' > a-directory/.hidden/file.txt
expect_error "a folder of hidden files only as the data" "data folder 'a-directory' holds no file with any bytes" \
  "$bin" train "${tiny[@]}" --data a-directory --out bad-dir
expect_error "--resume with fewer steps than the run has" "is already at step 30" "$bin" train --resume --out full --steps 10
expect_error "unknown --precision" "--precision" "$bin" train "${tiny[@]}" --data corpus.txt --precision fp16 --out bad-precision
expect_error "a model size the binary is not built for" "not built for a model of 5 layers" "$bin" train --posenc rope --layers 5 --data corpus.txt --out bad9
if [ ! -e bad9 ]; then pass "a refused model size leaves no run folder"; else failed "a refused size wrote $(ls bad9)"; fi
expect_error "an unbuilt size says how to build it" "configure with -DPOSENC_MODEL_SIZES=" \
  "$bin" train --posenc rope --layers 5 --data corpus.txt --out bad9b
"$bin" train --help > sizes-help.txt 2>&1  # to a file: grep -q closing a pipe early would fail it under pipefail
if grep -q "built for 3 layers × dim 192 × 4 heads, 2 layers × dim 64 × 4 heads\|built for 2 layers × dim 64 × 4 heads" sizes-help.txt; then
  pass "train --help lists the model sizes the program is built for"
else
  failed "train --help does not list the built sizes: $(grep -A2 -- --layers sizes-help.txt)"
fi
expect_error "an existing run without --resume" "already holds a run" "$bin" train "${tiny[@]}" --data corpus.txt --steps 30 --out full
expect_error "--resume of a directory that is not a run" "is this a run directory" "$bin" train --resume --out nothing-here
expect_error "--resume with a conflicting option" "cannot be given with it" "$bin" train --resume --out full --lr 0.1
expect_error "--resume with another embedding start" "--embedding-std cannot be given with it" "$bin" train --resume --out full --embedding-std 1
expect_error "--resume of a decaying schedule with other steps" "decays its learning rate ('wsd') over its 30 steps" \
  "$bin" train --resume --steps 40 --out settings
expect_error "--resume with a training setting" "--grad-clip cannot be given with it" \
  "$bin" train --resume --out full --grad-clip 1
expect_error "an unknown schedule" "--lr-schedule" "$bin" train "${tiny[@]}" --data corpus.txt --lr-schedule step --out bad-schedule
expect_error "a zero clipping norm" "--grad-clip" "$bin" train "${tiny[@]}" --data corpus.txt --grad-clip 0 --out bad-clip
expect_error "a warm-up longer than the run" "--warmup-steps 50 exceeds the run's 10 steps" \
  "$bin" train "${tiny[@]}" --data corpus.txt --steps 10 --warmup-steps 50 --out bad-warmup
expect_error "beta2 of 1" "--beta2" "$bin" train "${tiny[@]}" --data corpus.txt --beta2 1 --out bad-beta
expect_error "a zero embedding std" "--embedding-std" "$bin" train "${tiny[@]}" --data corpus.txt --embedding-std 0 --out bad-std
expect_error "a window longer than the model accepts" "--window 257 exceeds this rope model's maximum context (256)" \
  "$bin" sample --checkpoint full/model.safetensors --window 257
expect_error "a prompt symbol outside the vocabulary" "the symbol 'Z' (byte 90) at position 2" "$bin" sample --checkpoint full/model.safetensors --prompt "toZ"
expect_error "a UTF-8 prompt character outside the vocabulary" "the character 'é' (bytes 0xc3 0xa9) at position 2" \
  "$bin" sample --checkpoint full/model.safetensors --prompt "toé"
expect_error "a top-p of 0" "--top-p" "$bin" sample --checkpoint full/model.safetensors --top-p 0
expect_error "a negative --top-k" "--top-k: must be a whole number in [0, 2147483648], got '-3'" \
  "$bin" sample --checkpoint full/model.safetensors --top-k -3
expect_error "a missing checkpoint" "missing.safetensors" "$bin" sample --checkpoint missing.safetensors

ck=full/model.safetensors
size=$(wc -c < "$ck")
python3 "$here/edit_checkpoint.py" "$ck" truncated.safetensors truncate $((size - 100))
expect_error "a truncated checkpoint" "truncated.safetensors" "$bin" eval --checkpoint truncated.safetensors --data corpus.txt
python3 "$here/edit_checkpoint.py" "$ck" stub.safetensors truncate 5
expect_error "a checkpoint shorter than its length field" "stub.safetensors" "$bin" sample --checkpoint stub.safetensors
head -c 4096 /dev/urandom > random.safetensors
expect_error "a checkpoint of random bytes" "random.safetensors" "$bin" sample --checkpoint random.safetensors
python3 "$here/edit_checkpoint.py" "$ck" badjson.safetensors header '{"lm_head.bias": {"dtype": "F32",'
expect_error "a malformed JSON header" "JSON" "$bin" sample --checkpoint badjson.safetensors
python3 "$here/edit_checkpoint.py" "$ck" badshape.safetensors shape lm_head.weight 64,27
expect_error "a tensor shape that does not match the metadata" "lm_head.weight" "$bin" sample --checkpoint badshape.safetensors
python3 "$here/edit_checkpoint.py" "$ck" policy.safetensors meta posenc_policy cope
expect_error "a policy the binary cannot build" "unknown positional encoding 'cope'" "$bin" sample --checkpoint policy.safetensors
python3 "$here/edit_checkpoint.py" "$ck" layers.safetensors meta layers 7
expect_error "a model size the binary cannot build" "not built for a model of 7 layers" "$bin" sample --checkpoint layers.safetensors
python3 "$here/edit_checkpoint.py" "$ck" renamed.safetensors rename lm_head.bias lm_head.b
expect_error "a missing tensor" "has no tensor 'lm_head.bias'" "$bin" sample --checkpoint renamed.safetensors
python3 "$here/edit_checkpoint.py" "$ck" nan.safetensors nan lm_head.bias
expect_error "a checkpoint holding NaN" "tensor 'lm_head.bias' holds nan at element 0: the model it saved had diverged" \
  "$bin" eval --checkpoint nan.safetensors --data corpus.txt

"$bin" train --posenc learned --layers 2 --dim 64 --heads 4 --batch 4 --context 16 --eval-every 5 --eval-iters 2 --steps 5 --data corpus.txt --out learned > /dev/null 2>&1
expect_error "a context larger than a Learned model's table" "rows of its position table" "$bin" eval --checkpoint learned/model.safetensors --data corpus.txt --context 32
python3 "$here/edit_checkpoint.py" learned/model.safetensors context.safetensors meta context 32
python3 "$here/edit_checkpoint.py" context.safetensors context.safetensors meta max_context 32
expect_error "metadata that disagrees with the tensors" "transformer.wpe.weight" "$bin" sample --checkpoint context.safetensors
# Length extrapolation: every policy but learned evaluates past its context; learned says why not.
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --contexts 16,32,64 --json > lengths.json &&
   python3 -c 'import json,sys; r=json.load(open("lengths.json")); sys.exit(0 if [x["length"] for x in r["lengths"]]==[16,32,64] and all(x["non_overlapping"] > 0 and x["sliding"] > 0 for x in r["lengths"]) else 1)'; then
  pass "eval --contexts scores rope at 1, 2 and 4 times its context in both protocols"
else
  failed "eval --contexts: $(cat lengths.json)"
fi
if "$bin" eval --checkpoint learned/model.safetensors --data corpus.txt --contexts 16,32 > learned-lengths.txt &&
   grep -q "not applicable: the learned table has 16 rows" learned-lengths.txt; then
  pass "eval --contexts reports learned past its table as not applicable"
else
  failed "learned --contexts: $(cat learned-lengths.txt)"
fi
head -c 2000 corpus.txt > short-split.txt  # a validation split of 199 targets; the model takes up to 256
if "$bin" eval --checkpoint full/model.safetensors --data short-split.txt --contexts 16,256 > short-lengths.txt &&
   grep -q "not applicable: the split has only" short-lengths.txt; then
  pass "eval --contexts past the split's length says so rather than scoring a shorter window"
else
  failed "short split --contexts: $(cat short-lengths.txt)"
fi
# RoPE scaling changes the losses past the context (the PyTorch cross-check tests the values), is
# reported, and is refused where it cannot apply
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --context 64 --json > plain64.json &&
   "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --context 64 --json --rope-scaling yarn \
     --rope-factor 4 > yarn64.json &&
   python3 -c 'import json,sys; a,b=json.load(open("plain64.json")),json.load(open("yarn64.json")); sys.exit(0 if abs(a["val_loss"]-b["val_loss"]) > 1e-5 and b["rope_scaling"]["method"]=="yarn" and "rope_scaling" not in a else 1)'; then
  pass "eval --rope-scaling yarn changes the loss at 4x the context and says so"
else
  failed "eval --rope-scaling: $(cat plain64.json yarn64.json | head -c 600)"
fi
expect_error "a scaling without its factor" "yarn needs a factor > 1" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --rope-scaling yarn
expect_error "a RoPE scaling for a policy without rotations" "apply to rotary policies" \
  "$bin" eval --checkpoint learned/model.safetensors --data corpus.txt --rope-scaling linear --rope-factor 2
expect_error "a RoPE base of 1" "--rope-base" "$bin" sample --checkpoint full/model.safetensors --rope-base 1
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --rope-base 1.0000001 > base-near-1.txt 2>&1; then
  pass "a RoPE base just over 1 is taken"
else
  failed "--rope-base 1.0000001: $(tail -2 base-near-1.txt)"
fi
expect_error "--batch where the passes size themselves" "--batch excludes --contexts" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --contexts 16,64 --batch 2
expect_error "an empty length in --contexts" "--contexts: an empty item in '16,,64'" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --contexts 16,,64
expect_error "a trailing comma in --copy-probe" "--copy-probe: an empty item in '8,'" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --copy-probe 8,
expect_error "a length with a space inside" "--contexts: '1 6' has a space inside" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --contexts "1 6, 64"
expect_error "a copy-probe distance too long for the split, after one that fits" \
  "--copy-probe 100000: copy_probe: the split has" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --copy-probe 8,100000
if [ ! -s out.txt ]; then
  pass "every copy-probe distance is checked before the first is probed"
else
  failed "the copy probe ran before refusing a later distance: $(head -3 out.txt)"
fi
expect_error "a distance below 2" "--copy-probe: must be a whole number in [2, 1048576], got '1'" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --copy-probe 8,1
expect_error "--top-p under greedy sampling" "--top-p: --temperature 0 always picks the most likely character" \
  "$bin" sample --checkpoint full/model.safetensors --temperature 0 --top-p 0.9
expect_error "a factor without a scaling" "--rope-factor: read by linear, ntk, dynamic-ntk and yarn, not by the scaling 'none' (give --rope-scaling)" \
  "$bin" sample --checkpoint full/model.safetensors --rope-factor 4
expect_error "YaRN's ramp under another scaling" "--yarn-beta-fast: read by yarn, not by the scaling 'ntk'" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --rope-scaling ntk --rope-factor 2 --yarn-beta-fast 8
expect_error "the original context where the method ignores it" "--rope-original-context: read by dynamic-ntk and yarn, not by the scaling 'linear'" \
  "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --rope-scaling linear --rope-factor 2 \
  --rope-original-context 64
expect_error "train: a RoPE option for a policy without rotations" "apply to rotary policies" \
  "$bin" train --posenc alibi --layers 2 --dim 64 --heads 4 --data corpus.txt --rope-scaling none --out alibi-rope
# per-position losses and the copy probe
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --contexts 16,64 --per-position --bins 4 --json \
     > positions.json &&
   python3 -c 'import json,sys; r=json.load(open("positions.json"))["lengths"]; b=r[1]["per_position"]["bins"]; sys.exit(0 if len(b)==4 and b[3]["last"]==63 and all(x["loss"]>0 for x in b) else 1)'; then
  pass "eval --per-position reports the mean loss in 4 ranges of positions"
else
  failed "eval --per-position: $(head -c 600 positions.json)"
fi
if "$bin" eval --checkpoint full/model.safetensors --data corpus.txt --copy-probe 8,200 --copy-segments 5 > copy.txt &&
   grep -qE '^ +200 +[0-9.]+ ± +[0-9.]+' copy.txt &&
   "$bin" eval --checkpoint learned/model.safetensors --data corpus.txt --copy-probe 8,16 > copy-learned.txt &&
   grep -qE '^ +8 +[0-9.]+ ± ' copy-learned.txt &&
   grep -q "16  not applicable: needs 32 positions; the model accepts 16" copy-learned.txt; then
  pass "eval --copy-probe prints each distance's losses, and says which the model cannot take"
else
  failed "eval --copy-probe: $(cat copy.txt)"
fi
# Fine-tuning at a longer context from a checkpoint: the source's model (its first estimate is the
# trained model's, not a fresh one's), recorded in config.json; learned's table is interpolated
if "$bin" train --init-from full/model.safetensors --data corpus.txt --context 32 --batch 4 --steps 5 --eval-every 5 \
     --eval-iters 2 --out tuned > tuned.log 2>&1 &&
   "$bin" train --init-from learned/model.safetensors --data corpus.txt --context 32 --batch 4 --steps 5 \
     --eval-every 5 --eval-iters 2 --out tuned-learned > tuned-learned.log 2>&1 &&
   python3 -c 'import json,sys; c=json.load(open("tuned/config.json")); l=[json.loads(x) for x in open("tuned/log.jsonl")]; f=[json.loads(x) for x in open("full/log.jsonl")]; sys.exit(0 if c["init_from"]["checkpoint"]=="full/model.safetensors" and c["init_from"]["step"]==30 and c["init_from"]["context"]==16 and c["posenc"]=="rope" and c["context"]==32 and l[0]["val_loss"] < f[0]["val_loss"] - 0.2 else 1)'; then
  pass "train --init-from fine-tunes a checkpoint at a longer context (rope, and learned's table interpolated)"
else
  failed "--init-from: $(tail -3 tuned.log tuned-learned.log)"
fi
# A fine-tune resumes from its own saved state: its source is needed only to start it
mkdir -p moved-source && cp full/model.safetensors moved-source/model.safetensors
if "$bin" train --init-from moved-source/model.safetensors --data corpus.txt --context 32 --batch 4 --steps 4 \
     --eval-every 2 --eval-iters 2 --out tuned-moved > tuned-moved.log 2>&1 &&
   rm moved-source/model.safetensors &&
   "$bin" train --resume --out tuned-moved --steps 6 >> tuned-moved.log 2>&1 &&
   python3 -c 'import json,sys; l=[json.loads(x) for x in open("tuned-moved/log.jsonl")]; sys.exit(0 if l[-1]["step"]==6 else 1)'; then
  pass "a fine-tune resumes without its source checkpoint"
else
  failed "resuming a fine-tune without its source: $(tail -3 tuned-moved.log)"
fi
# A scaling given while fine-tuning stretches the source's trained context (16), not the new one:
# YaRN's ramp and dynamic NTK measure wavelengths against it
if "$bin" train --init-from full/model.safetensors --data corpus.txt --context 32 --batch 4 --steps 2 --eval-every 2 \
     --eval-iters 2 --rope-scaling yarn --rope-factor 2 --out tuned-yarn > tuned-yarn.log 2>&1 &&
   python3 -c 'import json,sys; r=json.load(open("tuned-yarn/config.json"))["rope"]; sys.exit(0 if r["method"]=="yarn" and r["factor"]==2 and r["original_context"]==16 else 1)'; then
  pass "train --init-from with a RoPE scaling stretches the source checkpoint's context"
else
  failed "--init-from with --rope-scaling: $(tail -3 tuned-yarn.log; cat tuned-yarn/config.json)"
fi
expect_error "--init-from with another policy" "--posenc alibi differs from the --init-from checkpoint's rope" \
  "$bin" train --init-from full/model.safetensors --posenc alibi --data corpus.txt --out tuned-bad
expect_error "--init-from with an initialisation" "--init: --init-from starts every tensor from the checkpoint" \
  "$bin" train --init-from full/model.safetensors --init pytorch --data corpus.txt --out tuned-bad

# --- synthetic tasks --------------------------------------------------------------------------
# a task makes its own examples: no --data, and the context is the longest example's inputs
if "$bin" train "${small[@]}" --batch 8 --task copy --task-lengths 1-4 --steps 20 --out task > task.log 2>&1 &&
   grep -q "on task copy 1-4" task.log && grep -q "context 8," task.log &&
   python3 -c 'import json,sys; c=json.load(open("task/config.json")); sys.exit(0 if c["task"]=={"name":"copy","lengths":"1-4"} and c["data"]=="" and c["context"]==8 else 1)' &&
   "$bin" train --resume --steps 30 --out task > task-resume.log 2>&1 && grep -q "on task copy 1-4" task-resume.log; then
  pass "train --task trains on a task's examples, records it in config.json and resumes it"
else
  failed "train --task: $(tail -3 task.log; tail -3 task-resume.log)"
fi
# a curriculum: its stages in config.json and the start line; the run resumes through them
if "$bin" train "${small[@]}" --batch 8 --task copy --task-lengths 1-4 --task-curriculum 2:5,1-3:5 --steps 20 \
     --out task-staged > task-staged.log 2>&1 &&
   grep -q "on task copy 1-4 after 2-2:5,1-3:5" task-staged.log &&
   python3 -c 'import json,sys; c=json.load(open("task-staged/config.json")); sys.exit(0 if c["task"]=={"name":"copy","lengths":"1-4","curriculum":"2-2:5,1-3:5"} else 1)' &&
   "$bin" train --resume --steps 30 --out task-staged > task-staged-resume.log 2>&1 &&
   grep -q "on task copy 1-4 after 2-2:5,1-3:5" task-staged-resume.log; then
  pass "train --task-curriculum records its stages in config.json, and the run resumes with them"
else
  failed "train --task-curriculum: $(tail -3 task-staged.log; tail -3 task-staged-resume.log)"
fi
# a stage that ends at a loss: its loss in the evaluation lines until it ends, then the steps skipped
if "$bin" train "${small[@]}" --batch 8 --task copy --task-lengths 1-4 --task-curriculum 2:50@1e9 --steps 60 \
     --out task-marked > task-marked.log 2>&1 &&
   grep -q "eval step 0: .*, stage [0-9.]*, 50 steps skipped (estimates)" task-marked.log &&
   grep -q "eval step 10: .*, 50 steps skipped (estimates)" task-marked.log &&
   ! grep -q "eval step 20" task-marked.log; then
  pass "train --task-curriculum L:S@LOSS ends the stage at the loss and trains the steps after it"
else
  failed "train --task-curriculum L:S@LOSS: $(tail -5 task-marked.log)"
fi
expect_error "a malformed curriculum" "stage '2' is not LENGTHS:STEPS" \
  "$bin" train "${small[@]}" --task copy --task-lengths 1-4 --task-curriculum 2 --out bad-task
expect_error "a curriculum stage longer than the task lengths" "stage lengths 1-6 exceed the task lengths 1-4" \
  "$bin" train "${small[@]}" --task copy --task-lengths 1-4 --task-curriculum 1-6:5 --out bad-task
expect_error "a curriculum as long as the run" "its 20 steps leave none of the run's 20 for the task lengths 1-4" \
  "$bin" train "${small[@]}" --task copy --task-lengths 1-4 --task-curriculum 2:20 --steps 20 --out bad-task
expect_error "a curriculum without a task" "--task-curriculum requires --task" \
  "$bin" train "${small[@]}" --task-curriculum 2:5 --out bad-task
expect_error "--resume with the task's options names them all" "--task, --task-lengths, --task-curriculum cannot be given with it" \
  "$bin" train --resume --task copy --task-lengths 1-4 --task-curriculum 2:5 --out task-staged
# a rotary model takes any length asked; learned's table (8 rows here) ends at length 4 (2n inputs)
"$bin" train --posenc learned --layers 2 --dim 64 --heads 4 --batch 8 --task copy --task-lengths 1-4 --steps 2 --out task-learned \
  > /dev/null 2>&1
if "$bin" eval --checkpoint task/model.safetensors --task copy --task-lengths 1-70 --task-examples 5 --json \
     > task-eval.json 2> task-eval.err &&
   python3 -c 'import json,sys; s=json.load(open("task-eval.json"))["scores"]; sys.exit(0 if len(s)==70 and s[0]["length"]==1 and s[0]["examples"]==5 and all(0<=r["accuracy"]<=1 for r in s) else 1)' &&
   "$bin" eval --checkpoint task-learned/model.safetensors --task copy --task-lengths 3-6 --json > task-learned.json &&
   python3 -c 'import json,sys; s=json.load(open("task-learned.json"))["scores"]; sys.exit(0 if "accuracy" in s[1] and "note" in s[2] and "accuracy" not in s[3] else 1)' &&
   "$bin" eval --checkpoint task/model.safetensors --task copy --task-lengths 2-3 > task-eval.txt 2>&1 &&
   grep -qE '^ +3 +7 +[0-9.]+ +[0-9.]+ +[0-9.]+$' task-eval.txt; then
  pass "eval --task prints and writes exact-match accuracy by length; lengths past a learned table are noted, not scored"
else
  failed "eval --task: $(head -c 600 task-eval.json; cat task-eval.err task-learned.json task-eval.txt)"
fi
expect_error "unknown task" "--task: sorting not in {copy,reverse,associative-recall,passkey,addition,sort}" \
  "$bin" train "${small[@]}" --task sorting --out bad-task
expect_error "bad task lengths" "task lengths '5-2': the first length exceeds the last" \
  "$bin" train "${small[@]}" --task copy --task-lengths 5-2 --out bad-task
expect_error "task lengths without a task" "--task-lengths requires --task" \
  "$bin" train "${small[@]}" --task-lengths 1-4 --out bad-task
expect_error "a context too short for the task" "--context 6: task copy 1-4 has examples of up to 8 inputs" \
  "$bin" train "${small[@]}" --task copy --task-lengths 1-4 --context 6 --out bad-task
expect_error "too many key-value pairs" "length 700 exceeds the longest it has (676 key-value pairs)" \
  "$bin" train "${small[@]}" --task associative-recall --task-lengths 1-700 --out bad-task
expect_error "passkey without its text" "cannot open data file 'nowhere.txt'" \
  "$bin" train "${small[@]}" --task passkey --task-lengths 1-20 --data nowhere.txt --out bad-task
expect_error "a task the checkpoint's vocabulary cannot write" "task addition: the vocabulary lacks the symbol '+'" \
  "$bin" eval --checkpoint task/model.safetensors --task addition --task-lengths 1-3
expect_error "--data with a task that makes its own examples" "--data with --task copy: the task makes its own examples" \
  "$bin" train "${small[@]}" --task copy --data corpus.txt --out bad-task
expect_error "--resume with --task" "--task cannot be given with it" \
  "$bin" train --resume --task reverse --out task

if ls full/*.tmp.* > /dev/null 2>&1; then failed "temporary files left behind"; else pass "no temporary files left behind"; fi

finish
