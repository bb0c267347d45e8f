#pragma once
/// @file source_location.hpp
/// @brief devtensor::SourceLocation: std::source_location where the standard library has it, else
/// the same two members from the compiler's builtins.
///
/// libstdc++ 12 provides std::source_location only to compilers with __builtin_source_location
/// (GCC 11+, clang 15+), so clang 14 (Debian 12's default, and the clang that builds the libFuzzer
/// targets here) would not compile devtensor at all. devtensor reads only file_name() and line().

#include <cstdint>
#if __has_include(<source_location>)
#include <source_location>
#endif

namespace devtensor {

#if defined(__cpp_lib_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          std::uint_least32_t line = __builtin_LINE()) noexcept {
    SourceLocation where;
    where.file_ = file;
    where.line_ = line;
    return where;
  }
  constexpr SourceLocation() noexcept = default;
  [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
  [[nodiscard]] constexpr std::uint_least32_t line() const noexcept { return line_; }

 private:
  const char* file_ = "";
  std::uint_least32_t line_ = 0;
};
#endif

/// A caller's file and line, captured by a default member initializer (OpOptions::where): the
/// initializer runs where the options are built, so `CallSite where = CallSite::here();` records
/// the user's line. std::source_location::current() does the same in g++ and clang, but nvcc 13's
/// front end aborts ("Compilation aborted", no message) on a consteval current() in a default
/// member initializer; the builtins behind here() work in all three.
struct CallSite {
  const char* file = "";
  std::uint_least32_t line = 0;
  static constexpr CallSite here(const char* file = __builtin_FILE(),
                                 std::uint_least32_t line = __builtin_LINE()) noexcept {
    return {file, line};
  }
  static CallSite of(const SourceLocation& where) noexcept { return {where.file_name(), where.line()}; }
};

}  // namespace devtensor
