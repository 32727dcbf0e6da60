#!/usr/bin/env bash
# Subword tokens (issue 41): the published design at byte tokens (256) and at byte-level BPE trained on
# the training text to VOCAB tokens (default 1,024), one grid; the character runs are
# docs/results/published-design's. Settings compare in bits per byte.
#   docs/results/subword/run.sh
# Environment as docs/results/corpus_study.sh (B, JOBS, VOCAB — named in the folder when set —,
# COLLECT=1). Resumable. Writes runs/subword[-VOCAB].
NAME=subword${VOCAB:+-$VOCAB} DATA=data/tinyshakespeare/input.txt CORPUS=tinyshakespeare TOKENIZERS=byte,bpe \
  exec "$(dirname "$0")/../corpus_study.sh"
