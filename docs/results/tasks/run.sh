#!/usr/bin/env bash
# Length generalization on the synthetic tasks (issue 39): each encoding trained on short examples
# of a task with the small model (2 layers, dim 64, 4 heads), then its exact-match accuracy
# measured at every length up to 8 × the longest trained one, 100 examples a length.
#   docs/results/tasks/run.sh [TASK ...]          (default: copy reverse associative-recall addition)
# Environment: POLICIES (default: all twelve), SEEDS (default: 1 2 3), STEPS (default: 3000).
# Resumable: a run with a record in docs/results/tasks/records is skipped, a run folder with a
# saved state is resumed (runs/ does not outlive a session: commit the records as they appear).
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
B=${B:-build/release/examples}  # the programs (another build folder: B=build/dev/examples)
records=docs/results/tasks/records
mkdir -p "$records" runs/tasks
policies=${POLICIES:-"nope learned sinusoidal rope rope-interleaved rope-partial xpos alibi alibi-single t5 kerple fire"}
seeds=${SEEDS:-"1 2 3"}
steps=${STEPS:-3000}
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(copy reverse associative-recall addition)

# trained lengths and tested lengths (8 × the longest trained) of each task
trained() { case "$1" in copy|reverse) echo 1-16 ;; associative-recall|addition) echo 1-8 ;; passkey) echo 1-256 ;; esac; }
tested() { case "$1" in copy|reverse) echo 1-128 ;; associative-recall|addition) echo 1-64 ;; passkey) echo 1-2048 ;; esac; }

# 200,000 random letters a-z from a 64-bit LCG (Knuth's MMIX constants), the same bytes with any
# Python: the copy probe's text for the copy models.
probe_text=runs/tasks/random-letters.txt
[ -f "$probe_text" ] || python3 - > "$probe_text" <<'PY'
x, out = 1, []
for _ in range(200000):
    x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
    out.append("abcdefghijklmnopqrstuvwxyz"[(x >> 33) % 26])
print("".join(out), end="")
PY

for seed in $seeds; do
  for task in "${tasks[@]}"; do
    for posenc in $policies; do
      name="$task-$posenc-seed$seed"
      record="$records/$name.json"
      [ -f "$record" ] && continue
      run="runs/tasks/$name"
      train=(--posenc "$posenc" --layers 2 --dim 64 --heads 4 --task "$task" --task-lengths "$(trained "$task")"
             --steps "$steps" --seed "$seed" --lr 3e-3 --lr-schedule cosine --warmup-steps 100 --min-lr-fraction 0.1
             --eval-every 500 --eval-iters 20 --threads 1)
      [ "$task" = passkey ] && train+=(--data data/tinyshakespeare/input.txt)
      if [ ! -f "$run/model.safetensors" ]; then
        if [ -f "$run/optimizer.safetensors" ]; then
          $B/shakespeare train --resume --out "$run" --threads 1 > "$run.log"
        else
          rm -rf "$run"
          $B/shakespeare train "${train[@]}" --out "$run" > "$run.log"
        fi
      fi
      eval=(--checkpoint "$run/model.safetensors" --task "$task" --task-lengths "$(tested "$task")" --task-examples 100
            --json --threads 1)
      [ "$task" = passkey ] && eval+=(--data data/tinyshakespeare/input.txt)
      $B/shakespeare eval "${eval[@]}" > "$record.tmp"
      # the record: the evaluation, the run's configuration and its loss estimates
      python3 - "$record.tmp" "$run" "$(trained "$task")" > "$record.tmp2" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
result["trained_lengths"] = sys.argv[3]
result["config"] = json.load(open(sys.argv[2] + "/config.json"))
result["log"] = [json.loads(line) for line in open(sys.argv[2] + "/log.jsonl") if line.strip()]
print(json.dumps(result, indent=1))
PY
      mv "$record.tmp2" "$record"
      rm -f "$record.tmp"
      echo "done $name"
    done
    # The positive control: the copy probe of the longer-contexts study, unchanged, on the copy
    # models, with segments of random letters (probe_text below) in place of Shakespeare.
    [ "$task" = copy ] || continue
    for posenc in $policies; do
      name="$task-$posenc-seed$seed"
      record="$records/$name.json"
      [ -f "$record" ] && [ -f "runs/tasks/$name/model.safetensors" ] || continue
      grep -q '"copy_probe"' "$record" && continue
      $B/shakespeare eval --checkpoint "runs/tasks/$name/model.safetensors" --data "$probe_text" \
        --copy-probe 2,4,8,12,16,20,24,32,48,64,96,128 --copy-segments 64 --json --threads 1 > "$record.probe"
      python3 - "$record" "$record.probe" "$probe_text" > "$record.tmp2" <<'PY'
import hashlib, json, sys
record = json.load(open(sys.argv[1]))
probe = json.load(open(sys.argv[2]))
record["copy_probe"] = {"text": "random letters a-z (docs/results/tasks/run.sh)",
                        "sha256": hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest(),
                        "rows": probe["copy_probe"]}
print(json.dumps(record, indent=1))
PY
      mv "$record.tmp2" "$record"
      rm -f "$record.probe"
      echo "probed $name"
    done
  done
done
