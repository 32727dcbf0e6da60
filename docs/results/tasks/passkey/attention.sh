#!/usr/bin/env bash
# What ALiBi and RoPE attend to on a passkey example past their trained lengths: the last layer's
# attention probabilities (examples/python/attention.py) of seed 1 of each, on 60 + 90 characters
# of Tiny Shakespeare's validation part around a key, then the question and the answer
# (232 characters; trained on 1-32 characters of text, 112 in all). Needs the study's checkpoints
# (docs/results/tasks/study.sh passkey) and the Python module (scripts/install-python.sh, or
# PYTHONPATH=build/dev/python). Writes docs/results/tasks/passkey/plots/attention_alibi_rope.png.
set -eu
cd "$(dirname "$0")/../../../.."
text=$(/usr/bin/python3 -c "
t = open('data/tinyshakespeare/input.txt').read()[1005000:1005150]  # past the 90% cut at 1,003,854
print(t[:60] + '\nThe pass key is 48213. Remember it.\n' + t[60:] + '\nWhat is the pass key? The pass key is 48213', end='')")
runs=runs/tasks-study/passkey/runs
/usr/bin/python3 examples/python/attention.py docs/results/tasks/passkey/plots/attention_alibi_rope.png \
  "$runs/alibi-seed1-steps6000/model.safetensors" "$runs/rope-seed1-steps6000/model.safetensors" --layer -1 --text "$text"
