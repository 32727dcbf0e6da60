#!/usr/bin/env bash
# Puts a corpus under data/ (git-ignored) and verifies its sha256.
#   scripts/fetch-data.sh                 Tiny Shakespeare at data/tinyshakespeare/input.txt: copied from
#                                         ../shared/data/tinyshakespeare/input.txt beside the checkout when
#                                         that exists, otherwise downloaded from its public source.
#   scripts/fetch-data.sh python-stdlib   A second corpus, code rather than verse: the 171 top-level modules
#                                         of Python 3.11's standard library as Debian 12 ships them
#                                         (/usr/lib/python3.11/*.py of libpython3.11-minimal and
#                                         libpython3.11-stdlib 3.11.2-6+deb12u8, joined in C-locale name
#                                         order, 4,742,756 bytes) at data/python-stdlib/input.txt: from the
#                                         installed packages when they are that version, otherwise from
#                                         their .debs (apt-get download).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=${1:-tinyshakespeare}
case "$corpus" in
  tinyshakespeare)
    expected_sha256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed ;;
  python-stdlib)
    expected_sha256=94760a60e665439b2ea1a83885f72bac760b8c0bdc92301a85deef71fbe635c5
    version=3.11.2-6+deb12u8 ;;
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "fetch-data.sh: unknown corpus '$corpus' (known: tinyshakespeare, python-stdlib)" >&2; exit 2 ;;
esac
target=data/$corpus/input.txt

verify() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$expected_sha256" ]; }

if [ -f "$target" ] && verify "$target"; then
  echo "fetch-data.sh: $target is present and verified"
  exit 0
fi
mkdir -p "$(dirname "$target")"
tmp="$target.tmp.$$"
work=""
trap 'rm -rf "$tmp" ${work:+"$work"}' EXIT

# the modules of folder $1 (a /usr/lib/python3.11), joined in C-locale name order
join_modules() { (cd "$1" && LC_ALL=C ls -- *.py | LC_ALL=C sort | xargs cat --); }

case "$corpus" in
  tinyshakespeare)
    shared=../shared/data/tinyshakespeare/input.txt
    url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
    if [ -f "$shared" ]; then
      cp "$shared" "$tmp"
      source_name="$shared"
    else
      curl -fsSL --retry 3 -o "$tmp" "$url"
      source_name="$url"
    fi ;;
  python-stdlib)
    installed() { dpkg-query -W -f '${Version}' "$1" 2> /dev/null || true; }
    if [ "$(installed libpython3.11-minimal)" = "$version" ] && [ "$(installed libpython3.11-stdlib)" = "$version" ]; then
      join_modules /usr/lib/python3.11 > "$tmp"
      source_name="the installed libpython3.11-minimal and libpython3.11-stdlib $version"
    else
      work=$(mktemp -d)
      (cd "$work" && apt-get -qq -o APT::Sandbox::User=root download "libpython3.11-minimal=$version" \
        "libpython3.11-stdlib=$version") || {
        echo "fetch-data.sh: could not download libpython3.11-minimal and -stdlib $version from Debian's archive" >&2
        exit 1
      }
      for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
      join_modules "$work/root/usr/lib/python3.11" > "$tmp"
      source_name="libpython3.11-minimal and libpython3.11-stdlib $version (.debs)"
    fi ;;
esac
if ! verify "$tmp"; then
  echo "fetch-data.sh: $source_name does not give the expected sha256 $expected_sha256" >&2
  exit 1
fi
mv "$tmp" "$target"
echo "fetch-data.sh: $target from $source_name (sha256 verified)"
