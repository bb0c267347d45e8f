#pragma once
// <regex> for the tests that match progress output. GCC 12 reports a false -Wmaybe-uninitialized
// inside libstdc++'s std::regex at -O1 with ASan; the include is wrapped so -Werror builds pass.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
