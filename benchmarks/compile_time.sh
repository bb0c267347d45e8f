#!/usr/bin/env bash
# Compile time of single translation units (g++ -O2 -DNDEBUG, no -g, one job: the cost a user pays
# at every edit of that file), median of REPS runs, interleaved so that every configuration sees
# the same machine load:
#   header-only   the bare #include (every definition compiled in the TU)
#   compiled      -DDEVTENSOR_COMPILED (what devtensor::devtensor gives; src/devtensor.cpp apart)
#   old           header-only against OLD_INCLUDE (another tree's include/), when given
# and the once-per-build-tree cost of src/devtensor.cpp. Prints a markdown table.
# Usage: benchmarks/compile_time.sh [OLD_INCLUDE]   (REPS=3, CXX=g++, FILES=<the list> by default)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
old=${1:-}
reps=${REPS:-3}
cxx=${CXX:-g++}
flags=(-std=c++20 -O2 -DNDEBUG -DDEVTENSOR_WITH_CBLAS=1 -w)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include <devtensor/devtensor.hpp>\nint main() {}\n' >"$work/include_only.cpp"
files=(examples/05_manual_placement.cpp examples/09_keras_fit.cpp examples/10_custom_training_loop.cpp
       "$work/include_only.cpp")
[[ -n "${FILES:-}" ]] && read -r -a files <<<"$FILES"  # e.g. FILES="examples/09_keras_fit.cpp"

seconds() {  # seconds of one compile
  local start end
  start=$(date +%s.%N)
  "$cxx" "${flags[@]}" "$@" -c -o "$work/out.o"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A times
for ((r = 0; r < reps; ++r)); do
  for f in "${files[@]}"; do
    times[$f,header]+="$(seconds -Iinclude "$f") "
    times[$f,compiled]+="$(seconds -Iinclude -DDEVTENSOR_COMPILED "$f") "
    [[ -n "$old" ]] && times[$f,old]+="$(seconds -I"$old" "$f") "
  done
  times[lib]+="$(seconds -Iinclude src/devtensor.cpp) "
done

echo "| translation unit | old tree, header-only (s) | header-only (s) | compiled mode (s) |"
echo "|---|---:|---:|---:|"
for f in "${files[@]}"; do
  name=$(basename "$f")
  o="-"
  [[ -n "$old" ]] && o=$(tr ' ' '\n' <<<"${times[$f,old]}" | grep . | median)
  h=$(tr ' ' '\n' <<<"${times[$f,header]}" | grep . | median)
  c=$(tr ' ' '\n' <<<"${times[$f,compiled]}" | grep . | median)
  printf '| %s | %.1f | %.1f | %.1f |\n' "$name" "${o/-/0}" "$h" "$c"
done
printf '| src/devtensor.cpp (once per build tree) | | %.1f | |\n' "$(tr ' ' '\n' <<<"${times[lib]}" | grep . | median)"
echo
echo "raw seconds:"
for k in "${!times[@]}"; do echo "  $k: ${times[$k]}"; done | sort
