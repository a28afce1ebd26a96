/// \file
/// A progress bar on standard error for the long commands (plan, need): drawn only when
/// standard error is a terminal, so piped and tested runs print nothing and stay
/// deterministic. The library reports progress through a callback and never prints.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace stepcast::cli {

using ProgressFn = std::function<void(std::string_view phase, std::int64_t done, std::int64_t total)>;

/// A callback that redraws "\r  <label> <phase> [#####-----] 45%" on standard error, and
/// ends the line when a phase reaches its total; empty (no output) when standard error is
/// not a terminal.
ProgressFn terminal_progress(std::string_view label);

/// Clears the bar's line if one was drawn (before the report is written).
void clear_progress();

}  // namespace stepcast::cli
