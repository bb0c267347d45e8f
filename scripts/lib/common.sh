# Shared by scripts/quickstart, scripts/test and .ci/run. Sourced, not executed.
set -euo pipefail

DEVTENSOR_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$DEVTENSOR_ROOT"

# Debian packages the build needs; CUDA is not a Debian package and is used when present.
DEVTENSOR_PACKAGES=(
  build-essential cmake ninja-build
  libboost-test-dev      # Boost.Test (shared-library mode)
  libbenchmark-dev       # Google Benchmark
  libopenblas-dev        # CBLAS for CPU matmul and the benchmark baselines
  clang libclang-rt-14-dev  # libFuzzer for the parser fuzz target
  clang-format-14        # the format check (test format.check; its output differs between versions)
  nlohmann-json3-dev     # TF_CONFIG parsing (the cluster_resolver component)
  python3                # the header checks that need more than CMake (tests/detail_privacy.py)
  openmpi-bin libopenmpi-dev  # multi-process training (the mpi component) and its mpiexec tests
  libhdf5-dev            # Keras weights files (the hdf5 component)
  libzip-dev             # Keras .keras archives (the keras_archive component, with HDF5 and nlohmann_json)
  libdnnl-dev            # oneDNN 2.6: float32 convolutions on CPUs (the onednn component)
)

log() { printf '\n==> %s\n' "$*"; }

# Installs whatever of DEVTENSOR_PACKAGES is missing (never autoremove: it would take the image's
# libc++ and libunwind with it).
install_missing_packages() {
  local missing=()
  for pkg in "${DEVTENSOR_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    log "All Debian packages present"
    return
  fi
  log "Installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# nvcc, where the CUDA toolkit has one (its bin/ is not always on PATH). DEVTENSOR_NVCC (a path)
# replaces the search: the scripts' test uses it.
have_nvcc() {
  if [[ -n ${DEVTENSOR_NVCC:-} ]]; then [[ -x $DEVTENSOR_NVCC ]]; return; fi
  if command -v nvcc >/dev/null 2>&1; then return 0; fi
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="$PATH:/usr/local/cuda/bin"
    return 0
  fi
  return 1
}

# A GPU this process could use: the NVIDIA driver's device files, else `nvidia-smi -L` listing one.
# DEVTENSOR_DEV_DIR (default /dev) and DEVTENSOR_NVIDIA_SMI (default nvidia-smi) let the scripts'
# test fake either probe.
gpu_probe() {
  local dev=${DEVTENSOR_DEV_DIR:-/dev} smi=${DEVTENSOR_NVIDIA_SMI:-nvidia-smi} f
  for f in "$dev"/nvidia[0-9]*; do
    [[ -e $f ]] && { echo "found $f"; return 0; }
  done
  if command -v "$smi" >/dev/null 2>&1 && "$smi" -L 2>/dev/null | grep -q '^GPU '; then
    echo "nvidia-smi -L lists $("$smi" -L | grep -c '^GPU ') GPU(s)"
    return 0
  fi
  echo "no $dev/nvidia[0-9]* and no GPU listed by nvidia-smi -L"
  return 1
}

# The test configuration: CUDA when nvcc is there (every .cu builds, GPU tests skip without a GPU),
# CPU-only otherwise.
main_preset() {
  if have_nvcc; then
    echo cuda
  else
    echo cpu-release
  fi
}
