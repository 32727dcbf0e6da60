#!/usr/bin/env bash
# Installs the dependencies, then configures, builds and runs the whole test suite twice: with the
# developer preset (warnings as errors) and with the sanitizer preset (AddressSanitizer + UBSan).
#   scripts/test.sh            both
#   scripts/test.sh --quick    the developer preset only
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option '$arg' (expected --quick)" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
cmake --workflow --preset test
if [ "$quick" -eq 0 ]; then
  cmake --workflow --preset sanitize
fi
