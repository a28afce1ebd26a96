/// \file
/// The reports of `stepcast need`: text here, JSON in report_json.cpp (the one translation
/// unit that includes nlohmann).
#pragma once

#include "planner/need.hpp"

#include <string>

namespace stepcast::cli {

/// The answer (or why there is none), the rule of thumb beside it, and the curve (bandwidth
/// Gb/s, step time s, exposed comm s, exposed %).
std::string need_text(const NeedResult& result);

/// {"scenario", "nodes", "gpus", "target_exposed_fraction", "tolerance", "nic", "nic_Gbps",
///  "nics_per_node", "needed_Gbps" (null: not reached), "met_at_min", "nics_needed",
///  "predictions", "rule_of_thumb_Gbps", "gradient_bytes", "compute_s", "written",
///  "at_max", "curve": [{node_Gbps, step_time_s, comm_exposed_s, exposed_fraction, mark}]}
std::string need_json(const NeedResult& result);

}  // namespace stepcast::cli
