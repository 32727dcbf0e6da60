#!/usr/bin/env bash
# The ranking's sensitivity to the one learning rate the published study states (issue 38): the
# published four encodings × seeds 1337, 2024, 42 × 2,000 steps at the study's settings with lr
# 3e-4 and 3e-3 beside the stated 1e-3, whose 12 records are copied from results/published-design
# (as results/published-settings does), so 24 runs train.
#   docs/results/lr-sweep/run.sh
# Environment: B (the programs' folder, default build/release/examples), JOBS (runs at once, 1; each
# on one thread), COLLECT=1: copy the records finished so far into docs/results/lr-sweep/records (to
# commit) and stop. Resumable: the same command continues, also from a new checkout (the committed
# records are copied in first). Writes runs/lr-sweep; when done, docs/results/lr-sweep/{summary.*,plots}.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"  # the records name their checkpoints relative to here
B=${B:-build/release/examples}
jobs=${JOBS:-1}
out=runs/lr-sweep
keep=docs/results/lr-sweep
mkdir -p "$out/records" "$keep/records"
cp -n docs/results/published-design/records/*-steps2000.json "$out/records/"
shopt -s nullglob
committed=("$keep"/records/*.json)
[ ${#committed[@]} -eq 0 ] || cp -n "${committed[@]}" "$out/records/"
collect() {  # the runs with a learning rate in their name; a record is written once its run is finished
  finished=("$out"/records/*-lr-*.json)
  [ ${#finished[@]} -eq 0 ] || cp "${finished[@]}" "$keep/records/"
}
[ "${COLLECT:-0}" != 1 ] || { collect; exit 0; }
nice -n 19 "$B/study" --variants learned,sinusoidal,rope,alibi-single --seeds 1337,2024,42 --extended-steps 0 \
  --grid-point lr=3e-4 --grid-point lr=3e-3 --jobs "$jobs" --threads "$jobs" --out "$out" > "$out.log" 2>&1 ||
  { tail -5 "$out.log"; exit 1; }
collect
for file in summary.md summary.json summary.csv; do cp "$out/$file" "$keep/"; done
if /usr/bin/python3 -c "import matplotlib" 2> /dev/null; then
  /usr/bin/python3 tools/plot_study.py "$out" > /dev/null && mkdir -p "$keep/plots" && cp "$out"/plots/* "$keep/plots/"
fi
echo "done lr-sweep"
