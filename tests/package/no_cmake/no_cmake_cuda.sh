#!/usr/bin/env bash
# README's "Without CMake" lines for the CUDA bodies and the cudnn component, run: the kernel TU
# compiled header-only by nvcc (a mode no CMake build uses, so only this test sees it), a program
# linked with it, then with the cudnn engine's object where cuDNN is (its run path set as README
# says). Without a GPU the programs run their ops on the CPU: the test checks that the lines build,
# link and start (the GPU platform registered, the engine installed).
# Usage: no_cmake_cuda.sh <nvcc> <c++ compiler> <source dir> <work dir> <CUDA include dir> <CUDA library dir> [cudnn include dir] [cudnn library]
# -O0 where the README says -O2: the test checks the lines, not the code's speed.
set -euo pipefail
nvcc=$1 cxx=$2 src=$3 work=$4 cuda_include=$5 cuda_lib=$6 cudnn_include=${7:-} cudnn_library=${8:-}
mkdir -p "$work"
blas_define=() blas_lib=()
if echo 'int main(){}' | "$cxx" -x c++ - -o "$work/probe" -lopenblas 2>/dev/null; then
  blas_define=(-DDEVTENSOR_WITH_CBLAS=1) blas_lib=(-lopenblas)
fi
set -x
"$nvcc" -std=c++20 -O0 --expt-relaxed-constexpr -arch=sm_90 "${blas_define[@]}" -I"$src/include" \
  -I"$cuda_include/cccl" -c "$src/src/devtensor_cuda.cu" -o "$work/devtensor_cuda.o"
"$cxx" -std=c++20 -O0 "${blas_define[@]}" -I"$src/include" -c "$src/tests/package/no_cmake/cuda_main.cpp" \
  -o "$work/cuda_main.o"
"$cxx" "$work/cuda_main.o" "$work/devtensor_cuda.o" -o "$work/cuda_app" -L"$cuda_lib" -lcudart -lcublas -lcublasLt \
  "${blas_lib[@]}" -pthread
"$work/cuda_app"
if [[ -n "$cudnn_library" ]]; then
  cudnn_dir=$(dirname "$cudnn_library")
  "$cxx" -std=c++20 -O0 "${blas_define[@]}" -I"$src/include" -I"$cudnn_include" -I"$cuda_include" \
    -c "$src/src/devtensor_cudnn.cpp" -o "$work/devtensor_cudnn.o"
  "$cxx" "$work/cuda_main.o" "$work/devtensor_cuda.o" "$work/devtensor_cudnn.o" -o "$work/cudnn_app" \
    -L"$cudnn_dir" -l:libcudnn.so.9 -Wl,-rpath,"$cudnn_dir" -L"$cuda_lib" -lcudart -lcublas -lcublasLt \
    "${blas_lib[@]}" -pthread
  "$work/cudnn_app" cudnn
fi
