// The log sink: replacement, restoration, severities, a throwing sink, threads.
#include <boost/test/unit_test.hpp>

#include <thread>
#include <vector>

#include "devtensor/core/log.hpp"
#include "devtensor_test.hpp"

using namespace devtensor;

BOOST_AUTO_TEST_SUITE(logging)

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

BOOST_AUTO_TEST_SUITE_END()
