#!/usr/bin/env bash
# The published design (learned, sinusoidal, rope, alibi-single; seeds 1337, 2024, 42; 2,000 steps; the
# study's settings) on one corpus at several tokenizations, one grid; settings compare in bits per byte.
# Called by docs/results/subword/run.sh and docs/results/python-stdlib/run.sh, which name:
#   NAME (runs/NAME, records and summaries in docs/results/NAME), DATA (the corpus), TOKENIZERS (the
#   grid's tokenizer values), CORPUS (optional: scripts/fetch-data.sh's name for it, fetched when missing).
# Environment: B (the programs' folder, default build/release/examples), JOBS (runs at once, 1; each on
# one thread), VOCAB (bpe's vocabulary, 1,024), COLLECT=1: copy the records finished so far into
# docs/results/NAME (to commit) and stop. Resumable: the same command continues; the committed records
# are copied in first, so a new checkout trains only what is missing.
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
B=${B:-build/release/examples}
jobs=${JOBS:-1}
[ -f "$DATA" ] || [ -z "${CORPUS:-}" ] || scripts/fetch-data.sh "$CORPUS"
out=runs/$NAME
keep=docs/results/$NAME
mkdir -p "$out/records" "$keep/records"
shopt -s nullglob
committed=("$keep"/records/*.json)
[ ${#committed[@]} -eq 0 ] || cp -n "${committed[@]}" "$out/records/"
collect() {  # a record is written once its run's final full passes are made: each one is finished
  finished=("$out"/records/*.json)
  [ ${#finished[@]} -eq 0 ] || cp "${finished[@]}" "$keep/records/"
}
[ "${COLLECT:-0}" != 1 ] || { collect; exit 0; }
nice -n 19 "$B/study" --data "$DATA" --variants learned,sinusoidal,rope,alibi-single --seeds 1337,2024,42 \
  --extended-steps 0 --grid "tokenizer=$TOKENIZERS" --vocab-size "${VOCAB:-1024}" --jobs "$jobs" --threads "$jobs" \
  --out "$out" > "$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
collect
for file in summary.md summary.json summary.csv; do cp "$out/$file" "$keep/"; done
if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  /usr/bin/python3 tools/plot_study.py "$out" > /dev/null && mkdir -p "$keep/plots" && cp "$out"/plots/* "$keep/plots/"
fi
echo "done $NAME"
