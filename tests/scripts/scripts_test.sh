#!/usr/bin/env bash
# scripts.quickstart_and_test: both scripts answer --help without building anything, refuse an
# unknown argument, and quickstart picks the CUDA preset only where a GPU is present (its probes
# faked: DEVTENSOR_DEV_DIR for /dev, DEVTENSOR_NVIDIA_SMI, DEVTENSOR_NVCC).
# Usage: scripts_test.sh <repository>
set -uo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME EXPECTED-REGEX COMMAND...: the command's output must match
  local name=$1 expected=$2 out
  shift 2
  out=$("$@" 2>&1)
  local status=$?
  if [[ $out =~ $expected ]]; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $status, output:"; echo "$out" | head -20; failures=$((failures + 1))
  fi
}
check_status() {  # check_status NAME STATUS COMMAND...
  local name=$1 expected=$2
  shift 2
  "$@" >/dev/null 2>&1
  local status=$?
  if [[ $status -eq $expected ]]; then echo "ok   $name"; else echo "FAIL $name: exit $status, expected $expected"; failures=$((failures + 1)); fi
}

mkdir -p "$work/no_dev" "$work/gpu_dev" "$work/bin"
touch "$work/gpu_dev/nvidia0" "$work/gpu_dev/nvidiactl"
printf '#!/bin/sh\necho "GPU 0: NVIDIA H200 (UUID: GPU-0)"\n' > "$work/bin/nvidia-smi-one-gpu"
printf '#!/bin/sh\necho "No devices were found"\n' > "$work/bin/nvidia-smi-none"
printf '#!/bin/sh\nexit 0\n' > "$work/bin/nvcc"
chmod +x "$work/bin/"*

qs=("$root/scripts/quickstart")
check "quickstart --help" "^Usage: ./scripts/quickstart" "${qs[@]}" --help
check "test --help" "^Usage: ./scripts/test" "$root/scripts/test" --help
check_status "quickstart refuses an unknown argument" 2 "${qs[@]}" --frobnicate
check_status "test refuses an unknown argument" 2 "$root/scripts/test" --frobnicate
check "no GPU, nvcc: the CPU preset" "Preset quickstart: nvcc exists but no GPU is present.*examples: build/quickstart/examples" \
  env DEVTENSOR_DEV_DIR="$work/no_dev" DEVTENSOR_NVIDIA_SMI="$work/bin/nvidia-smi-none" DEVTENSOR_NVCC="$work/bin/nvcc" \
  "${qs[@]}" --dry-run
check "no GPU, no nvcc: the CPU preset" "Preset quickstart: no nvcc" \
  env DEVTENSOR_DEV_DIR="$work/no_dev" DEVTENSOR_NVIDIA_SMI="$work/bin/absent" DEVTENSOR_NVCC="$work/bin/absent" \
  "${qs[@]}" --dry-run
check "a device file and nvcc: the CUDA preset" "Preset cuda: a GPU is present \(found .*/gpu_dev/nvidia0\).*examples: build/cuda/examples" \
  env DEVTENSOR_DEV_DIR="$work/gpu_dev" DEVTENSOR_NVIDIA_SMI="$work/bin/absent" DEVTENSOR_NVCC="$work/bin/nvcc" \
  "${qs[@]}" --dry-run
check "nvidia-smi lists a GPU, nvcc: the CUDA preset" "Preset cuda: a GPU is present \(nvidia-smi -L lists 1 GPU\(s\)\)" \
  env DEVTENSOR_DEV_DIR="$work/no_dev" DEVTENSOR_NVIDIA_SMI="$work/bin/nvidia-smi-one-gpu" DEVTENSOR_NVCC="$work/bin/nvcc" \
  "${qs[@]}" --dry-run
check "a GPU without nvcc: the CPU preset" "Preset quickstart: no nvcc" \
  env DEVTENSOR_DEV_DIR="$work/gpu_dev" DEVTENSOR_NVIDIA_SMI="$work/bin/absent" DEVTENSOR_NVCC="$work/bin/absent" \
  "${qs[@]}" --dry-run
check "--preset wins" "Preset cpu-release: asked for with --preset" "${qs[@]}" --preset cpu-release --dry-run

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "PASS scripts"
