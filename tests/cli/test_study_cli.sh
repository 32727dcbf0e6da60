#!/usr/bin/env bash
# A smoke study: two variants, two seeds, a few hundred steps of a small model, with extended runs.
# It runs the whole pipeline: the runs, a study killed part-way and resumed (whose records must
# equal the uninterrupted study's), the summary files, and the plot script where matplotlib is.
#   test_study_cli.sh STUDY_BINARY WORK_DIR
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cli/cli_test_lib.sh" "$2"
export POSENC_NUM_THREADS=1  # one thread per process: ctest runs another test beside this one
write_corpus corpus.txt 11
design=(--variants rope,alibi-single --seeds 1,2 --steps 200 --extended-steps 300 --extended-seeds 1
        --eval-every 50 --eval-iters 2 --layers 2 --dim 64 --heads 4 --batch 4 --context 16 --data corpus.txt)

if "$bin" "${design[@]}" --out whole --jobs 2 > whole.log 2>&1 && [ "$(ls whole/records | wc -l)" -eq 6 ] &&
   [ -s whole/summary.json ] && [ -s whole/summary.csv ] && [ -s whole/summary.md ]; then
  pass "the study runs every run and writes summary.json, summary.csv and summary.md"
else
  failed "study: $(tail -5 whole.log)"
fi
if grep -q "## Pairwise comparisons" whole/summary.md && grep -q "Welch" whole/summary.md &&
   grep -q "Ranking at 200" whole/summary.md && grep -q "^alibi-single,2," whole/summary.csv; then
  pass "the summary has the per-variant table, the pairwise tests and the extended runs"
else
  failed "summary contents: $(head -20 whole/summary.md)"
fi

# Interrupted part-way by SIGKILL, then run again: it resumes and must reach the same numbers.
# --foreground: timeout waits for the killed study (its lock released) before the resume; without
# it timeout kills its own process group, itself too, and a loaded machine may run the resume
# while the study is still exiting, its directory still locked.
(timeout --foreground -s KILL 1 "$bin" "${design[@]}" --out resumed --jobs 2 > /dev/null 2>&1) 2> /dev/null
finished_before=$(ls resumed/records 2> /dev/null | wc -l)
echo "# the interruption left $finished_before of 6 runs finished"
if "$bin" "${design[@]}" --out resumed --jobs 2 > resumed.log 2>&1; then
  same=1
  for f in whole/records/*.json; do
    python3 - "$f" "resumed/records/$(basename "$f")" <<'PY' || same=0
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda r: ([(e["step"], e["train_loss"], e["val_loss"]) for e in r["curve"]], r["final_train_loss"], r["final_val_loss"], r["config"])
sys.exit(0 if key(a) == key(b) else 1)
PY
  done
  if [ "$same" -eq 1 ]; then pass "a killed and resumed study records the same curves and final losses"; else failed "resumed records differ"; fi
else
  failed "resume: $(tail -5 resumed.log)"
fi
if "$bin" "${design[@]}" --out whole > again.log 2>&1 && grep -q "6 finished, 0 to run" again.log; then
  pass "a finished study skips every run"
else
  failed "rerun: $(head -3 again.log)"
fi

# --summary-only over a design with a seed not yet run: the summary of the finished runs, and the
# first line says how many are not (it said "8 finished, 0 to run")
mkdir -p partial && cp -r whole/records partial/
if "$bin" "${design[@]/#1,2/1,2,3}" --out partial --summary-only > partial.log 2>&1 &&
   grep -q "8 runs in the design, 6 finished; --summary-only: 2 not run" partial.log &&
   grep -q "Missing runs" partial/summary.md; then
  pass "--summary-only summarizes the finished runs and counts the others as not run"
else
  failed "--summary-only: $(head -3 partial.log)"
fi

# Length extrapolation added to the finished study: no run is trained again, every base run's
# final model is evaluated at the new lengths.
if "$bin" "${design[@]}" --out whole --extrapolate 16,32,64 > extrapolate.log 2>&1 &&
   grep -q "6 finished, 0 to run" extrapolate.log && grep -q "## Length extrapolation" whole/summary.md &&
   python3 -c 'import json,sys; s=json.load(open("whole/summary.json")); c=[x for x in s["extrapolation"] if x["mean"] is not None]; sys.exit(0 if len(c)==12 else 1)'; then
  pass "--extrapolate evaluates the finished runs at every length in both protocols"
else
  failed "extrapolate: $(tail -5 extrapolate.log)"
fi

# The other evaluations after training, added to the finished study the same way: the loss by
# position, the copy probe, and the rotary variant again under two RoPE scalings.
if "$bin" "${design[@]}" --out whole --extrapolate 16,32,64 --per-position --bins 4 --copy-probe 8,16 \
     --copy-segments 6 --extrapolate-rope yarn:4,linear:4 > evaluations.log 2>&1 &&
   grep -q "6 finished, 0 to run" evaluations.log && grep -q "## RoPE scaling against the trained model" whole/summary.md &&
   grep -q "## Loss by position in a window of 64" whole/summary.md && grep -q "## Copy probe" whole/summary.md &&
   grep -q "| rope · yarn ×4 |" whole/summary.md &&
   python3 -c 'import json,sys; s=json.load(open("whole/summary.json")); c=s["scaling_comparisons"]; p=[x for x in s["copy_probe"] if x["mean_drop"] is not None]; sys.exit(0 if len(c)==6 and all(x["n"]==2 for x in c) and len(p)==8 and len(s["position_curves"])==12 else 1)'; then
  pass "--per-position, --copy-probe and --extrapolate-rope evaluate the finished runs and are summarised"
else
  failed "evaluations: $(tail -5 evaluations.log)"
fi
# Fine-tunes added to the finished study: each base run's final model trained on at context 32
# (the rotary variant also under linear ×2), then evaluated as the base runs are.
if "$bin" "${design[@]}" --out whole --jobs 2 --extrapolate 16,32,64 --per-position --bins 4 --copy-probe 8,16 \
     --copy-segments 6 --extrapolate-rope yarn:4,linear:4 --fine-tune 32 --fine-tune-steps 20 \
     --fine-tune-rope linear:2 > fine-tune.log 2>&1 &&
   grep -q "12 runs in the design, 6 finished, 6 to run" fine-tune.log && [ "$(ls whole/records | wc -l)" -eq 12 ] &&
   grep -q "| rope · ft 32×20 · linear ×2 |" whole/summary.md &&
   grep -qx "\[[0-9]*/12 runs\] done rope-seed2-steps200-ft32x20-linear2" fine-tune.log &&  # collect.sh reads it
   python3 -c 'import json,sys; r=json.load(open("whole/records/rope-seed2-steps200-ft32x20-linear2.json")); c=r["config"]; sys.exit(0 if c["context"]==32 and c["batch"]==2 and c["init_from"]["step"]==200 and c["rope"]["original_context"]==16 and r["curve"][-1]["step"]==20 and len(r["extrapolation"])==3 else 1)'; then
  pass "--fine-tune trains on every base run at a new context and evaluates the fine-tuned models"
else
  failed "fine-tune: $(tail -5 fine-tune.log)"
fi
expect_error "--fine-tune-rope without --fine-tune" "--fine-tune-rope: the scalings apply to fine-tunes; give --fine-tune too" \
  "$bin" "${design[@]}" --out whole --fine-tune-rope linear:2
expect_error "a RoPE scaling without its factor" "--extrapolate-rope: rope scaling 'yarn': expected METHOD:FACTOR" \
  "$bin" "${design[@]}" --out whole --extrapolate 16 --extrapolate-rope yarn
expect_error "--bins without --per-position" "--bins: the ranges are those of --per-position" \
  "$bin" "${design[@]}" --out whole --extrapolate 16 --bins 4

# --embedding-std reaches every run's model: two one-step studies that differ only in it record
# it and start from different losses.
one_step=(--variants learned --seeds 1 --steps 1 --extended-steps 0 --eval-every 1 --eval-iters 2
          --layers 2 --dim 64 --heads 4 --batch 4 --context 16 --data corpus.txt)
if "$bin" "${one_step[@]}" --out narrow > narrow.log 2>&1 && "$bin" "${one_step[@]}" --embedding-std 1 --out wide > wide.log 2>&1 &&
   python3 - narrow/records/learned-seed1-steps1.json wide/records/learned-seed1-steps1.json <<'PY'
import json, sys
narrow, wide = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if narrow["config"]["embedding_std"] == 0.02 and wide["config"]["embedding_std"] == 1
         and wide["curve"][0]["val_loss"] != narrow["curve"][0]["val_loss"] else 1)
PY
then
  pass "--embedding-std is in the run's configuration and changes the model's start"
else
  failed "--embedding-std: $(tail -3 narrow.log) $(tail -3 wide.log)"
fi

# A grid: two one-step settings × the variant and seed, named by their settings, summarised across.
if "$bin" "${one_step[@]}" --grid init=normal,pytorch --grid tie-weights=false,true --out grid > grid.log 2>&1 &&
   [ "$(ls grid/records | wc -l)" -eq 4 ] && [ -f grid/records/learned-seed1-steps1-init-pytorch-tie_weights-true.json ] &&
   grep -q "## Each variant across the settings" grid/summary.md &&
   grep -q "| learned | init=pytorch tie_weights=true | init=normal tie_weights=false | 1 |" grid/summary.md &&
   grep -q "| learned | init=pytorch tie_weights=true | init=normal tie_weights=true | 1 |" grid/summary.md &&
   python3 -c 'import json,sys; j=json.load(open("grid/summary.json")); sys.exit(0 if len(j["settings"]) == 4 and len(j["across"]) == 5 else 1)' &&
   "$bin" "${one_step[@]}" --grid init=normal,pytorch --grid tie-weights=false,true --out grid > grid-again.log 2>&1 &&
   grep -q "4 finished, 0 to run" grid-again.log; then
  pass "--grid crosses settings with the variants and seeds, resumes, and summarises each variant across them"
else
  failed "--grid: $(tail -5 grid.log)"
fi
# A grid across the tokens: each point trains in its own tokens, and the settings compare in bits per byte.
if "$bin" "${one_step[@]}" --grid tokenizer=char,bpe --vocab-size 280 --out tokens > tokens.log 2>&1 &&
   [ -f tokens/records/learned-seed1-steps1-tokenizer-bpe.json ] &&
   grep -q "The settings differ in their tokens, so they compare in validation bits per byte" tokens/summary.md &&
   python3 -c 'import json,sys; j=json.load(open("tokens/summary.json")); sys.exit(0 if "val_bits_per_byte" in j["across"][0] else 1)'; then
  pass "--grid tokenizer=char,bpe trains each point in its tokens and compares them in bits per byte"
else
  failed "--grid tokenizer: $(tail -5 tokens.log)"
fi

# Listed grid points: the study's own settings (a plain study's record, copied in, is not trained
# again) and each point's settings together.
mkdir -p points/records && cp narrow/records/learned-seed1-steps1.json points/records/
if "$bin" "${one_step[@]}" --grid-point init=pytorch --grid-point 'dropout=0.1 tie-weights=true' --out points \
     > points.log 2>&1 && grep -q "3 runs in the design, 1 finished, 2 to run" points.log &&
   [ -f points/records/learned-seed1-steps1-dropout-0.1-tie_weights-true.json ] &&
   grep -q "| learned | dropout=0.1 tie_weights=true | the study's settings | 1 |" points/summary.md &&
   grep -q "## At the study's settings" points/summary.md &&
   python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["config"]["embedding_std"] != 1.0)' \
     points/records/learned-seed1-steps1-init-pytorch.json; then
  pass "--grid-point adds settings that change together, beside the study's own"
else
  failed "--grid-point: $(tail -5 points.log)"
fi
expect_error "--grid with --grid-point" "either crossed (--grid) or listed (--grid-point)" \
  "$bin" "${one_step[@]}" --grid init=normal,pytorch --grid-point dropout=0.1 --out bad-grid
expect_error "--embedding-std with a point whose init would replace it" "set embedding_std in the point too" \
  "$bin" "${one_step[@]}" --embedding-std 0.5 --grid-point init=pytorch --out bad-grid
expect_error "a grid over a setting the study owns" "--grid seed: not a setting a grid can cross" \
  "$bin" "${one_step[@]}" --grid seed=1,2 --out bad-grid
expect_error "a grid value its setting cannot take" "--grid init=xavier" \
  "$bin" "${one_step[@]}" --grid init=normal,xavier --out bad-grid

# Bad input
expect_error "unknown variant" "unknown positional encoding 'rotary'" "$bin" --variants rope,rotary --out bad
expect_error "a variant given twice" "--variants: 'rope' is given twice" "$bin" --variants rope,alibi,rope --out bad
expect_error "a seed given twice" "--seeds: '2' is given twice" "$bin" --variants rope --seeds 2,1,2 --out bad
expect_error "a seed with a space inside" "--seeds: '13 37' has a space inside" "$bin" --variants rope --seeds "1, 13 37" --out bad
expect_error "an empty variant" "--variants: an empty item in 'rope,,alibi'" "$bin" --variants rope,,alibi --out bad
expect_error "an empty length" "--extrapolate: an empty item in '128,'" "$bin" --variants rope --extrapolate 128, --out bad
expect_error "extended seed without a base run" "not among --seeds" "$bin" --variants rope --seeds 1,2 --extended-seeds 7 --data corpus.txt --out bad
expect_error "a setting given alone and crossed by --grid" "--lr: --grid lr sets it in every run" \
  "$bin" --variants rope --grid lr=1e-3,3e-3 --lr 0.01 --data corpus.txt --out bad
expect_error "a renamed setting given alone and crossed by --grid" "--decay-on: --grid weight_decay_scope sets it" \
  "$bin" --variants rope --grid weight_decay_scope=all,matrices --decay-on all --data corpus.txt --out bad
expect_error "a study directory of another design, the changed setting named" "another configuration (lr: " \
  "$bin" "${design[@]}" --lr 0.5 --out whole

# A task study: each final model tested at every length to 8 × the trained, the accuracy summarized
task_design=(--task copy --task-lengths 1-3 --variants rope,learned --seeds 1,2 --steps 30 --extended-steps 0
             --eval-every 15 --eval-iters 2 --layers 2 --dim 64 --heads 4 --batch 8 --task-examples 5)
if "$bin" "${task_design[@]}" --out task > task.log 2>&1 &&
   grep -q "## Task copy: trained on lengths 1-3" task/summary.md && grep -q "| learned | .* | n/a |" task/summary.md &&
   grep -q "^rope,none,24,2," task/summary_task.csv &&
   python3 -c 'import json,sys; r=json.load(open("task/records/rope-seed1-steps30.json")); c=r["config"]; sys.exit(0 if len(r["task"])==24 and c["task"]=={"name":"copy","lengths":"1-3"} and c["context"]==6 and c["data"]=="" else 1)'; then
  pass "study --task trains on the task and summarizes each encoding's accuracy by length and band"
else
  failed "study --task: $(tail -5 task.log; head -c 600 task/summary.md)"
fi
# a curriculum: every run trains through it, its records and summary say so
if "$bin" --task copy --task-lengths 1-3 --variants rope --seeds 1 --steps 30 --extended-steps 0 --eval-every 15 \
     --eval-iters 2 --layers 2 --dim 64 --heads 4 --batch 8 --task-examples 5 --task-curriculum 1:10 \
     --out task-staged > task-staged.log 2>&1 &&
   grep -q "first trained through the curriculum 1-1:10" task-staged/summary.md &&
   python3 -c 'import json,sys; r=json.load(open("task-staged/records/rope-seed1-steps30.json")); s=json.load(open("task-staged/summary.json")); sys.exit(0 if r["config"]["task"]["curriculum"]=="1-1:10" and "1-1:10" in json.dumps(s) else 1)'; then
  pass "study --task-curriculum trains every run through it and says so in its records and summary"
else
  failed "study --task-curriculum: $(tail -5 task-staged.log; head -c 600 task-staged/summary.md)"
fi
# a stage that ends at a loss (one any model meets): the run skips it, its record and summary say so
if "$bin" --task copy --task-lengths 1-3 --variants rope --seeds 1 --steps 110 --extended-steps 0 --eval-every 5 \
     --eval-iters 2 --layers 2 --dim 64 --heads 4 --batch 8 --task-examples 5 --task-curriculum 1:100@1e9 \
     --out task-marked > task-marked.log 2>&1 &&
   grep -q "step 0: train .* stage .*, 100 steps skipped" task-marked.log &&
   grep -q "Ended early: rope seed 1 at step 0. Never (every stage took all its steps): none." task-marked/summary.md &&
   python3 -c 'import json,sys; r=json.load(open("task-marked/records/rope-seed1-steps110.json")); s=json.load(open("task-marked/summary.json")); sys.exit(0 if r["curve"][-1]["step"]==10 and r["curve"][0]["skipped_steps"]==100 and s["task"]["stage_ends"]==[{"variant":"rope","seed":1,"step":0}] else 1)'; then
  pass "study --task-curriculum with a stage that ends at a loss skips its steps and says so in records and summary"
else
  failed "study --task-curriculum L:S@LOSS: $(tail -5 task-marked.log; head -c 900 task-marked/summary.md)"
fi
expect_error "a curriculum as long as the runs" "its 30 steps leave none of the run's 30" \
  "$bin" "${task_design[@]}" --task-curriculum 1:30 --out bad-task
expect_error "--task-test-lengths without --task" "--task-test-lengths requires --task" \
  "$bin" --task-test-lengths 1-4 --out bad-task
expect_error "--data with a task that makes its own examples" "--data with --task copy: the task makes its own examples" \
  "$bin" "${task_design[@]}" --data corpus.txt --out bad-task
expect_error "a bad list of tested lengths" "--task-test-lengths: task lengths '0'" \
  "$bin" "${task_design[@]}" --task-test-lengths 1-4,0 --out bad-task
expect_error "--extrapolate with --task" "--extrapolate with --task: a task study tests its models at --task-test-lengths" \
  "$bin" "${task_design[@]}" --extrapolate 16 --out bad-task

# Plots from the JSON alone, where matplotlib is installed.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import matplotlib" > /dev/null 2>&1; then python="$candidate"; break; fi
done
if [ -n "$python" ]; then
  all_plots() {
    for p in val_curves final_val_loss generalization_gap extrapolation per_position copy_probe \
             rope_scaling rope_scaling_per_position rope_scaling_copy_probe; do
      [ -s "whole/plots/$p.png" ] && [ -s "whole/plots/$p.svg" ] || return 1
    done
  }
  if "$python" "$root/tools/plot_study.py" whole > plot.log 2>&1 && all_plots; then
    pass "plot_study.py writes the nine plots as PNG and SVG"
  else
    failed "plots: $(tail -5 plot.log)"
  fi
  if "$python" "$root/tools/plot_study.py" task > task-plot.log 2>&1 && [ -s task/plots/task_accuracy.png ]; then
    pass "plot_study.py draws a task study's accuracy against length"
  else
    failed "task plot: $(tail -5 task-plot.log)"
  fi
  if "$python" "$root/tools/plot_study.py" grid > grid-plot.log 2>&1 && [ -s grid/plots/grid_final_val_loss.png ] &&
     [ -s grid/plots/grid_differences.png ]; then
    pass "plot_study.py draws a grid study: each setting, and each against the first"
  else
    failed "grid plot: $(tail -5 grid-plot.log)"
  fi
  if "$python" "$root/tools/plot_study.py" tokens > tokens-plot.log 2>&1 && [ -s tokens/plots/grid_differences.png ]; then
    pass "plot_study.py draws a grid across the tokens in bits per byte"
  else
    failed "tokens grid plot: $(tail -5 tokens-plot.log)"
  fi
  # a folder that is no study, one before its summary and one without a finished run: a message, no traceback
  mkdir -p no-summary
  "$bin" --variants nope --seeds 1 --steps 10 --extended-steps 0 --layers 2 --dim 64 --heads 4 --data corpus.txt \
    --summary-only --out not-run > /dev/null 2>&1
  for case in "missing:is not a folder" "no-summary:holds no summary.json" "not-run:has no finished run yet"; do
    if "$python" "$root/tools/plot_study.py" "${case%%:*}" > empty-plot.log 2>&1; then
      failed "plot_study.py on ${case%%:*} succeeded"
    elif grep -q "${case#*:}" empty-plot.log && ! grep -q Traceback empty-plot.log; then
      pass "plot_study.py on ${case%%:*} says why there is nothing to plot"
    else
      failed "plot_study.py on ${case%%:*}: $(tail -3 empty-plot.log)"
    fi
  done
else
  echo "# matplotlib is not installed: the plot script is not exercised"
fi

finish
