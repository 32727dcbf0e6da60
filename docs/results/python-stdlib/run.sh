#!/usr/bin/env bash
# A second corpus (issue 41): the published design on code instead of verse — Python 3.11's standard
# library as Debian 12 ships it (scripts/fetch-data.sh python-stdlib: 4,742,756 bytes, sha256 pinned) —
# at character level and with byte-level BPE trained on its training part to VOCAB tokens (default
# 1,024), one grid of 24 runs; settings and corpora compare in bits per byte.
#   docs/results/python-stdlib/run.sh
# Environment as docs/results/corpus_study.sh (B, JOBS, VOCAB, COLLECT=1). Resumable. Writes
# runs/python-stdlib.
NAME=python-stdlib DATA=data/python-stdlib/input.txt CORPUS=python-stdlib TOKENIZERS=char,bpe \
  exec "$(dirname "$0")/../corpus_study.sh"
