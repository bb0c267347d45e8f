// Fault scenarios of timed collectives across real processes (mpiexec -n 3; issue: a timed-out
// collective corrupted the heap at exit). Every worker runs `steps` steps of strategy.run + reduce
// with a deadline; one worker (`late`, the last by default) misbehaves in step `late_step`:
//   stall    it sleeps `stall_seconds` (past the deadline), then makes the step's collective;
//   absent   it never makes that collective: it leaves the loop and returns;
//   killed   it kills itself with SIGKILL (the launcher must end the job);
//   fails    it writes "worker <n> fails: its last words" to std::cout (no newline, no flush) and
//            returns 3: the job ends with status 3 and the text must not be lost to MPI_Abort
//            (alone in its world, without mpiexec, it exits 3 without Open MPI's abort banner).
// Each worker checks what it saw and returns 0 when it was what the contract says, 1 otherwise:
//   - the on-time workers: DeadlineExceededError naming the late worker within timeout + 1 s;
//   - every collective after that, on every worker: FailedPreconditionError at once;
//   - the stalled worker, when it arrives: DeadlineExceededError at once (the others gave up).
// tests/mpi/expect_job_ends.cmake checks that every process exited with the status it returned
// (no signal) and that the job ended by itself.
//
//   collective_faults <stall|absent|killed|fails> [late_worker=-1: the last] [timeout_seconds=1; 0: none]
//   [stall_seconds=4]
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "devtensor/devtensor.hpp"
#include "devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Checks {
  int worker = 0;
  int failures = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "worker %d: FAILED: %s\n", worker, what.c_str());
  }
};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario != "stall" && scenario != "absent" && scenario != "killed" && scenario != "fails") {
    std::fprintf(stderr, "usage: %s <stall|absent|killed|fails> [late_worker] [timeout_seconds] [stall_seconds]\n",
                 argv[0]);
    return 2;
  }
  const int late_worker = argc > 2 ? std::atoi(argv[2]) : -1;
  const double timeout = argc > 3 ? std::atof(argv[3]) : 1.0;
  const double stall = argc > 4 ? std::atof(argv[4]) : 4.0;
  constexpr int steps = 6, late_step = 3;

  const std::optional<double> deadline = timeout > 0 ? std::optional(timeout) : std::nullopt;
  ds::MultiWorkerMirroredStrategy strategy(
      ds::cluster_resolver::TFConfigClusterResolver(),
      ds::CommunicationOptions(0, deadline, ds::CommunicationImplementation::RING));
  Checks checks{strategy.worker_index()};
  const int workers = strategy.num_workers();
  const int late = late_worker < 0 ? workers - 1 : late_worker;
  const bool is_late = checks.worker == late;
  if (scenario != "fails") checks.expect(workers >= 2, "needs at least 2 workers, got " + std::to_string(workers));

  bool timed_out = false;
  for (int step = 0; step < steps; ++step) {
    if (is_late && step == late_step) {
      if (scenario == "absent") break;
      if (scenario == "killed") std::raise(SIGKILL);
      if (scenario == "fails") {
        std::cout << "worker " << checks.worker << " fails: its last words";
        return 3;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(stall));
    }
    const auto ones = strategy.run([] { return dt::scalar<float>(1); });
    const auto began = Clock::now();
    const std::string at = "step " + std::to_string(step) + ": ";
    try {
      const float total = strategy.reduce(ds::ReduceOp::SUM, ones, std::nullopt).item();
      checks.expect(step < late_step, at + "the reduce succeeded after a worker was late");
      checks.expect(total == static_cast<float>(workers), at + "sum " + std::to_string(total));
    } catch (const dt::DeadlineExceededError& e) {
      const double waited = seconds_since(began);
      std::fprintf(stderr, "worker %d, %s%s after %.2f s: %s\n", checks.worker, at.c_str(), "DeadlineExceededError",
                   waited, e.what());
      checks.expect(step == late_step && !timed_out, at + "DeadlineExceededError in the wrong step");
      checks.expect(contains(e.what(), "worker(s) " + std::to_string(late) + " "),
                    at + "the message does not name the late worker");
      if (is_late) {
        checks.expect(waited < 0.5, at + "the late worker was not told at once");
      } else {
        // The chief decides at its own deadline; a peer that arrived after it hears a little sooner.
        const double least = checks.worker == 0 ? timeout : 0.9 * timeout;
        checks.expect(waited >= least && waited < timeout + 1.0, at + "waited " + std::to_string(waited) + " s");
      }
      timed_out = true;
    } catch (const dt::FailedPreconditionError& e) {
      const double waited = seconds_since(began);
      checks.expect(timed_out, at + "FailedPreconditionError before any timeout: " + e.what());
      checks.expect(waited < 0.1, at + "FailedPreconditionError after " + std::to_string(waited) + " s");
      checks.expect(contains(e.what(), "was aborted after"), at + "unexpected message: " + e.what());
    } catch (const std::exception& e) {
      checks.expect(false, at + "unexpected exception: " + e.what());
    }
  }
  if (!(is_late && scenario == "absent")) checks.expect(timed_out, "no collective timed out");
  std::fprintf(stderr, "worker %d: %s\n", checks.worker, checks.failures == 0 ? "as expected" : "FAILED");
  return checks.failures == 0 ? 0 : 1;
}
