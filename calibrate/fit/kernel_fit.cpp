#include "calibrate/fit/kernel_fit.hpp"

#include "calibrate/fit/fit.hpp"
#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/kernels.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace stepcast {

namespace {

constexpr const char* kOk = "ok";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A measured time: on a row checked "ok" at least limits::kMinMeasuredTime_s; on others
/// (skipped, failed) also 0 or null.
double measured_time(JsonObject& o, const std::string& key, bool ok) {
  if (!ok && o.has(key) && o.raw(key).is_null()) return 0;
  if (!ok) return o.non_negative(key, limits::kMaxMeasuredTime_s);
  return o.number(key, limits::kMinMeasuredTime_s, limits::kMaxMeasuredTime_s);
}

double measured_figure(JsonObject& o, const std::string& key, bool ok, double max) {
  if (!ok && o.has(key) && o.raw(key).is_null()) return 0;
  return o.non_negative(key, max);
}

}  // namespace

RawLaunch parse_raw_launch(JsonObject& o) {
  RawLaunch r;
  r.json_path = o.path();
  r.check = o.string("check");
  const bool ok = r.check == kOk;
  r.kind = o.choice("kind", {"launch", "graph_launch", "eager_forward_op", "eager_backward_op"});
  r.ops = o.integer("ops", 1, limits::kMaxIterations);
  r.iterations = o.integer("iterations", ok ? 1 : 0, limits::kMaxIterations);
  r.time_s_median = measured_time(o, "time_s_median", ok);
  r.time_s_per_op = measured_figure(o, "time_s_per_op", ok, limits::kMaxMeasuredTime_s);
  o.finish();
  return r;
}

double RawAttention::flops() const {
  const double b = static_cast<double>(batch), s = static_cast<double>(seq_len);
  const double fwd =
      4.0 * b * s * s * static_cast<double>(heads) * static_cast<double>(head_dim) * (causal ? 0.5 : 1.0);
  return backward ? 2.5 * fwd : fwd;
}

RawAttention parse_raw_attention(JsonObject& o) {
  RawAttention r;
  r.json_path = o.path();
  r.check = o.string("check");
  const bool ok = r.check == kOk;
  r.kernel = o.choice("kernel", {"flash2", "flash3", "cudnn", "mem_efficient", "triton", "unfused"});
  r.backend = o.string("backend");
  r.dtype = o.choice("dtype", {"bf16", "fp16", "fp8"});
  r.batch = o.integer("batch", 1, limits::kMaxMicroBatch);
  r.heads = o.integer("heads", 1, 4096);
  r.seq_len = o.integer("seq_len", 1, limits::kMaxSeqLen);
  r.head_dim = o.integer("head_dim", 16, 512);
  r.causal = o.boolean("causal");
  r.backward = o.choice("pass", {"forward", "backward"}) == "backward";
  r.iterations = o.integer("iterations", ok ? 1 : 0, limits::kMaxIterations);
  r.time_s_median = measured_time(o, "time_s_median", ok);
  r.tflops = measured_figure(o, "tflops", ok, limits::kMaxMeasuredTflops);
  o.finish();
  return r;
}

RawMemoryKernel parse_raw_memory_kernel(JsonObject& o) {
  RawMemoryKernel r;
  r.json_path = o.path();
  r.check = o.string("check");
  const bool ok = r.check == kOk;
  r.op = o.choice("op", {"copy", "add", "layernorm", "rmsnorm", "softmax", "cross_entropy", "adamw"});
  r.profile = o.choice("profile", {"eager", "compiled"});
  r.dtype = o.choice("dtype", {"fp32", "bf16", "fp16"});
  r.elements = o.integer("elements", 1, limits::kMaxMeasuredBytes);
  r.bytes = o.integer("bytes", 1, limits::kMaxMeasuredBytes);
  r.iterations = o.integer("iterations", ok ? 1 : 0, limits::kMaxIterations);
  r.time_s_median = measured_time(o, "time_s_median", ok);
  r.GBps = measured_figure(o, "GBps", ok, limits::kMaxBandwidth_GBps);
  o.finish();
  return r;
}

RawOverlap parse_raw_overlap(JsonObject& o) {
  RawOverlap r;
  r.json_path = o.path();
  r.check = o.string("check");
  const bool ok = r.check == kOk;
  r.collective = o.choice("collective", collective_names());
  r.ranks = o.integer("ranks", 2, limits::kMaxGpusPerBox);
  r.bytes = o.integer("bytes", 1, limits::kMaxMeasuredBytes);
  r.gemm_m = o.integer("gemm_m", 1, limits::kMaxGemmDim);
  r.gemm_n = o.integer("gemm_n", 1, limits::kMaxGemmDim);
  r.gemm_k = o.integer("gemm_k", 1, limits::kMaxGemmDim);
  r.dtype = o.choice("dtype", {"bf16", "fp16", "fp8", "fp32"});
  r.gemm_time_s_alone = measured_time(o, "gemm_time_s_alone", ok);
  r.gemm_time_s_beside = measured_time(o, "gemm_time_s_beside", ok);
  r.collective_time_s_alone = measured_time(o, "collective_time_s_alone", ok);
  r.collective_time_s_beside = measured_time(o, "collective_time_s_beside", ok);
  o.finish();
  return r;
}

CalibratedGemm fit_gemm_ceiling(const std::vector<GemmTiming>& rows, double elem_bytes, int sm_count,
                                double memory_GBps) {
  if (rows.empty()) throw FitError("no GEMM row to fit a ceiling to");
  double best = 0;
  for (const GemmTiming& r : rows)
    best = std::max(best, 2.0 * double(r.m) * double(r.n) * double(r.k) / r.time_s / 1e12);
  auto cost = [&](double log_c) {
    double sum = 0;
    for (const GemmTiming& r : rows) {
      const double t = gemm_time_s(r.m, r.n, r.k, 1, elem_bytes, std::exp(log_c), sm_count, memory_GBps);
      sum += r.time_s * std::pow(std::log(t / r.time_s), 2);  // weighted by the row's time
    }
    return sum;
  };
  // The model never runs faster than its ceiling, so C lies above the best row's rate;
  // 4x above it is far beyond any tile or wave loss the formula has.
  double lo = std::log(best / 1.5), hi = std::log(best * 4);
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
  double fa = cost(a), fb = cost(b);
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    if (fa <= fb) {
      hi = b, b = a, fb = fa;
      a = hi - phi * (hi - lo), fa = cost(a);
    } else {
      lo = a, a = b, fa = fb;
      b = lo + phi * (hi - lo), fb = cost(b);
    }
  }
  CalibratedGemm out;
  out.ceiling_tflops = std::exp(0.5 * (lo + hi));
  out.best_measured_tflops = best;
  double sq = 0;
  for (const GemmTiming& r : rows) {
    const double t = gemm_time_s(r.m, r.n, r.k, 1, elem_bytes, out.ceiling_tflops, sm_count, memory_GBps);
    sq += std::pow((t - r.time_s) / r.time_s, 2);
  }
  out.wave_rms_rel_residual = std::sqrt(sq / static_cast<double>(rows.size()));
  out.points = static_cast<std::int64_t>(rows.size());
  return out;
}

std::vector<CalibratedAttentionCurve> fit_attention_curves(const std::vector<RawAttention>& rows,
                                                           const std::string& raw_file) {
  using Key = std::tuple<std::string, std::int64_t, bool, bool>;
  std::map<Key, std::map<std::int64_t, std::vector<const RawAttention*>>> groups;
  for (const RawAttention& r : rows)
    if (r.check == kOk) groups[{r.kernel, r.head_dim, r.causal, r.backward}][r.seq_len].push_back(&r);
  std::vector<CalibratedAttentionCurve> out;
  for (const auto& [key, by_seq] : groups) {
    CalibratedAttentionCurve c;
    std::tie(c.kernel, c.head_dim, c.causal, c.backward) = key;
    double sq = 0;
    std::set<std::string> backends;
    for (const auto& [seq, list] : by_seq) {
      std::vector<double> tf;
      for (const RawAttention* r : list) {
        tf.push_back(r->flops() / r->time_s_median / 1e12);
        backends.insert(r->backend + " " + r->dtype);
      }
      const double m = median(tf);
      for (double x : tf) sq += std::pow((x - m) / m, 2);
      c.points += static_cast<std::int64_t>(tf.size());
      c.tflops_by_seq.emplace_back(static_cast<double>(seq), m);
    }
    c.rms_rel_residual = std::sqrt(sq / static_cast<double>(c.points));
    std::string how;
    for (const std::string& b : backends) how += (how.empty() ? "" : ", ") + b;
    c.source = fmt::format("measured ({}), median TFLOP/s per sequence length, flash-attention FLOP convention: {}",
                           how, raw_file);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CalibratedMemoryOp> fit_memory_ops(const std::vector<RawMemoryKernel>& rows, double datasheet_GBps) {
  std::map<std::pair<std::string, std::string>, std::int64_t> largest;
  for (const RawMemoryKernel& r : rows)
    if (r.check == kOk) {
      auto& l = largest[{r.op, r.profile}];
      l = std::max(l, r.bytes);
    }
  std::vector<CalibratedMemoryOp> out;
  for (const auto& [key, bytes] : largest) {
    std::vector<double> bw;
    for (const RawMemoryKernel& r : rows)
      if (r.check == kOk && r.op == key.first && r.profile == key.second && r.bytes == bytes)
        bw.push_back(static_cast<double>(r.bytes) / r.time_s_median / 1e9);
    CalibratedMemoryOp m;
    m.op = key.first;
    m.profile = key.second;
    m.GBps = median(bw);
    m.fraction_of_datasheet = m.GBps / datasheet_GBps;
    m.points = static_cast<std::int64_t>(bw.size());
    out.push_back(m);
  }
  return out;
}

std::optional<double> kernel_memory_efficiency(const std::vector<CalibratedMemoryOp>& ops) {
  std::vector<double> f;
  for (const CalibratedMemoryOp& o : ops)
    if (o.op != "copy") f.push_back(o.fraction_of_datasheet);
  if (f.empty()) return std::nullopt;
  return median(f);
}

void fit_launch(const std::vector<RawLaunch>& rows, KernelCalibration& k) {
  std::map<std::string, std::vector<double>> per_op;
  for (const RawLaunch& r : rows)
    if (r.check == kOk) per_op[r.kind].push_back(r.time_s_median / static_cast<double>(r.ops));
  auto take = [&](const char* kind, std::optional<double>& into) {
    if (auto it = per_op.find(kind); it != per_op.end()) into = median(it->second);
  };
  take("launch", k.launch_s);
  take("graph_launch", k.graph_launch_s);
  take("eager_forward_op", k.eager_forward_op_s);
  take("eager_backward_op", k.eager_backward_op_s);
}

void fit_overlap(const std::vector<RawOverlap>& rows, KernelCalibration& k) {
  std::vector<double> compute, collective;
  for (const RawOverlap& r : rows) {
    if (r.check != kOk) continue;
    compute.push_back(std::max(0.0, 1.0 - r.gemm_time_s_alone / r.gemm_time_s_beside));
    collective.push_back(std::max(0.0, 1.0 - r.collective_time_s_alone / r.collective_time_s_beside));
  }
  if (compute.empty()) return;
  // A slowdown is below 1 (the hardware file's bound): 0.99 is "stopped", as measured.
  k.compute_slowdown = std::min(0.99, median(compute));
  k.collective_slowdown = std::min(0.99, median(collective));
  k.overlap_points = static_cast<std::int64_t>(compute.size());
}

std::string kernel_model_report_text(const KernelCalibration& k) {
  if (k.empty()) return "";
  std::string out = "\nKernel model (the hardware file's kernel_model; -> the rate it sets)\n";
  if (k.sm_count) out += fmt::format("  SMs: {} -> sm_count\n", *k.sm_count);
  for (const auto& [dtype, g] : k.gemm)
    out += fmt::format(
        "  GEMM {}: ceiling {:.1f} TFLOP/s (best row {:.1f}), tile/wave model RMS residual {:.2f}% "
        "over {} rows -> gemm_ceiling_tflops\n",
        name(dtype), g.ceiling_tflops, g.best_measured_tflops, 100 * g.wave_rms_rel_residual, g.points);
  for (const CalibratedAttentionCurve& c : k.attention) {
    std::string points;
    for (const auto& [seq, tf] : c.tflops_by_seq) points += fmt::format(" {:.0f}:{:.0f}", seq, tf);
    out += fmt::format("  attention {} d={} {} {}: TFLOP/s by seq{} (spread {:.2f}%) -> attention curves\n", c.kernel,
                       c.head_dim, c.causal ? "causal" : "full", c.backward ? "backward" : "forward", points,
                       100 * c.rms_rel_residual);
  }
  for (const CalibratedMemoryOp& m : k.memory_ops)
    out += fmt::format("  memory-bound {} ({}): {:.0f} GB/s, {:.1f}% of datasheet\n", m.op, m.profile, m.GBps,
                       100 * m.fraction_of_datasheet);
  if (k.memory_efficiency)
    out += fmt::format("  memory-bound efficiency (median, copies left out): {:.1f}% -> memory_efficiency\n",
                       100 * *k.memory_efficiency);
  auto us = [&](const char* what, const std::optional<double>& v, const char* field) {
    if (v) out += fmt::format("  {}: {:.2f} µs{}\n", what, 1e6 * *v, field);
  };
  us("launch", k.launch_s, " -> launch_s");
  us("CUDA-graph replay per kernel", k.graph_launch_s, " (informational)");
  us("eager op forward", k.eager_forward_op_s, " -> eager_forward_op_s");
  us("eager op backward", k.eager_backward_op_s, " -> eager_backward_op_s");
  if (k.compute_slowdown)
    out += fmt::format(
        "  beside an all-reduce: GEMM {:.1f}% slower -> compute slowdown while NCCL runs; "
        "all-reduce {:.1f}% slower (informational); {} rows\n",
        100 * *k.compute_slowdown, 100 * k.collective_slowdown.value_or(0), k.overlap_points);
  return out;
}

}  // namespace stepcast
