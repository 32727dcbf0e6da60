# Shared by the command-line tests (sourced): a fresh work directory, pass/fail bookkeeping that
# ends in the "N passed, N failed" line, an exit-status check, and a small corpus with structure.
#   source cli_test_lib.sh WORK_DIR
set -uo pipefail
rm -rf "$1" && mkdir -p "$1" && cd "$1" || exit 1

passes=0
failures=0
pass() { echo "ok   - $1"; passes=$((passes + 1)); }
failed() { echo "FAIL - $1"; failures=$((failures + 1)); }

# expect_error NAME SUBSTRING COMMAND...: the command must exit 2 and print SUBSTRING on stderr.
expect_error() {
  local name="$1" needle="$2"
  shift 2
  "$@" > out.txt 2> err.txt
  local status=$?
  if [ "$status" -eq 2 ] && grep -qF -- "$needle" err.txt; then
    pass "$name"
  else
    failed "$name: exit $status, stderr: $(head -c 400 err.txt)"
  fi
}

# write_corpus FILE SEED: 700 lines of 8 words from a small lexicon, in a seeded order.
write_corpus() {
  python3 - "$1" "$2" <<'PY'
import random, sys
random.seed(int(sys.argv[2]))
words = ["to", "be", "or", "not", "that", "is", "the", "question", "ROMEO:", "JULIET:", "whether", "tis", "nobler"]
open(sys.argv[1], "w").write("\n".join(" ".join(random.choice(words) for _ in range(8)) for _ in range(700)) + "\n")
PY
}

# finish: the closing line, and the exit status.
finish() {
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
