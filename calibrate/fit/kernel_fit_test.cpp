/// \file
/// Tests of the kernel model's fits (calibrate/fit/kernel_fit.hpp) on synthetic rows made
/// from known parameters with the kernel model's own formulas: the fits give the parameters
/// back (exactly without noise, within 1% under ±1% noise), rows not checked "ok" are left
/// out, and the section reads back from the hardware file.
#include "calibrate/fit/kernel_fit.hpp"
#include "calibrate/fit/fit.hpp"
#include "calibrate/fit/synthetic.hpp"

#include "base/json_input.hpp"
#include "model/kernels.hpp"
#include "topologies/hardware_file.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace stepcast;
using namespace stepcast::testing;

namespace {

double rel(double got, double want) { return std::abs(got - want) / std::abs(want); }

constexpr double kCeiling = 700;  // TFLOP/s, the known bf16 ceiling
constexpr int kSms = 132;         // H100 SXM5
constexpr double kBw = 2800;      // GB/s achieved

/// A wave sweep: n = 1024 (8 tiles of 128), m stepping by one tile row across 1, 2 and 3
/// full waves of 132 SMs, and a few large squares.
std::vector<GemmTiming> wave_sweep(double ceiling, double noise = 0) {
  Noise rng(noise, 7);
  std::vector<GemmTiming> rows;
  for (std::int64_t m = 128; m <= 128 * 60; m += 256) rows.push_back({m, 1024, 4096, 0});
  for (std::int64_t e : {4096, 8192, 12288}) rows.push_back({e, e, e, 0});
  for (GemmTiming& r : rows)
    r.time_s = gemm_time_s(r.m, r.n, r.k, 1, 2, ceiling, kSms, kBw) * (noise > 0 ? rng.factor() : 1.0);
  return rows;
}

RawAttention attention_row(std::int64_t seq, bool causal, bool backward, double tflops, const char* check = "ok") {
  RawAttention r;
  r.kernel = "flash2";
  r.backend = "sdpa:flash";
  r.dtype = "bf16";
  r.batch = 4;
  r.heads = 16;
  r.seq_len = seq;
  r.head_dim = 128;
  r.causal = causal;
  r.backward = backward;
  r.check = check;
  r.time_s_median = r.flops() / (tflops * 1e12);
  return r;
}

}  // namespace

TEST_CASE("fit_gemm_ceiling: a wave sweep timed by gemm_time_s at a known ceiling gives the ceiling back") {
  const CalibratedGemm f = fit_gemm_ceiling(wave_sweep(kCeiling), 2, kSms, kBw);
  CHECK(rel(f.ceiling_tflops, kCeiling) < 1e-9);
  CHECK(f.wave_rms_rel_residual < 1e-9);
  CHECK(f.points == static_cast<std::int64_t>(wave_sweep(kCeiling).size()));
  // Partial last waves keep every row below the ceiling: the best row is at most the ceiling.
  CHECK(f.best_measured_tflops <= kCeiling * (1 + 1e-12));
}

TEST_CASE("fit_gemm_ceiling: under ±1% noise the ceiling comes back within 1% and the residual is about 1%") {
  const CalibratedGemm f = fit_gemm_ceiling(wave_sweep(kCeiling, 0.01), 2, kSms, kBw);
  CHECK(rel(f.ceiling_tflops, kCeiling) < 0.01);
  CHECK(f.wave_rms_rel_residual < 0.01);
  CHECK(f.wave_rms_rel_residual > 0.001);
}

TEST_CASE("fit_gemm_ceiling: tiny launch-bound GEMMs barely move the ceiling (rows weigh by their time)") {
  std::vector<GemmTiming> rows = wave_sweep(kCeiling);
  // Ten 256 x 256 x 256 GEMMs at a launch-bound 8 µs each: 4 TFLOP/s, far below the model.
  for (int i = 0; i < 10; ++i) rows.push_back({256, 256, 256, 8e-6});
  const CalibratedGemm f = fit_gemm_ceiling(rows, 2, kSms, kBw);
  // Within 2% (1.1% here); unweighted, their ln(8 µs / 0.77 µs)² = 5.5 each would outweigh the
  // whole sweep and pull the ceiling to the search's lower end.
  CHECK(rel(f.ceiling_tflops, kCeiling) < 0.02);
  CHECK(f.wave_rms_rel_residual > 0.3);  // the tiny rows' misfit shows in the residual
}

TEST_CASE("fit_gemm_ceiling: a sweep the wave model does not explain leaves a residual") {
  // Every row at the same rate (no wave steps at all): the model's steps show as residual.
  std::vector<GemmTiming> rows = wave_sweep(kCeiling);
  for (GemmTiming& r : rows) r.time_s = 2.0 * double(r.m) * double(r.n) * double(r.k) / (600e12);
  const CalibratedGemm f = fit_gemm_ceiling(rows, 2, kSms, kBw);
  CHECK(f.wave_rms_rel_residual > 0.05);
  CHECK_THROWS_AS(fit_gemm_ceiling({}, 2, kSms, kBw), FitError);
}

TEST_CASE("fit_attention_curves: the median TFLOP/s per sequence length, per (kernel, head, causal, pass)") {
  std::vector<RawAttention> rows;
  for (std::int64_t seq : {512, 1024, 2048}) {
    const double tf = 300 + 0.1 * static_cast<double>(seq);  // the known curve
    rows.push_back(attention_row(seq, true, false, tf * 0.99));
    rows.push_back(attention_row(seq, true, false, tf));
    rows.push_back(attention_row(seq, true, false, tf * 1.01));
    rows.push_back(attention_row(seq, true, true, 0.8 * tf));
  }
  rows.push_back(attention_row(4096, true, false, 1.0, "failed: mismatch"));  // left out
  const auto curves = fit_attention_curves(rows, "raw.json");
  REQUIRE(curves.size() == 2);
  const CalibratedAttentionCurve& fwd = curves[0].backward ? curves[1] : curves[0];
  CHECK(fwd.kernel == "flash2");
  CHECK(fwd.head_dim == 128);
  REQUIRE(fwd.tflops_by_seq.size() == 3);
  CHECK(fwd.tflops_by_seq[1].first == 1024);
  CHECK(rel(fwd.tflops_by_seq[1].second, 300 + 102.4) < 1e-12);
  CHECK(fwd.points == 9);
  // The spread: ±1% around the median at each point, RMS sqrt(2/3) %.
  CHECK(fwd.rms_rel_residual == doctest::Approx(0.01 * std::sqrt(2.0 / 3.0)).epsilon(1e-3));
  CHECK(fwd.source.find("raw.json") != std::string::npos);
}

TEST_CASE("fit_memory_ops: bytes over time at each op's largest size; the efficiency leaves copies out") {
  auto row = [](const char* op, std::int64_t bytes, double GBps) {
    RawMemoryKernel r;
    r.op = op;
    r.profile = "eager";
    r.dtype = "bf16";
    r.bytes = bytes;
    r.elements = bytes / 2;
    r.check = "ok";
    r.time_s_median = static_cast<double>(bytes) / (GBps * 1e9);
    return r;
  };
  const std::vector<RawMemoryKernel> rows{row("copy", 1 << 30, 3000), row("add", 1 << 20, 500),
                                          row("add", 1 << 30, 2600), row("softmax", 1 << 30, 2000),
                                          row("rmsnorm", 1 << 30, 1800)};
  const auto ops = fit_memory_ops(rows, 3350);
  REQUIRE(ops.size() == 4);
  for (const CalibratedMemoryOp& o : ops)
    if (o.op == "add") CHECK(rel(o.GBps, 2600) < 1e-12);  // the small size does not count
  const auto eff = kernel_memory_efficiency(ops);
  REQUIRE(eff);
  CHECK(rel(*eff, 2000.0 / 3350) < 1e-12);  // median of 2600, 2000, 1800
  std::vector<CalibratedMemoryOp> copies;
  for (const CalibratedMemoryOp& o : ops)
    if (o.op == "copy") copies.push_back(o);
  CHECK_FALSE(kernel_memory_efficiency(copies));
}

TEST_CASE("fit_launch and fit_overlap: medians per op, slowdowns as 1 - alone / beside") {
  std::vector<RawLaunch> launch;
  for (double t : {4e-6, 5e-6, 6e-6}) launch.push_back({"launch", 1000, 10, 1000 * t, t, "ok", ""});
  launch.push_back({"graph_launch", 1000, 10, 1000 * 1.5e-6, 1.5e-6, "ok", ""});
  launch.push_back({"eager_forward_op", 200, 10, 200 * 12e-6, 12e-6, "ok", ""});
  launch.push_back({"eager_backward_op", 100, 10, 100 * 30e-6, 30e-6, "skipped: no torch", ""});
  KernelCalibration k;
  fit_launch(launch, k);
  REQUIRE(k.launch_s);
  CHECK(rel(*k.launch_s, 5e-6) < 1e-12);
  CHECK(rel(*k.graph_launch_s, 1.5e-6) < 1e-12);
  CHECK(rel(*k.eager_forward_op_s, 12e-6) < 1e-12);
  CHECK_FALSE(k.eager_backward_op_s);  // its only row was skipped

  std::vector<RawOverlap> overlap;
  RawOverlap base;
  base.collective = "all_reduce";
  base.check = "ok";
  for (double s : {0.08, 0.10, 0.12}) {
    RawOverlap r = base;
    r.gemm_time_s_alone = 1e-3;
    r.gemm_time_s_beside = 1e-3 / (1 - s);
    r.collective_time_s_alone = 2e-3;
    r.collective_time_s_beside = 2e-3 / (1 - s / 2);
    overlap.push_back(r);
  }
  fit_overlap(overlap, k);
  CHECK(rel(*k.compute_slowdown, 0.10) < 1e-12);
  CHECK(rel(*k.collective_slowdown, 0.05) < 1e-12);
  CHECK(k.overlap_points == 3);
}

TEST_CASE("fit_calibration: the kernel sections of a raw file land in the hardware file, which reads back") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["launch"] = nlohmann::json::array({{{"kind", "launch"},
                                          {"ops", 1000},
                                          {"iterations", 10},
                                          {"time_s_median", 4.5e-3},
                                          {"time_s_per_op", 4.5e-6},
                                          {"check", "ok"}}});
  doc["attention"] = nlohmann::json::array();
  const RawAttention a = attention_row(2048, true, false, 400);
  doc["attention"].push_back({{"kernel", a.kernel},
                              {"backend", a.backend},
                              {"dtype", a.dtype},
                              {"batch", a.batch},
                              {"heads", a.heads},
                              {"seq_len", a.seq_len},
                              {"head_dim", a.head_dim},
                              {"causal", a.causal},
                              {"pass", "forward"},
                              {"iterations", 10},
                              {"time_s_median", a.time_s_median},
                              {"tflops", 400},
                              {"check", "ok"}});
  doc["memory_kernels"] = nlohmann::json::array({{{"op", "softmax"},
                                                  {"profile", "compiled"},
                                                  {"dtype", "bf16"},
                                                  {"elements", 1 << 28},
                                                  {"bytes", 1LL << 30},
                                                  {"iterations", 10},
                                                  {"time_s_median", (1LL << 30) / 2.5e12},
                                                  {"GBps", 2500},
                                                  {"check", "ok"}}});
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  const KernelCalibration& k = r.hardware.kernel_model;
  CHECK(k.sm_count == 132);
  REQUIRE(k.gemm.count(Dtype::bf16));
  CHECK(k.gemm.at(Dtype::bf16).points > 2);
  REQUIRE(k.launch_s);
  CHECK(rel(*k.launch_s, 4.5e-6) < 1e-12);
  REQUIRE(k.attention.size() == 1);
  CHECK(rel(k.attention[0].tflops_by_seq[0].second, 400) < 1e-12);
  REQUIRE(k.memory_efficiency);
  CHECK(rel(*k.memory_efficiency, 2500.0 / r.gpu->memory_bw_GBps) < 1e-9);
  CHECK_FALSE(k.compute_slowdown);  // no overlap rows: said so
  bool said = false;
  for (const NotFitted& n : r.not_fitted) said = said || n.what == "kernel_model overlap";
  CHECK(said);
  const HardwareFile back = parse_hardware(JsonDoc::parse(hardware_json(r.hardware), "hw.json"));
  CHECK(back.kernel_model.attention.size() == 1);
  CHECK(back.kernel_model.gemm.at(Dtype::bf16).ceiling_tflops ==
        doctest::Approx(k.gemm.at(Dtype::bf16).ceiling_tflops));
  CHECK(*back.kernel_model.launch_s == doctest::Approx(4.5e-6));
  CHECK(hardware_json(back) == hardware_json(r.hardware));

  doc["attention"][0]["seq"] = 1;  // a misspelt key
  try {
    parse_raw_text(doc);
    FAIL("an unknown key must be an error");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/attention/0/seq");
  }
}

TEST_CASE("kernel_model in the hardware file: strict reading, each part optional") {
  auto parse = [](const std::string& kernel_model) {
    HardwareFile hw;
    hw.gpu = "h100-sxm5-80gb";
    nlohmann::json doc = nlohmann::json::parse(hardware_json(hw));
    doc["kernel_model"] = nlohmann::json::parse(kernel_model);
    return parse_hardware(JsonDoc::parse(doc.dump(), "hw.json"));
  };
  auto error_path = [&](const std::string& kernel_model) {
    try {
      parse(kernel_model);
    } catch (const InputError& e) {
      return e.json_path();
    }
    return std::string("(no error)");
  };
  CHECK(parse(R"({"launch": {"launch_s": 3e-6}})").kernel_model.launch_s == 3e-6);
  CHECK(parse(R"({})").kernel_model.empty());
  CHECK(error_path(R"({"launch": {"launch_us": 3}})") == "/kernel_model/launch/launch_us");
  CHECK(error_path(R"({"overlap": {"compute_slowdown": 1.0, "points": 1}})") ==
        "/kernel_model/overlap/compute_slowdown");
  CHECK(error_path(R"({"gemm": {"bf17": {}}})") == "/kernel_model/gemm/bf17");
  CHECK(error_path(R"({"attention": [{"kernel": "flash2", "head_dim": 128, "causal": true, "pass": "sideways",
                     "tflops_by_seq": {"512": 1}, "rms_rel_residual": 0, "points": 1, "source": ""}]})") ==
        "/kernel_model/attention/0/pass");
  CHECK(error_path(R"({"memory_bound": {"by_op": [{"op": "gelu", "profile": "eager", "GBps": 1,
                     "fraction_of_datasheet": 0.5, "points": 1}]}})") == "/kernel_model/memory_bound/by_op/0/op");
}
