// DeviceScope: merging, nesting, threads, misuse.
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <type_traits>

#include "devtensor/device/scope.hpp"
#include "devtensor_test.hpp"

using devtensor::DeviceScope;
using devtensor::DeviceSpec;

static_assert(!std::is_default_constructible_v<DeviceScope>);
static_assert(!std::is_copy_constructible_v<DeviceScope>);
static_assert(!std::is_move_constructible_v<DeviceScope>);
static_assert(!std::is_copy_assignable_v<DeviceScope>);
static_assert(!std::is_move_assignable_v<DeviceScope>);
static_assert(std::is_nothrow_destructible_v<DeviceScope>);
static_assert(!std::is_constructible_v<DeviceScope, std::nullptr_t>);
static_assert(!std::is_convertible_v<const char*, DeviceScope>);  // explicit

namespace {
std::string current() { return devtensor::current_device_spec().to_string(); }
}  // namespace

BOOST_FIXTURE_TEST_SUITE(scope, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(no_scope_requests_nothing) {
  BOOST_TEST(current() == "");
  BOOST_TEST(devtensor::device_scope_depth() == 0u);
}

BOOST_AUTO_TEST_CASE(outermost_scope_merges_into_first_device) {
  {
    DeviceScope s("/gpu:1");
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:1");
    BOOST_TEST(s.spec().to_string() == current());
  }
  {
    DeviceScope s("/job:worker");  // only job: inherits device:CPU:0
    BOOST_TEST(current() == "/job:worker/replica:0/task:0/device:CPU:0");
  }
  {
    DeviceScope s("GPU:0");  // local form
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:0");
  }
  {
    DeviceScope s("");  // empty spec: the first device itself
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  BOOST_TEST(current() == "");
}

BOOST_AUTO_TEST_CASE(three_spellings) {
  {
    DeviceScope s("/cpu:0");
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  {
    DeviceScope s(devtensor::gpu, 1);
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:1");
  }
  {
    DeviceScope s(devtensor::cpu);
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  {
    DeviceScope outer(devtensor::cpu, 3);
    DeviceScope inner(devtensor::gpu);  // type only: the id comes from the enclosing scope
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:3");
  }
  {
    std::string name = "/device:GPU:2";
    DeviceScope s(name);
    BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:2");
    DeviceScope t(DeviceSpec::parse("/task:5"));
    BOOST_TEST(current() == "/job:localhost/replica:0/task:5/device:GPU:2");
  }
}

BOOST_AUTO_TEST_CASE(nested_scopes_override) {
  DeviceScope a("/job:w/device:CPU:0");
  BOOST_TEST(current() == "/job:w/replica:0/task:0/device:CPU:0");
  {
    DeviceScope b("/device:GPU:1");  // TensorFlow's rule: inner fields win, never a conflict
    BOOST_TEST(current() == "/job:w/replica:0/task:0/device:GPU:1");
    {
      DeviceScope c("/job:x/task:2");
      BOOST_TEST(current() == "/job:x/replica:0/task:2/device:GPU:1");
      BOOST_TEST(devtensor::device_scope_depth() == 3u);
    }
    BOOST_TEST(current() == "/job:w/replica:0/task:0/device:GPU:1");
  }
  BOOST_TEST(current() == "/job:w/replica:0/task:0/device:CPU:0");
}

BOOST_AUTO_TEST_CASE(reset_scope_starts_from_empty) {
  DeviceScope a("/gpu:1");
  {
    DeviceScope reset(std::nullopt);
    BOOST_TEST(current() == "");
    {
      DeviceScope inner("/device:GPU:0");  // merges into the empty spec, not the first device
      BOOST_TEST(current() == "/device:GPU:0");
    }
  }
  BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:GPU:1");
}

BOOST_AUTO_TEST_CASE(malformed_spec_throws_and_pushes_nothing) {
  DEVTENSOR_CHECK_THROW_WITH(DeviceScope("/gpu:x"), devtensor::InvalidArgumentError,
                             "Malformed device specification '/gpu:x'");
  BOOST_CHECK_THROW(DeviceScope(devtensor::gpu, -1), devtensor::InvalidArgumentError);
  BOOST_TEST(devtensor::device_scope_depth() == 0u);
}

BOOST_AUTO_TEST_CASE(scopes_do_not_initialise_the_context) {
  DeviceScope s("/gpu:7");  // a device that does not exist: only using it fails
  BOOST_TEST(!devtensor::Context::global().initialized());
}

BOOST_AUTO_TEST_CASE(threads_have_their_own_stacks) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  // Boost.Test assertions are not thread-safe: workers only record, the main thread checks.
  std::string seen_a, seen_b, initial_a, initial_b;
  auto worker = [&](const char* spec, std::string& seen, std::string& initial) {
    initial = current();  // nothing inherited from the main thread
    DeviceScope s(spec);
    ++ready;
    while (!go.load()) std::this_thread::yield();
    seen = current();  // both scopes are alive at this moment
  };
  DeviceScope main_scope("/cpu:0");
  std::thread a(worker, "/gpu:0", std::ref(seen_a), std::ref(initial_a));
  std::thread b(worker, "/job:w/gpu:1", std::ref(seen_b), std::ref(initial_b));
  while (ready.load() < 2) std::this_thread::yield();
  go = true;
  a.join();
  b.join();
  BOOST_TEST(initial_a == "");
  BOOST_TEST(initial_b == "");
  BOOST_TEST(seen_a == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(seen_b == "/job:w/replica:0/task:0/device:GPU:1");
  BOOST_TEST(current() == "/job:localhost/replica:0/task:0/device:CPU:0");
}

BOOST_AUTO_TEST_CASE(generation_changes_on_push_and_pop) {
  const auto g0 = devtensor::detail::scope_stack().generation;
  {
    DeviceScope s("/cpu:0");
    BOOST_TEST(devtensor::detail::scope_stack().generation != g0);
  }
  BOOST_TEST(devtensor::detail::scope_stack().generation != g0);
}

// Leaving scopes out of order aborts with TensorFlow's key phrase (a destructor cannot throw).
BOOST_AUTO_TEST_CASE(out_of_order_exit_aborts) {
  int pipe_fds[2];
  BOOST_TEST_REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(nullptr);  // or the child would print the parent's buffered output again
  const pid_t pid = ::fork();
  BOOST_TEST_REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // Boost.Test's handler would catch the abort in the child
    ::close(pipe_fds[0]);
    devtensor::set_log_sink(
        [&](devtensor::LogSeverity, std::string_view line) { (void)!::write(pipe_fds[1], line.data(), line.size()); });
    auto outer = std::make_unique<DeviceScope>("/cpu:0");
    auto inner = std::make_unique<DeviceScope>("/gpu:0");
    outer.reset();  // wrong order
    ::_exit(0);     // not reached
  }
  ::close(pipe_fds[1]);
  std::string output;
  char buffer[512];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGABRT);
  BOOST_TEST(devtensor::test::contains(output, "Exiting device scope without proper scope nesting"));
}

BOOST_AUTO_TEST_SUITE_END()
