#!/usr/bin/env bash
# Copies into docs/results/longer-contexts/records the records of every base run that the log
# says finished ("[k/N runs] done ID", the study's progress line) together with all its
# fine-tunes, and prints their names; commit them at once: a machine's runs/ folder does not
# outlive its session, and a fine-tune needs its base run's checkpoint, so a base run is worth
# committing only with every fine-tune of it.
# Usage: docs/results/longer-contexts/collect.sh [LOG]   (LOG: the study's output, e.g. from
# `nohup docs/results/longer-contexts/run.sh >> runs/longer-contexts.log 2>&1 &`). Keep the
# fine-tune suffixes in step with run.sh.
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
log="${1:-runs/longer-contexts.log}"
from=runs/longer-contexts/records
to=docs/results/longer-contexts/records
[ -f "$log" ] || { echo "collect.sh: no log at $log" >&2; exit 1; }
for base in $(sed -n 's/^\[[0-9]*\/[0-9]* runs\] done \([a-z0-9-]*-seed[0-9]*-steps2000\)$/\1/p' "$log" | sort -u); do
  case "${base%-seed*}" in
    rope | rope-interleaved | rope-partial | xpos) suffixes="-ft512x200 -ft512x200-linear4 -ft512x200-yarn4" ;;
    *) suffixes="-ft512x200" ;;
  esac
  group="$base"
  complete=1
  for s in $suffixes; do
    grep -qx "\[[0-9]*/[0-9]* runs\] done $base$s" "$log" || [ -e "$to/$base$s.json" ] || complete=0
    group="$group $base$s"
  done
  [ "$complete" = 1 ] || continue
  for id in $group; do
    if [ ! -e "$to/$id.json" ]; then
      cp "$from/$id.json" "$to/$id.json"
      echo "$id"
    fi
  done
done
