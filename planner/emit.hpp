#pragma once
/// A plan row written out as a scenario file (`stepcast plan --emit FILE`).

#include "planner/plan.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace stepcast {

/// The scenario file `original` (read from `original_file`) run at `point` on `gpus` GPUs:
/// the strategy as an object with the point's layout (name, tp, sp, pp, vpp, schedule, cp,
/// offload) and the overlaps with_layout keeps, training.micro_batch, grad_accum and
/// recompute, hardware.gpus (nodes dropped: they follow), relative hf_config and calibration
/// paths made absolute, and its name suffixed with the layout. `predict` on it gives the same
/// step as the plan row (with_layout(scenario, point)).
nlohmann::ordered_json emitted_scenario(const nlohmann::ordered_json& original, const std::string& original_file,
                                        const PlanPoint& point, int gpus);

}  // namespace stepcast
