#include "cli/progress.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace stepcast::cli {

namespace {
bool drawn = false;  ///< a bar is on the terminal's current line
}  // namespace

ProgressFn terminal_progress(std::string_view label) {
  if (isatty(fileno(stderr)) == 0) return {};
  return [label = std::string(label)](std::string_view phase, std::int64_t done, std::int64_t total) {
    constexpr int kWidth = 30;
    const double f = total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 1.0;
    const int filled = static_cast<int>(f * kWidth);
    fmt::print(stderr, "\r  {} {:<8} [{}{}] {:3.0f}%", label, phase, std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(kWidth - filled), '-'), 100 * f);
    std::fflush(stderr);
    drawn = true;
  };
}

void clear_progress() {
  if (!drawn) return;
  fmt::print(stderr, "\r{}\r", std::string(80, ' '));
  std::fflush(stderr);
  drawn = false;
}

}  // namespace stepcast::cli
