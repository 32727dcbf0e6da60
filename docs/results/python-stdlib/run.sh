#!/usr/bin/env bash
# A second corpus (issue 41): the published design (learned, sinusoidal, rope, alibi-single; seeds
# 1337, 2024, 42; 2,000 steps; the study's settings) on code instead of verse — Python 3.11's
# standard library as Debian 12 ships it (scripts/fetch-data.sh python-stdlib: 4,742,756 bytes,
# sha256 pinned) — at character level and with byte-level BPE trained on its training part to VOCAB
# tokens (default 1,024), one grid of 24 runs; settings and corpora compare in bits per byte.
#   docs/results/python-stdlib/run.sh
# Environment: B (the programs' folder, default build/release/examples), JOBS (runs at once, 1;
# each on one thread), COLLECT=1: copy the records finished so far into docs/results/python-stdlib
# (to commit) and stop. Resumable: the same command continues; the committed records are copied in
# first, so a new checkout trains only what is missing. Writes runs/python-stdlib.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
B=${B:-build/release/examples}
jobs=${JOBS:-1}
data=data/python-stdlib/input.txt
[ -f "$data" ] || scripts/fetch-data.sh python-stdlib
out=runs/python-stdlib
keep=docs/results/python-stdlib
mkdir -p "$out/records" "$keep/records"
shopt -s nullglob
committed=("$keep"/records/*.json)
[ ${#committed[@]} -eq 0 ] || cp -n "${committed[@]}" "$out/records/"
collect() {  # a record is written once its run's final full passes are made: each one is finished
  finished=("$out"/records/*.json)
  [ ${#finished[@]} -eq 0 ] || cp "${finished[@]}" "$keep/records/"
}
[ "${COLLECT:-0}" != 1 ] || { collect; exit 0; }
nice -n 19 "$B/study" --data "$data" --variants learned,sinusoidal,rope,alibi-single --seeds 1337,2024,42 \
  --extended-steps 0 --grid tokenizer=char,bpe --vocab-size "${VOCAB:-1024}" --jobs "$jobs" --threads "$jobs" \
  --out "$out" > "$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
collect
for file in summary.md summary.json summary.csv; do cp "$out/$file" "$keep/"; done
if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  /usr/bin/python3 tools/plot_study.py "$out" > /dev/null && mkdir -p "$keep/plots" && cp "$out"/plots/* "$keep/plots/"
fi
echo "done python-stdlib"
