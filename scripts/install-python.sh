#!/usr/bin/env bash
# Builds the Python module posenc with the release settings (oneDNN) and makes `import posenc` work
# in Debian's python3: a posenc.pth in the user's site-packages (or, inside a venv, the venv's)
# points at build/release/python.
#   scripts/install-python.sh            install the packages, configure, build, register
#   scripts/install-python.sh --uninstall  remove the posenc.pth again
set -euo pipefail
cd "$(dirname "$0")/.."
python=/usr/bin/python3
[ -z "${VIRTUAL_ENV:-}" ] || python="$VIRTUAL_ENV/bin/python"
site="$("$python" -c 'import site, sys; print(site.getsitepackages()[0] if sys.prefix != sys.base_prefix else site.getusersitepackages())')"
case "${1:-}" in
  --uninstall) rm -f "$site/posenc.pth"; echo "install-python.sh: removed $site/posenc.pth"; exit 0 ;;
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "install-python.sh: unknown option '$1' (expected --uninstall)" >&2; exit 2 ;;
esac
scripts/install-deps.sh --python
cmake --preset release -DPOSENC_BUILD_PYTHON=ON -DPython_EXECUTABLE="$python" > /dev/null
cmake --build --preset release --target posenc_python
mkdir -p "$site"
echo "$PWD/build/release/python" > "$site/posenc.pth"
"$python" -c 'import posenc; print("install-python.sh: import posenc works:", len(posenc.policies()), "encodings,",
                                   "sizes", posenc.model_sizes()); print(posenc.compute_line())'
