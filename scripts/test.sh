#!/usr/bin/env bash
# Installs the dependencies, then configures, builds and runs the whole test suite twice: with the
# developer preset (warnings as errors) and with the sanitizer preset (AddressSanitizer + UBSan);
# then runs the libFuzzer targets for a short time (clang). Open MPI is installed so that the
# distributed study and data-parallel training are tested too (mpirun --oversubscribe -np 2), and
# Debian's PyTorch so that checkpoints are cross-checked by the independent PyTorch model, and
# matplotlib so that tools/plot_study.py draws the test studies.
#   scripts/test.sh            all three
#   scripts/test.sh --quick    the developer preset only
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$arg' (expected --quick)" >&2; exit 2 ;;
  esac
done

if [ "$quick" -eq 1 ]; then
  scripts/install-deps.sh --mpi --bench --plots --python
  cmake --workflow --preset test
else
  scripts/install-deps.sh --mpi --fuzz --bench --plots --python
  cmake --workflow --preset test
  cmake --workflow --preset sanitize
  cmake --workflow --preset fuzz
fi
