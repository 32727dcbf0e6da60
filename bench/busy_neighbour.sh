#!/usr/bin/env bash
# posenc's thread count beside a busy process: wall time of an evaluation (30 random batches) and
# of 40 training steps (each with its start-up), the default (adaptive) count against fixed
# --threads 1 and 2, first on the idle machine, then beside one busy process (a shell loop).
#   bench/busy_neighbour.sh CHECKPOINT          B=path/to/shakespeare picks another binary
set -uo pipefail
ckpt=$(realpath "${1:?usage: bench/busy_neighbour.sh CHECKPOINT}")
cd "$(dirname "$0")/.."
B=${B:-build/release/examples/shakespeare}
out=$(mktemp -d)
busy=
trap '[ -n "$busy" ] && kill $busy; rm -rf "$out"' EXIT
seconds() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local e=$(date +%s.%N); python3 -c "print(f'{$e-$s:.1f}')"; }
for load in idle busy; do
  if [ $load = busy ]; then sh -c 'while :; do :; done' & busy=$!; sleep 1; fi
  for threads in default 1 2; do
    opt=(); [ $threads != default ] && opt=(--threads $threads)
    ev=$(seconds "$B" eval --checkpoint "$ckpt" --estimate 30 "${opt[@]}")
    rm -rf "$out/r"
    tr=$(seconds "$B" train --posenc rope --steps 40 --eval-every 1000 --eval-iters 1 "${opt[@]}" --out "$out/r")
    echo "$load threads=$threads eval ${ev}s train40 ${tr}s"
  done
done
