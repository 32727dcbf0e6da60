#!/usr/bin/env bash
# Puts Tiny Shakespeare at data/tinyshakespeare/input.txt (git-ignored) and verifies its sha256:
# copied from ../shared/data/tinyshakespeare/input.txt beside the checkout when that exists,
# otherwise downloaded from its public source.
set -euo pipefail
cd "$(dirname "$0")/.."

expected_sha256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
target=data/tinyshakespeare/input.txt
shared=../shared/data/tinyshakespeare/input.txt

verify() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$expected_sha256" ]; }

if [ -f "$target" ] && verify "$target"; then
  echo "fetch-data.sh: $target is present and verified"
  exit 0
fi
mkdir -p "$(dirname "$target")"
tmp="$target.tmp.$$"
trap 'rm -f "$tmp"' EXIT
if [ -f "$shared" ]; then
  cp "$shared" "$tmp"
  source_name="$shared"
else
  curl -fsSL --retry 3 -o "$tmp" "$url"
  source_name="$url"
fi
if ! verify "$tmp"; then
  echo "fetch-data.sh: $source_name does not have the expected sha256 $expected_sha256" >&2
  exit 1
fi
mv "$tmp" "$target"
trap - EXIT
echo "fetch-data.sh: $target from $source_name (sha256 verified)"
