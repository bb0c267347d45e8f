// The log sink: replacement, restoration, severities, a throwing sink, threads; the two level
// switches (TF_CPP_MIN_LOG_LEVEL for runtime lines, the verbosity for Python-logger lines); FirstN.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <thread>
#include <vector>

#include "devtensor/core/log.hpp"
#include "devtensor_test.hpp"

using namespace devtensor;

BOOST_AUTO_TEST_SUITE(log_sink)

BOOST_AUTO_TEST_CASE(sink_receives_lines_and_is_restored) {
  std::vector<std::pair<LogSeverity, std::string>> outer_lines;
  ScopedLogSink outer([&](LogSeverity s, std::string_view l) { outer_lines.emplace_back(s, l); });
  {
    test::LogCapture inner;
    log(LogSeverity::warning, "inner line");
    BOOST_TEST(inner.lines() == std::vector<std::string>{"inner line"}, boost::test_tools::per_element());
    BOOST_TEST((inner.entries()[0].first == LogSeverity::warning));
  }
  log(LogSeverity::error, "outer line");
  BOOST_TEST_REQUIRE(outer_lines.size() == 1u);
  BOOST_TEST(outer_lines[0].second == "outer line");
  BOOST_TEST((outer_lines[0].first == LogSeverity::error));
}

BOOST_AUTO_TEST_CASE(throwing_sink_does_not_escape) {
  ScopedLogSink bad([](LogSeverity, std::string_view) { throw std::runtime_error("sink broke"); });
  BOOST_CHECK_NO_THROW(log(LogSeverity::info, "line"));
  static_assert(noexcept(log(LogSeverity::info, "")));
}

BOOST_AUTO_TEST_CASE(concurrent_lines_are_serialised) {
  test::LogCapture capture;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 100; ++i) log(LogSeverity::info, "thread " + std::to_string(t));
    });
  for (auto& th : threads) th.join();
  BOOST_TEST(capture.lines().size() == 400u);
  BOOST_TEST(capture.count("thread 3") == 100u);
}

BOOST_AUTO_TEST_CASE(severity_letters) {
  BOOST_TEST(to_string(LogSeverity::info) == "I");
  BOOST_TEST(to_string(LogSeverity::warning) == "W");
  BOOST_TEST(to_string(LogSeverity::error) == "E");
}

namespace {
// Which of info, warning, error reach the sink from `source`, as "IWE" with '-' for hidden.
std::string shown(LogSource source) {
  test::LogCapture capture;
  for (auto severity : {LogSeverity::info, LogSeverity::warning, LogSeverity::error}) log(source, severity, "line");
  std::string out = "---";
  for (const auto& [severity, line] : capture.entries())
    out[static_cast<std::size_t>(severity)] = to_string(severity)[0];
  return out;
}
struct DefaultLevels {
  DefaultLevels() { logging::reset_to_defaults(); }
  ~DefaultLevels() {
    ::unsetenv("TF_CPP_MIN_LOG_LEVEL");
    logging::reset_to_defaults();
  }
};
}  // namespace

BOOST_FIXTURE_TEST_CASE(min_cpp_log_level_hides_runtime_lines_below_it, DefaultLevels) {
  const char* expected[] = {"IWE", "-WE", "--E", "---", "---"};
  for (int level = 0; level <= 4; ++level) {
    logging::set_min_cpp_log_level(level);
    BOOST_TEST(logging::get_min_cpp_log_level() == level);
    BOOST_TEST(shown(LogSource::cpp_runtime) == expected[level], "level " << level);
    BOOST_TEST(log_enabled(LogSource::cpp_runtime, LogSeverity::info) == (level == 0));
  }
  logging::set_min_cpp_log_level(-5);  // below 0 shows everything
  BOOST_TEST(shown(LogSource::cpp_runtime) == "IWE");
  // log(severity, line) is a runtime line.
  logging::set_min_cpp_log_level(2);
  test::LogCapture capture;
  log(LogSeverity::warning, "hidden");
  log(LogSeverity::error, "shown");
  BOOST_TEST(capture.lines() == std::vector<std::string>{"shown"}, boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(tf_cpp_min_log_level_is_read_from_the_environment, DefaultLevels) {
  const std::pair<const char*, int> cases[] = {
      {"0", 0},  {"1", 1},   {"2", 2}, {"3", 3},  {" 2", 2},
      {"2x", 2}, {"abc", 0}, {"", 0},  {"-1", 0}, {"99999999999999999999", INT_MAX}};
  for (const auto& [value, level] : cases) {
    ::setenv("TF_CPP_MIN_LOG_LEVEL", value, 1);
    logging::reset_to_defaults();  // read again at the next line, as in a new process
    BOOST_TEST(logging::get_min_cpp_log_level() == level, "TF_CPP_MIN_LOG_LEVEL='" << value << "'");
  }
  ::setenv("TF_CPP_MIN_LOG_LEVEL", "1", 1);
  logging::reset_to_defaults();
  BOOST_TEST(shown(LogSource::cpp_runtime) == "-WE");
  logging::set_min_cpp_log_level(0);  // the setter overrides the environment
  BOOST_TEST(shown(LogSource::cpp_runtime) == "IWE");
  ::unsetenv("TF_CPP_MIN_LOG_LEVEL");
  logging::reset_to_defaults();
  BOOST_TEST(logging::get_min_cpp_log_level() == 0);
}

BOOST_FIXTURE_TEST_CASE(verbosity_governs_python_logger_lines, DefaultLevels) {
  BOOST_TEST((logging::get_verbosity() == LogSeverity::warning));
  BOOST_TEST(shown(LogSource::python_logger) == "-WE");  // INFO hidden by default, warnings shown
  logging::set_verbosity(LogSeverity::info);
  BOOST_TEST(shown(LogSource::python_logger) == "IWE");
  logging::set_verbosity(LogSeverity::error);
  BOOST_TEST(shown(LogSource::python_logger) == "--E");
  // The two switches are independent, as in TensorFlow.
  logging::set_verbosity(LogSeverity::warning);
  logging::set_min_cpp_log_level(3);
  BOOST_TEST(shown(LogSource::python_logger) == "-WE");
  BOOST_TEST(shown(LogSource::cpp_runtime) == "---");
  logging::reset_to_defaults();
  BOOST_TEST(shown(LogSource::python_logger) == "-WE");
}

BOOST_FIXTURE_TEST_CASE(first_n_counts_calls_whether_or_not_shown, DefaultLevels) {
  logging::FirstN site(3);
  int passed = 0;
  for (int i = 0; i < 10; ++i) passed += site.next() ? 1 : 0;
  BOOST_TEST(passed == 3);
  logging::reset_to_defaults();  // a new process: counting starts again
  BOOST_TEST(site.next());
  logging::FirstN shared(100);
  std::atomic<int> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) total += shared.next() ? 1 : 0;
    });
  for (auto& th : threads) th.join();
  BOOST_TEST(total.load() == 100);
}

BOOST_AUTO_TEST_SUITE_END()
