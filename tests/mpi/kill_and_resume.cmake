# cmake -DWORK=<dir> -DSAVE_FREQ=<epoch|batches> -DLIMIT=<seconds> -P kill_and_resume.cmake -- <launcher...> <program>
# BackupAndRestore across processes (tests/mpi/multi_worker_test.cpp, backup_and_restore_job):
#   1. the job trains 5 epochs uninterrupted;
#   2. the same job again, with another backup folder, and worker 1 kills itself (SIGKILL) in
#      epoch 2: the job must end by itself, with a failure status, leaving a backup;
#   3. the job is launched again with that folder: it must resume from the backup, not afresh;
# and the weights of 3 must equal those of 1 bit for bit (hexadecimal floats, compared as text).
include("${CMAKE_CURRENT_LIST_DIR}/command_line.cmake")
set(launcher ${command})
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# run(<name> <backup folder> <result file> [kill]): the job's status and output in <name>_status, <name>_output.
function(run name folder result)
  execute_process(COMMAND ${launcher} --run_test=multi_worker/backup_and_restore_job -- "${folder}" "${result}"
                          "${SAVE_FREQ}" ${ARGN}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output TIMEOUT ${LIMIT})
  message("--- ${name} (status ${status}):\n${output}")
  set(${name}_status "${status}" PARENT_SCOPE)
  set(${name}_output "${output}" PARENT_SCOPE)
endfunction()

run(uninterrupted "${WORK}/uninterrupted" "${WORK}/uninterrupted.txt")
if(NOT uninterrupted_status STREQUAL "0" OR NOT EXISTS "${WORK}/uninterrupted.txt")
  message(FATAL_ERROR "The uninterrupted job failed (status ${uninterrupted_status})")
endif()
if(NOT uninterrupted_output MATCHES "found no backup; 5 epochs run")
  message(FATAL_ERROR "The uninterrupted job did not train 5 epochs from the start")
endif()

run(killed "${WORK}/backup" "${WORK}/resumed.txt" kill)
if(killed_status STREQUAL "0" OR NOT killed_status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "The job whose worker was killed ended with '${killed_status}'; expected a failure status within ${LIMIT} s")
endif()
if(NOT EXISTS "${WORK}/backup/training_metadata.json" OR EXISTS "${WORK}/resumed.txt")
  message(FATAL_ERROR "The killed job left no backup in ${WORK}/backup (or it finished)")
endif()
file(READ "${WORK}/backup/training_metadata.json" metadata)
message("The killed job's backup: ${metadata}")

run(resumed "${WORK}/backup" "${WORK}/resumed.txt")
if(NOT resumed_status STREQUAL "0" OR NOT EXISTS "${WORK}/resumed.txt")
  message(FATAL_ERROR "The relaunched job failed (status ${resumed_status})")
endif()
if(NOT resumed_output MATCHES "BackupAndRestore resumed at epoch [12], batch")
  message(FATAL_ERROR "The relaunched job did not resume from the backup")
endif()
if(EXISTS "${WORK}/backup")
  message(FATAL_ERROR "The finished job did not delete its backup")
endif()
file(READ "${WORK}/uninterrupted.txt" want)
file(READ "${WORK}/resumed.txt" got)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "The resumed job's weights differ from the uninterrupted job's:\n${got}\nversus\n${want}")
endif()
string(REGEX MATCHALL "\n" lines "${want}")
list(LENGTH lines count)
message("The resumed job reached the uninterrupted job's ${count} weights bit for bit.")
file(REMOVE_RECURSE "${WORK}")
