/// \file
/// `stepcast need SCENARIO --exposed-comm 5%`: its options and help text (the reports are
/// report/need_view.hpp).
#pragma once

#include "planner/need.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace stepcast::cli {

struct NeedArgs {
  std::string scenario;
  std::string exposed = "5%";  ///< target share of the step, "5%" or "0.05"
  double min_Gbps = 1;
  double max_Gbps = 102400;
  double tolerance = 0.01;
  int curve_points = 9;
  bool json = false;
};

/// Adds the command's arguments to `cmd` (main.cpp creates it and sets its footer).
void add_need_options(CLI::App& cmd, NeedArgs& args);

/// What the command does, for its --help.
std::string need_help();

/// The library's options from the arguments; throws std::invalid_argument for a bad share.
NeedOptions need_options(const NeedArgs& args);

}  // namespace stepcast::cli
