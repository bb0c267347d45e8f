#!/bin/sh
# record_status.sh <dir> <command...>: runs one MPI rank's command and writes its exit status to
# <dir>/rank-<rank> (128 + N when signal N ended it), so that a test can tell a clean exit from a
# crash on every rank, not only the one mpiexec reports.
dir=$1
shift
"$@"
status=$?
echo "$status" > "$dir/rank-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
exit "$status"
