#include "planner/emit.hpp"

#include "model/offload.hpp"
#include "model/parallel.hpp"

#include <filesystem>

namespace stepcast {

namespace {

/// A path relative to the scenario file, made absolute so that the emitted file works
/// wherever it is written.
void absolute_path(nlohmann::ordered_json& parent, const char* key, const std::filesystem::path& base_dir) {
  if (!parent.is_object() || !parent.contains(key) || !parent[key].is_string()) return;
  const std::filesystem::path p(parent[key].get<std::string>());
  if (p.is_relative()) parent[key] = std::filesystem::absolute(base_dir / p).lexically_normal().string();
}

}  // namespace

nlohmann::ordered_json emitted_scenario(const nlohmann::ordered_json& original, const std::string& original_file,
                                        const PlanPoint& point, int gpus) {
  nlohmann::ordered_json out = original;
  const ParallelLayout& l = point.layout;
  const bool fsdp = is_fsdp(l.dp_sharding);

  nlohmann::ordered_json strategy = original.contains("strategy") && original["strategy"].is_object()
                                        ? original["strategy"]
                                        : nlohmann::ordered_json::object();
  strategy["name"] = std::string(name(l.dp_sharding));
  strategy["tp"] = l.tp;
  strategy["sp"] = l.sp;
  strategy["pp"] = l.pp;
  strategy["vpp"] = l.vpp;
  strategy["schedule"] = std::string(name(l.schedule));
  strategy["cp"] = l.cp;
  strategy["ep"] = l.ep;
  strategy["offload"] = std::string(name(point.offload));
  // What with_layout keeps of the scenario's overlaps, and FSDP's lack of a bucket.
  if (!l.sp) strategy.erase("tp_comm_overlap");
  if (!l.sp) strategy.erase("sp_keep_gathered");
  if (l.tp < 2) strategy.erase("tp_backward_overlap");
  if (l.dp_sharding != Strategy::zero1 && l.dp_sharding != Strategy::zero2) strategy.erase("overlap_param_gather");
  if (l.pp < 2) strategy.erase("overlap_grad_reduce");
  if (!moe_a2a_overlap_runs(l, point.recompute)) strategy.erase("moe_a2a_overlap");
  if (fsdp) strategy.erase("bucket_mb");
  out["strategy"] = strategy;

  out["training"]["micro_batch"] = point.micro_batch;
  out["training"]["grad_accum"] = point.grad_accum;
  out["training"]["recompute"] = std::string(name(point.recompute));
  out["hardware"]["gpus"] = gpus;
  out["hardware"].erase("nodes");

  const std::filesystem::path dir = std::filesystem::path(original_file).parent_path();
  if (out.contains("model")) absolute_path(out["model"], "hf_config", dir);
  absolute_path(out["hardware"], "calibration", dir);
  const std::string base_name = original.contains("name") && original["name"].is_string()
                                    ? original["name"].get<std::string>()
                                    : std::filesystem::path(original_file).stem().string();
  out["name"] = base_name + " (plan: " + point.describe() + ")";
  return out;
}

}  // namespace stepcast
