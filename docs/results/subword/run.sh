#!/usr/bin/env bash
# Subword tokens (issue 41): the published design (learned, sinusoidal, rope, alibi-single; seeds
# 1337, 2024, 42; 2,000 steps; the study's settings) at byte tokens (256) and at byte-level BPE
# trained on the training text to VOCAB tokens (default 1,024), one grid; the character runs are
# docs/results/published-design's. Settings compare in bits per byte.
#   docs/results/subword/run.sh
# Environment: B (the programs' folder, default build/release/examples), JOBS (runs at once, 1;
# each on one thread), VOCAB (named in the folder when set), COLLECT=1: copy the records finished
# so far into docs/results/subword (to commit) and stop.
# Resumable: the same command continues; the committed records are copied in first, so a new
# checkout trains only what is missing. Writes runs/subword[-VOCAB].
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
B=${B:-build/release/examples}
jobs=${JOBS:-1}
vocab=${VOCAB:-1024}
name=subword${VOCAB:+-$VOCAB}
out=runs/$name
keep=docs/results/$name
mkdir -p "$out/records" "$keep/records"
shopt -s nullglob
committed=("$keep"/records/*.json)
[ ${#committed[@]} -eq 0 ] || cp -n "${committed[@]}" "$out/records/"
collect() {  # a record is written once its run's final full passes are made: each one is finished
  finished=("$out"/records/*.json)
  [ ${#finished[@]} -eq 0 ] || cp "${finished[@]}" "$keep/records/"
}
[ "${COLLECT:-0}" != 1 ] || { collect; exit 0; }
nice -n 19 "$B/study" --data data/tinyshakespeare/input.txt --variants learned,sinusoidal,rope,alibi-single \
  --seeds 1337,2024,42 --extended-steps 0 --grid tokenizer=byte,bpe --vocab-size "$vocab" \
  --jobs "$jobs" --threads "$jobs" --out "$out" > "$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
collect
for file in summary.md summary.json summary.csv; do cp "$out/$file" "$keep/"; done
if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  /usr/bin/python3 tools/plot_study.py "$out" > /dev/null && mkdir -p "$keep/plots" && cp "$out"/plots/* "$keep/plots/"
fi
echo "done $name"
