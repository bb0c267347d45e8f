#!/bin/sh
# Compiler launcher of the header self-containment tests: the compiler checks the TU
# (-fsyntax-only: parsing, overload resolution, template instantiation, warnings) without
# generating code, a third of an -O2 -g compile's time; the object file it names is then created
# empty so that the build tool sees the step done. Usage: syntax_only.sh <compiler> <args...>
out=""
previous=""
for argument in "$@"; do
  [ "$previous" = "-o" ] && out=$argument
  previous=$argument
done
"$@" -fsyntax-only || exit
[ -n "$out" ] && : > "$out"
