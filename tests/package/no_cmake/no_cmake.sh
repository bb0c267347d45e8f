#!/usr/bin/env bash
# README's "Without CMake" one-liners, run: a program built header-only, then in compiled mode
# (src/devtensor.cpp compiled to devtensor.o, the program with -DDEVTENSOR_COMPILED), both with
# OpenBLAS when the machine has it, the hdf5 component's line where Debian's HDF5 is installed, and
# the mpi component's lines (its runtime compiled once) where Open MPI's mpicxx is.
# Usage: no_cmake.sh <c++ compiler> <source dir> <work dir>
# -O0 where the README says -O2: the test checks that the lines build and run, and src/devtensor.cpp
# compiles in 44 s instead of 66 s at -O1.
set -euo pipefail
cxx=$1 src=$2 work=$3
mkdir -p "$work"
blas_define=() blas_lib=()
if echo 'int main(){}' | "$cxx" -x c++ - -o "$work/probe" -lopenblas 2>/dev/null; then
  blas_define=(-DDEVTENSOR_WITH_CBLAS=1) blas_lib=(-lopenblas)
fi
set -x
"$cxx" -std=c++20 -O0 "${blas_define[@]}" -I"$src/include" "$src/tests/package/no_cmake/main.cpp" \
  -o "$work/header_only" "${blas_lib[@]}" -pthread
"$work/header_only"
"$cxx" -std=c++20 -O0 "${blas_define[@]}" -I"$src/include" -c "$src/src/devtensor.cpp" -o "$work/devtensor.o"
"$cxx" -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -I"$src/include" "$src/tests/package/no_cmake/main.cpp" \
  "$work/devtensor.o" -o "$work/compiled" "${blas_lib[@]}" -pthread
"$work/compiled"
# The hdf5 component without CMake (Debian's serial HDF5): -DDEVTENSOR_WITH_HDF5 and HDF5's flags.
if [[ -f /usr/include/hdf5/serial/hdf5.h ]]; then
  "$cxx" -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -DDEVTENSOR_WITH_HDF5 -I"$src/include" \
    -I/usr/include/hdf5/serial "$src/tests/package/no_cmake/weights.cpp" "$work/devtensor.o" -o "$work/weights" \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 "${blas_lib[@]}" -pthread
  "$work/weights" "$work"
  # The keras_archive component without CMake: its code compiled once, then the hdf5 line plus
  # -DDEVTENSOR_WITH_KERAS_ARCHIVE, that object and -lzip.
  if [[ -f /usr/include/zip.h && -f /usr/include/nlohmann/json.hpp ]]; then
    "$cxx" -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -DDEVTENSOR_WITH_HDF5 -DDEVTENSOR_WITH_KERAS_ARCHIVE \
      -I"$src/include" -I/usr/include/hdf5/serial -c "$src/src/devtensor_keras_archive.cpp" -o "$work/keras_archive.o"
    "$cxx" -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -DDEVTENSOR_WITH_HDF5 -DDEVTENSOR_WITH_KERAS_ARCHIVE \
      -I"$src/include" -I/usr/include/hdf5/serial "$src/tests/package/no_cmake/weights.cpp" "$work/devtensor.o" \
      "$work/keras_archive.o" -o "$work/archive" -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lzip "${blas_lib[@]}" -pthread
    "$work/archive" "$work"
  fi
fi
# The mpi component without CMake: its runtime compiled once with mpicxx (the same compiler), then
# the program with -DDEVTENSOR_MPI_COMPILED and that object (package.cpu_consumer's mpi program).
if command -v mpicxx >/dev/null && [[ -f /usr/include/nlohmann/json.hpp ]]; then
  OMPI_CXX="$cxx" mpicxx -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -DOMPI_SKIP_MPICXX -I"$src/include" \
    -c "$src/src/devtensor_mpi.cpp" -o "$work/devtensor_mpi.o"
  OMPI_CXX="$cxx" mpicxx -std=c++20 -O0 "${blas_define[@]}" -DDEVTENSOR_COMPILED -DDEVTENSOR_MPI_COMPILED -DOMPI_SKIP_MPICXX \
    -I"$src/include" "$src/tests/package/cpu_consumer/mpi_consumer.cpp" "$work/devtensor.o" "$work/devtensor_mpi.o" \
    -o "$work/mpi_consumer" "${blas_lib[@]}" -pthread
  "$work/mpi_consumer"
fi
