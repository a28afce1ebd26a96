#include "topologies/kernel_calibration.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace stepcast {

namespace {

/// CPU or GPU cost of one launch or op, s: between 1 ns and 1 s.
constexpr double kMinOp_s = 1e-9, kMaxOp_s = 1.0;

void parse_gemm(JsonObject& obj, KernelCalibration& k) {
  for (const std::string& key : obj.keys()) {
    Dtype d;
    try {
      d = parse_dtype(key);
    } catch (const std::invalid_argument& e) {
      throw obj.error(key, e.what());
    }
    JsonObject g = obj.object(key);
    CalibratedGemm c;
    c.ceiling_tflops = g.number("ceiling_tflops", limits::kMinPeakTflops, limits::kMaxPeakTflops);
    c.best_measured_tflops = g.number("best_measured_tflops", limits::kMinPeakTflops, limits::kMaxMeasuredTflops);
    c.wave_rms_rel_residual = g.non_negative("wave_rms_rel_residual", limits::kMaxFitResidual);
    c.points = g.int32("points", 1);
    g.finish();
    k.gemm[d] = c;
  }
  obj.finish();
}

CalibratedAttentionCurve parse_curve(JsonObject& o) {
  CalibratedAttentionCurve c;
  c.kernel = o.string("kernel");
  if (c.kernel.empty()) throw o.error("kernel", "expected the attention kernel's name");
  c.head_dim = o.integer("head_dim", 16, 512);
  c.causal = o.boolean("causal");
  c.backward = o.choice("pass", {"forward", "backward"}) == "backward";
  JsonObject points = o.object("tflops_by_seq");
  for (const std::string& key : points.keys()) {
    char* end = nullptr;
    const double seq = std::strtod(key.c_str(), &end);
    if (end == key.c_str() || *end != '\0' || !(seq >= 1) || seq > static_cast<double>(limits::kMaxSeqLen))
      throw points.error(key, "expected a sequence length as the key");
    c.tflops_by_seq.emplace_back(seq, points.number(key, limits::kMinPeakTflops, limits::kMaxPeakTflops));
  }
  points.finish();
  if (c.tflops_by_seq.empty()) throw o.error("tflops_by_seq", "expected at least one point");
  std::sort(c.tflops_by_seq.begin(), c.tflops_by_seq.end());
  c.rms_rel_residual = o.non_negative("rms_rel_residual", limits::kMaxFitResidual);
  c.points = o.int32("points", 1);
  c.source = o.string("source");
  o.finish();
  return c;
}

void parse_memory(JsonObject& obj, KernelCalibration& k) {
  k.memory_efficiency = obj.optional_number("efficiency", limits::kMinEfficiency, limits::kMaxMeasuredFraction);
  if (auto ops = obj.optional_array("by_op")) {
    for (std::size_t i = 0; i < ops->size(); ++i) {
      JsonObject o = ops->object(i);
      CalibratedMemoryOp m;
      m.op = o.choice("op", {"copy", "add", "layernorm", "rmsnorm", "softmax", "cross_entropy", "adamw"});
      m.profile = o.choice("profile", {"eager", "compiled"});
      m.GBps = o.number("GBps", limits::kMinBandwidth_GBps, limits::kMaxBandwidth_GBps);
      m.fraction_of_datasheet = o.number("fraction_of_datasheet", 0, limits::kMaxMeasuredFraction);
      m.points = o.int32("points", 1);
      o.finish();
      k.memory_ops.push_back(m);
    }
  }
  obj.finish();
}

void parse_launch(JsonObject& obj, KernelCalibration& k) {
  k.launch_s = obj.optional_number("launch_s", kMinOp_s, kMaxOp_s);
  k.graph_launch_s = obj.optional_number("graph_launch_s", kMinOp_s, kMaxOp_s);
  k.eager_forward_op_s = obj.optional_number("eager_forward_op_s", kMinOp_s, kMaxOp_s);
  k.eager_backward_op_s = obj.optional_number("eager_backward_op_s", kMinOp_s, kMaxOp_s);
  obj.finish();
}

void parse_overlap(JsonObject& obj, KernelCalibration& k) {
  // A slowdown is a fraction of throughput lost: in [0, 1).
  k.compute_slowdown = obj.optional_number("compute_slowdown", 0, 0.99);
  k.collective_slowdown = obj.optional_number("collective_slowdown", 0, 0.99);
  k.overlap_points = obj.int32("points", 1);
  obj.finish();
}

}  // namespace

KernelCalibration parse_kernel_calibration(JsonObject& obj) {
  KernelCalibration k;
  k.sm_count = obj.optional_integer("sm_count", 1, limits::kMaxSmCount);
  if (auto g = obj.optional_object("gemm")) parse_gemm(*g, k);
  if (auto a = obj.optional_array("attention")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      JsonObject o = a->object(i);
      k.attention.push_back(parse_curve(o));
    }
  }
  if (auto m = obj.optional_object("memory_bound")) parse_memory(*m, k);
  if (auto l = obj.optional_object("launch")) parse_launch(*l, k);
  if (auto o = obj.optional_object("overlap")) parse_overlap(*o, k);
  obj.finish();
  return k;
}

nlohmann::ordered_json kernel_calibration_document(const KernelCalibration& k) {
  using J = nlohmann::ordered_json;
  J doc = J::object();
  if (k.sm_count) doc["sm_count"] = *k.sm_count;
  if (!k.gemm.empty()) {
    J g = J::object();
    for (const auto& [dtype, c] : k.gemm)
      g[std::string(name(dtype))] = J{{"ceiling_tflops", c.ceiling_tflops},
                                      {"best_measured_tflops", c.best_measured_tflops},
                                      {"wave_rms_rel_residual", c.wave_rms_rel_residual},
                                      {"points", c.points}};
    doc["gemm"] = std::move(g);
  }
  if (!k.attention.empty()) {
    J a = J::array();
    for (const CalibratedAttentionCurve& c : k.attention) {
      J points = J::object();
      for (const auto& [seq, tf] : c.tflops_by_seq) points[J(static_cast<std::int64_t>(seq)).dump()] = tf;
      a.push_back(J{{"kernel", c.kernel},
                    {"head_dim", c.head_dim},
                    {"causal", c.causal},
                    {"pass", c.backward ? "backward" : "forward"},
                    {"tflops_by_seq", std::move(points)},
                    {"rms_rel_residual", c.rms_rel_residual},
                    {"points", c.points},
                    {"source", c.source}});
    }
    doc["attention"] = std::move(a);
  }
  if (k.memory_efficiency || !k.memory_ops.empty()) {
    J m = J::object();
    if (k.memory_efficiency) m["efficiency"] = *k.memory_efficiency;
    J ops = J::array();
    for (const CalibratedMemoryOp& o : k.memory_ops)
      ops.push_back(J{{"op", o.op},
                      {"profile", o.profile},
                      {"GBps", o.GBps},
                      {"fraction_of_datasheet", o.fraction_of_datasheet},
                      {"points", o.points}});
    m["by_op"] = std::move(ops);
    doc["memory_bound"] = std::move(m);
  }
  if (k.launch_s || k.graph_launch_s || k.eager_forward_op_s || k.eager_backward_op_s) {
    J l = J::object();
    if (k.launch_s) l["launch_s"] = *k.launch_s;
    if (k.graph_launch_s) l["graph_launch_s"] = *k.graph_launch_s;
    if (k.eager_forward_op_s) l["eager_forward_op_s"] = *k.eager_forward_op_s;
    if (k.eager_backward_op_s) l["eager_backward_op_s"] = *k.eager_backward_op_s;
    doc["launch"] = std::move(l);
  }
  if (k.compute_slowdown || k.collective_slowdown) {
    J o = J::object();
    if (k.compute_slowdown) o["compute_slowdown"] = *k.compute_slowdown;
    if (k.collective_slowdown) o["collective_slowdown"] = *k.collective_slowdown;
    o["points"] = k.overlap_points;
    doc["overlap"] = std::move(o);
  }
  return doc;
}

}  // namespace stepcast
