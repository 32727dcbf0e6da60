#!/usr/bin/env bash
# The length-generalization table (issue 39) through the study runner: for each task, every
# encoding × seeds 1, 2, 3 trained with the small model (2 layers, dim 64, 4 heads; lr 3e-3, cosine
# to 0.1 after 100 warm-up steps, batch 32, one thread a run; associative recall at lr 1e-3, wsd,
# through a curriculum whose first stage ends when its lookup is found), then each final model tested
# at every length to 8 × the longest trained one (100 examples a length); the study's summary gives
# the accuracy by band with paired tests and Holm.
#   docs/results/tasks/study.sh [TASK ...]   (default: copy reverse addition sort)
# Environment: B (the programs' folder, default build/release/examples), JOBS (runs at once, 1),
# POLICIES (default: all twelve), RANDOMIZED=1: the same runs crossed with randomized positions
# (Ruoss et al. 2023; --grid random_positions=0,N, N 8 × the trained context, the longest tested
# input), into TASK-random; STEPS (default: each task's below), SIZE (LAYERSxDIMxHEADS, one the
# programs are built for; default 2x64x4) and LR (default: each task's below), each named in the
# folder when set: TASK[-random][-stepsN][-SIZE][-lrX].
# Resumable: the same command continues; records committed under docs/results/tasks/TASK/records
# are copied in first, so a new checkout trains only what is missing. Writes runs/tasks-study/TASK
# and, when a task's study is done, docs/results/tasks/TASK/{records,summary.*,plots}; while it
# runs, COLLECT=1 docs/results/tasks/study.sh TASK copies the records finished so far, to commit.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
B=${B:-build/release/examples}
jobs=${JOBS:-1}
policies=${POLICIES:-nope,learned,sinusoidal,rope,rope-interleaved,rope-partial,xpos,alibi,alibi-single,t5,kerple,fire}
tasks=("$@")
IFS=x read -r layers dim heads <<< "${SIZE:-2x64x4}"
# the folder of a task's study, each setting the environment changes named in it
study_name() {
  local name=$1
  [ "${RANDOMIZED:-0}" != 1 ] || name+=-random
  [ -z "${STEPS:-}" ] || name+=-steps$STEPS
  [ -z "${SIZE:-}" ] || name+=-$SIZE
  [ -z "${LR:-}" ] || name+=-lr$LR
  echo "$name"
}
[ ${#tasks[@]} -gt 0 ] || tasks=(copy reverse addition sort)

# trained lengths and steps of each task (tested: 8 × the longest trained, the study's default)
# (passkey: 1-32 characters of text around the key and 6,000 steps, which a pilot of the small
# RoPE model learned, 0.92-0.98 exact in range; at 1-256 and 3,000 steps it got no key right)
trained() {
  case "$1" in copy|reverse|sort) echo 1-16 ;; associative-recall|addition) echo 1-8 ;; passkey) echo 1-32 ;; esac
}
steps() {
  [ -z "${STEPS:-}" ] || { echo "$STEPS"; return; }
  case "$1" in associative-recall) echo 140000 ;; passkey) echo 6000 ;; *) echo 3000 ;; esac
}
# learning rate (associative recall: 1e-3, the pilots' rate through the curriculum; at 3e-3 the
# lookup was never found in 40,000 steps, results.md)
rate() {
  [ -z "${LR:-}" ] || { echo "$LR"; return; }
  case "$1" in associative-recall) echo 1e-3 ;; *) echo 3e-3 ;; esac
}
# stages trained before the task's lengths (--task-curriculum; associative recall: the small model
# finds its lookup only from two pairs, and its two-pair plateau broke anywhere from under 5,000 to
# past 55,000 steps in the pilots, or not in 60,000, results.md; so the first stage ends when its
# validation loss on two pairs falls below 0.05 — the plateau sits at 0.27-0.37, a found lookup
# under 0.02 — or after 100,000 steps, and every run then trains the same 40,000: 15,000 on 2-4
# pairs and 25,000 on 1-8)
curriculum() { case "$1" in associative-recall) echo 2:100000@0.05,2-4:15000 ;; esac; }
# learning-rate schedule after 100 warm-up steps (associative recall: wsd, constant while the
# lookup is searched for, as in the pilots that found it, decaying over the last fifth of the
# schedule, about the 1-8 stage)
schedule() { case "$1" in associative-recall) echo wsd ;; *) echo cosine ;; esac; }
# randomized positions' range: 8 × the trained context (copy, reverse and sort: 32 inputs, 2 × 16 + 1
# characters less the last), the inputs of the longest tested example; passkey: the inputs of the
# longest tested example (256 characters of text and the 81 of key and question, less the last), as
# 8 × its trained context (896) would spread 6,000 steps' positions over nearly three times as many
range() {
  case "$1" in copy|reverse|sort) echo 256 ;; associative-recall) echo 288 ;; addition) echo 208 ;; passkey) echo 336 ;; esac
}

# Copies the task's finished records (every tested length evaluated: a record is written before
# its tests, and one cut off there needs its checkpoint under runs/) into docs/results/tasks/TASK.
collect() {
  local name=${2:-$1}
  mkdir -p "docs/results/tasks/$name/records"
  /usr/bin/python3 - "runs/tasks-study/$name/records" "docs/results/tasks/$name/records" "$(trained "$1")" <<'PY'
import glob, json, os, shutil, sys
source, target, trained = sys.argv[1], sys.argv[2], int(sys.argv[3].split("-")[1])
tested = 8 * trained if 8 * trained <= 128 else 128  # the study's default tested lengths
for path in glob.glob(os.path.join(source, "*.json")):
    if len(json.load(open(path)).get("task", [])) == tested:
        shutil.copy(path, target)
PY
}
[ "${COLLECT:-0}" = 1 ] && {
  for task in "${tasks[@]}"; do collect "$task" "$(study_name "$task")"; done
  exit 0
}

shopt -s nullglob
for task in "${tasks[@]}"; do
  name=$(study_name "$task")
  extra=()
  [ "${RANDOMIZED:-0}" != 1 ] || extra+=(--grid "random_positions=0,$(range "$task")")
  out=runs/tasks-study/$name
  keep=docs/results/tasks/$name
  mkdir -p "$out/records"
  committed=("$keep"/records/*.json)
  [ ${#committed[@]} -eq 0 ] || cp -n "${committed[@]}" "$out/records/"
  # randomized: point 0 is the study without them, run for run (trained again, the 36 of sort and
  # the first 11 of passkey equal its committed records to the bit), so its committed records are
  # taken as they are, naming the checkpoints they were trained into, instead of training them twice
  if [ "${RANDOMIZED:-0}" = 1 ]; then
    for record in "docs/results/tasks/$(RANDOMIZED=0 study_name "$task")"/records/*.json; do
      cp -n "$record" "$out/records/$(basename "$record" .json)-random_positions-0.json"
    done
  fi
  [ "$task" = passkey ] && extra+=(--data data/tinyshakespeare/input.txt --task-examples 20)
  [ -z "$(curriculum "$task")" ] || extra+=(--task-curriculum "$(curriculum "$task")")
  nice -n 19 "$B/study" --task "$task" --task-lengths "$(trained "$task")" --variants "$policies" --seeds 1,2,3 \
    --steps "$(steps "$task")" --extended-steps 0 --layers "$layers" --dim "$dim" --heads "$heads" \
    --lr "$(rate "$task")" --lr-schedule "$(schedule "$task")" --warmup-steps 100 --min-lr-fraction 0.1 --eval-every 500 --eval-iters 20 --jobs "$jobs" --threads "$jobs" \
    ${extra[@]+"${extra[@]}"} --out "$out" > "$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
  collect "$task" "$name"
  for file in summary.md summary.json summary.csv summary_task.csv; do  # a grid's has no summary_task.csv
    [ ! -f "$out/$file" ] || cp "$out/$file" "$keep/"
  done
  if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
    /usr/bin/python3 tools/plot_study.py "$out" > /dev/null && mkdir -p "$keep/plots"
    for plot in "$out"/plots/task_accuracy* "$out"/plots/grid_*; do [ ! -f "$plot" ] || cp "$plot" "$keep/plots/"; done
  fi
  echo "done $name"
done
