#!/usr/bin/env bash
# Installs the Debian 12 packages posenc needs to build, test and run its examples.
#   scripts/install-deps.sh            core build + test dependencies
#   scripts/install-deps.sh --bench    also the optional benchmark extras (PyTorch baseline)
#   scripts/install-deps.sh --plots    also matplotlib for tools/plot_study.py
#   scripts/install-deps.sh --mpi      also Open MPI (distributed studies, data-parallel training)
#   scripts/install-deps.sh --fuzz     also clang and its libFuzzer runtime
#   scripts/install-deps.sh --python   also pybind11, numpy, pytest and tqdm (the Python module and its tests)
# Idempotent: packages already installed are not fetched again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ca-certificates curl python3
  libxtensor-dev libxtensor-blas-dev xtl-dev liblapack-dev libopenblas-dev
  catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libdnnl-dev ocl-icd-opencl-dev   # oneDNN, the default float GEMM backend (its CMake package needs OpenCL's)
)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(python3-torch python3-numpy) ;;
    --plots) packages+=(python3-matplotlib) ;;
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --mpi) packages+=(libopenmpi-dev openmpi-bin) ;;
    --python) packages+=(pybind11-dev python3-dev python3-numpy python3-pytest python3-tqdm) ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (expected --bench, --plots, --mpi, --fuzz, --python)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "install-deps.sh: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
