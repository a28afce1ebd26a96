#include "validate/categories.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace stepcast {

namespace {

std::optional<double>* field(KernelCategories& k, const std::string& category) {
  if (category == "gemm") return &k.gemm_s;
  if (category == "attention") return &k.attention_s;
  if (category == "memory_bound") return &k.memory_bound_s;
  if (category == "communication") return &k.communication_s;
  if (category == "idle") return &k.idle_s;
  return nullptr;
}

}  // namespace

std::optional<KernelCategories> categories_from_secondary(const nlohmann::json& secondary) {
  if (!secondary.is_array()) return std::nullopt;
  KernelCategories k;
  const std::string suffix = "_time_s";
  for (const nlohmann::json& entry : secondary) {
    if (!entry.is_object() || !entry.contains("metric") || !entry["metric"].is_string()) continue;
    const std::string metric = entry["metric"].get<std::string>();
    if (metric.size() <= suffix.size() || metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::optional<double>* slot = field(k, metric.substr(0, metric.size() - suffix.size()));
    if (!slot) continue;
    if (!entry.contains("value") || !entry["value"].is_number() || !(entry["value"].get<double>() >= 0))
      throw std::invalid_argument("measured.secondary " + metric + ": expected a value in seconds >= 0");
    *slot = entry["value"].get<double>();
  }
  if (!k.any()) return std::nullopt;
  return k;
}

std::optional<double> memory_from_secondary(const nlohmann::json& secondary) {
  if (!secondary.is_array()) return std::nullopt;
  std::optional<double> reserved;
  for (const nlohmann::json& entry : secondary) {
    if (!entry.is_object()) continue;
    const nlohmann::json metric = entry.value("metric", nlohmann::json());
    if (metric != "gpu_memory" && metric != "peak_memory_reserved") continue;
    const std::string name = metric.get<std::string>();
    const nlohmann::json& value = entry.value("value", nlohmann::json());
    if (!value.is_number() || !(value.get<double>() > 0))
      throw std::invalid_argument("measured.secondary " + name + ": expected a value > 0");
    const nlohmann::json& unit = entry.value("unit", nlohmann::json());
    if (name == "peak_memory_reserved") {
      if (unit != "bytes")
        throw std::invalid_argument("measured.secondary peak_memory_reserved: expected the unit \"bytes\"");
      reserved = value.get<double>();
      continue;
    }
    if (unit == "GB") return value.get<double>() * 1e9;
    if (unit == "GiB") return value.get<double>() * 1073741824.0;
    throw std::invalid_argument("measured.secondary gpu_memory: expected the unit \"GB\" or \"GiB\"");
  }
  return reserved;
}

KernelCategories predicted_categories(const Prediction& p) {
  const KernelTimes& k = p.compute_by_kernel;
  KernelCategories out;
  out.gemm_s = k.gemm_s;
  out.attention_s = k.attention_s;
  out.memory_bound_s = k.memory_s + p.optimizer_s;
  out.communication_s = p.comm_busy_s;
  out.idle_s = std::max(0.0, p.step_time_s - k.gemm_s - k.attention_s - *out.memory_bound_s - p.comm_exposed_s);
  return out;
}

std::vector<CategoryComparison> compare_categories(const KernelCategories& measured, const Prediction& p) {
  KernelCategories predicted = predicted_categories(p);
  KernelCategories m = measured;
  std::vector<CategoryComparison> out;
  for (const char* category : kKernelCategories) {
    const std::optional<double>& got = *field(m, category);
    if (!got) continue;
    CategoryComparison c;
    c.category = category;
    c.measured_s = *got;
    c.predicted_s = field(predicted, category)->value_or(0);
    if (c.measured_s > 0) c.error_pct = 100 * (c.predicted_s - c.measured_s) / c.measured_s;
    out.push_back(c);
  }
  return out;
}

std::vector<CategorySummary> summarize_categories(const std::vector<std::vector<CategoryComparison>>& runs) {
  std::vector<CategorySummary> out;
  for (const char* category : kKernelCategories) {
    std::vector<double> errors;
    for (const auto& run : runs)
      for (const CategoryComparison& c : run)
        if (c.category == category && c.error_pct) errors.push_back(std::abs(*c.error_pct));
    if (errors.empty()) continue;
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    const double median = n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
    out.push_back({category, static_cast<int>(n), median});
  }
  return out;
}

std::optional<LoraSpec> lora_from_extras(const std::vector<std::string>& extras) {
  const std::string prefix = "lora_r";
  for (const std::string& e : extras) {
    if (e.rfind(prefix, 0) != 0) continue;
    const char* begin = e.c_str() + prefix.size();
    char* end = nullptr;
    errno = 0;
    const long long rank = std::strtoll(begin, &end, 10);
    if (end == begin || errno != 0 || rank < 1 || rank > (1 << 20) || *end != '_')
      throw std::invalid_argument("extra \"" + e + "\": expected lora_r<rank>_<target>_..., e.g. lora_r16_q_k_v_o");
    LoraSpec l;
    l.rank = rank;
    std::string rest = end + 1;
    std::size_t start = 0;
    while (start <= rest.size()) {
      const std::size_t stop = std::min(rest.find('_', start), rest.size());
      const std::string t = rest.substr(start, stop - start);
      const std::vector<std::string> known{"q", "k", "v", "o", "gate", "up", "down"};
      if (std::find(known.begin(), known.end(), t) == known.end())
        throw std::invalid_argument("extra \"" + e + "\": unknown LoRA target \"" + t +
                                    "\" (one of q, k, v, o, gate, up, down)");
      l.targets.push_back(t);
      start = stop + 1;
    }
    return l;
  }
  return std::nullopt;
}

}  // namespace stepcast
