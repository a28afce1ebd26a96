/// \file
/// `stepcast need SCENARIO --exposed-comm 5%`: its options, the help text, and its reports
/// (text here; JSON in report_json.cpp, the one translation unit that includes nlohmann).
#pragma once

#include "simulator/need.hpp"

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

/// The answer (or why there is none), the rule of thumb beside it, and the curve (bandwidth
/// Gb/s, step time s, exposed comm s, exposed %).
std::string need_text(const NeedResult& result);

/// {"scenario", "nodes", "gpus", "target_exposed_fraction", "tolerance", "nic", "nic_Gbps",
///  "nics_per_node", "needed_Gbps" (null: not reached), "met_at_min", "nics_needed",
///  "predictions", "rule_of_thumb_Gbps", "gradient_bytes", "compute_s", "written",
///  "at_max", "curve": [{node_Gbps, step_time_s, comm_exposed_s, exposed_fraction, mark}]}
std::string need_json(const NeedResult& result);

}  // namespace stepcast::cli
