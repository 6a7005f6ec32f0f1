# SPDX-License-Identifier: Apache-2.0
# Shared by scripts/main.sh and scripts/test.sh (sourced, not run).
# Puts the shell at the repository root and defines the helpers below.

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian's own interpreter, so the one CMake and the generator use is known.
PYTHON=/usr/bin/python3
JOBS=$(nproc)

# What a fresh Debian 12 machine needs to regenerate, build and test cmr.
APT_PACKAGES=(cmake ninja-build gcc g++ libc6-dev pkg-config check libsubunit-dev python3 python3-jinja2
              clang clang-format libclang-rt-14-dev valgrind swig python3-dev python3-pytest python3-numpy golang-go
              default-jdk-headless junit4 libhamcrest-java
              mono-mcs mono-runtime abigail-tools
              python3-setuptools python3-wheel python3-build python3-pip python3-venv nuget
              python3-distributed python3-dask cython3 python3-mypy)

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "error: installing packages needs root or sudo" >&2
    return 1
  fi
}

# apt-get update + install, unless CMR_SKIP_APT=1 (for repeated local runs;
# ignored in CI, which always starts from a bare machine).
install_dependencies() {
  if [[ ${CMR_SKIP_APT:-0} == 1 && ${CI:-} != true ]]; then
    echo "==> CMR_SKIP_APT=1: not installing ${APT_PACKAGES[*]}"
    return 0
  fi
  echo "==> installing ${APT_PACKAGES[*]}"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
}

# Whether a CUDA toolkit is installed (CMake's FindCUDAToolkit looks in the same places).
have_cuda_toolkit() {
  [[ -x /usr/local/cuda/bin/nvcc ]] || command -v nvcc >/dev/null
}
