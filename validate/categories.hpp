/// \file
/// A step's GPU time by kernel category, measured and predicted. The training probe
/// (calibrate/probe/train_probe.py) profiles its steps with torch.profiler and records, per
/// step, the kernel time of each category (GEMM, attention, memory-bound, communication) and
/// the idle time, as `measured.secondary` entries of its record (gemm_time_s,
/// attention_time_s, memory_bound_time_s, communication_time_s, idle_time_s; classifier:
/// calibrate/probe/categories.py). `validate` compares each with the prediction's split
/// (Prediction::compute_by_kernel), not only the step time.
#pragma once

#include "model/flops.hpp"
#include "predict/predict.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// The categories, in the order they are reported.
inline constexpr const char* kKernelCategories[] = {"gemm", "attention", "memory_bound", "communication", "idle"};

/// A measured split of one step, seconds per step (absent: not recorded).
struct KernelCategories {
  std::optional<double> gemm_s, attention_s, memory_bound_s, communication_s, idle_s;
  bool any() const { return gemm_s || attention_s || memory_bound_s || communication_s || idle_s; }
};

/// The categories among a record's `measured.secondary` entries ({"metric": "<category>_time_s",
/// "value": seconds, ...}); other metrics are left alone. nullopt when none is there. Throws
/// std::invalid_argument for a category entry whose value is not a number >= 0.
std::optional<KernelCategories> categories_from_secondary(const nlohmann::json& secondary);

/// The peak memory per GPU among a record's `measured.secondary` entries ({"metric":
/// "gpu_memory", "value": v, "unit": "GB" or "GiB"}), in bytes (GB: 1e9); else the caching
/// allocator's peak the probe records ({"metric": "peak_memory_reserved", "unit": "bytes"}:
/// torch.cuda.max_memory_reserved, which leaves out the CUDA context as the predicted peak
/// does); null without either. Throws std::invalid_argument for a value not > 0 or another unit.
std::optional<double> memory_from_secondary(const nlohmann::json& secondary);

/// One category, measured against predicted.
struct CategoryComparison {
  std::string category;
  double measured_s = 0;
  double predicted_s = 0;
  std::optional<double> error_pct;  ///< 100 (predicted - measured) / measured; none when measured is 0
};

/// The prediction's split of one optimizer step:
///   gemm          compute_by_kernel.gemm_s
///   attention     compute_by_kernel.attention_s
///   memory_bound  compute_by_kernel.memory_s + optimizer_s (the AdamW kernels are memory-bound)
///   communication comm_busy_s (time any collective ran)
///   idle          step_time_s - (the three compute parts) - comm_exposed_s, at least 0: what the
///                 GPU does not spend in kernels (launch-bound gaps, compute_by_kernel.launch_s)
KernelCategories predicted_categories(const Prediction& p);

/// Each category the record measured, against the prediction's (order of kKernelCategories).
std::vector<CategoryComparison> compare_categories(const KernelCategories& measured, const Prediction& p);

/// Per category over many records: how many measured it and the median |error|, percent.
struct CategorySummary {
  std::string category;
  int count = 0;
  double median_abs_error_pct = 0;
};
std::vector<CategorySummary> summarize_categories(const std::vector<std::vector<CategoryComparison>>& runs);

/// LoRA from a record's extras: "lora_r<rank>_<target>_<target>..." (targets as LoraSpec
/// names them: q, k, v, o, gate, up, down), as the probe writes it. nullopt when no extra
/// names LoRA; std::invalid_argument for one that does but is malformed.
std::optional<LoraSpec> lora_from_extras(const std::vector<std::string>& extras);

}  // namespace stepcast
