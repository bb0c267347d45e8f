#!/usr/bin/env bash
# Every C++ file of the repository is as clang-format 14 writes it with the root's .clang-format
# (test format.check; fmt's lint does the same). Folders named *_fixture hold test inputs and are
# left as they are. Without clang-format 14 the check is skipped (exit 77, ctest's SKIP_RETURN_CODE):
# other versions format differently, so their verdict would be noise.
#
# Usage: format_check.sh <repository> [file...]   (no files: every tracked-looking C++ file)
# Fix what it reports: clang-format-14 -i <file>
set -euo pipefail
root=$1
shift
tool=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" >/dev/null && "$candidate" --version | grep -q "version 14\."; then
    tool=$candidate
    break
  fi
done
if [[ -z $tool ]]; then
  echo "format check skipped: clang-format 14 is not installed (Debian: clang-format-14)"
  exit 77
fi
cd "$root"
if (($# == 0)); then
  mapfile -t files < <(find include src examples benchmarks tests \( -name '*_fixture' -prune \) -o \
                            -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) \
                            -print | sort)
else
  files=("$@")
fi
if report=$("$tool" --dry-run -Werror --style=file "${files[@]}" 2>&1); then
  echo "format check: ${#files[@]} files as $tool writes them"
  exit 0
fi
echo "${report:0:20000}"
echo "format check FAILED: the files above differ from $tool's output; run: $tool -i <file>"
exit 1
