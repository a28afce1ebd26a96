/// \file
/// Tests of `stepcast fit`'s reading and fitting (calibrate/fit/fit.hpp) on synthetic raw
/// calibration files generated from known parameters (synthetic.hpp): the fits recover the
/// parameters exactly from noise-free data and within 1% under ±1% noise, failed rows are
/// left out, and bad input names the file and the JSON path.
#include "calibrate/fit/fit.hpp"
#include "calibrate/fit/synthetic.hpp"

#include "base/json_input.hpp"
#include "topologies/gpu.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

using namespace stepcast;
using namespace stepcast::testing;

namespace {

double rel(double got, double want) { return std::abs(got - want) / std::abs(want); }

/// Tolerances of the brief: noise-free data must come back to 1e-9 (the fit's own
/// round-off is far below), ±1% noise within 1%.
constexpr double kExact = 1e-9;
constexpr double kNoisy = 0.01;

FitResult fit_synthetic(const SyntheticParams& p, const FitOptions& options = {}) {
  return fit_calibration(parse_raw_text(synthetic_raw(p)), options);
}

std::string input_error_path(const nlohmann::json& doc) {
  try {
    parse_raw_text(doc);
  } catch (const InputError& e) {
    CHECK(e.file() == "synthetic.json");
    return e.json_path();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("gemm_curve_noise_free_recovers_parameters_exactly") {
  const FitResult r = fit_synthetic(SyntheticParams{});
  REQUIRE(r.hardware.gemm.count(Dtype::bf16) == 1);
  const FittedGemm& g = r.hardware.gemm.at(Dtype::bf16);
  CHECK(rel(g.max_fraction, 0.72) < kExact);
  CHECK(rel(g.half_flops, 3e9) < kExact);
  CHECK(g.rms_rel_residual < kExact);
  CHECK(g.points == static_cast<std::int64_t>(synthetic_gemm_shapes().size()));
}

TEST_CASE("gemm_curve_one_percent_noise_recovers_parameters_within_one_percent") {
  SyntheticParams p;
  p.noise = 0.01;
  const FitResult r = fit_synthetic(p);
  const FittedGemm& g = r.hardware.gemm.at(Dtype::bf16);
  MESSAGE("max_fraction " << g.max_fraction << ", half_flops " << g.half_flops << ", rms " << g.rms_rel_residual);
  CHECK(rel(g.max_fraction, 0.72) < kNoisy);
  CHECK(rel(g.half_flops, 3e9) < kNoisy);
  // Uniform noise of amplitude 1% has an RMS of 1%/sqrt(3) = 0.58%; the fit's residual is
  // of that size (two parameters absorb a little of it).
  CHECK(g.rms_rel_residual > 0.002);
  CHECK(g.rms_rel_residual < 0.01);
}

TEST_CASE("gemm_curve_is_a_least_squares_minimum_of_relative_residuals") {
  // With ±10% noise the linearised start (1/eff against 1/F) is not the nonlinear optimum;
  // after Levenberg-Marquardt, moving either parameter either way raises the RMS residual.
  Noise noise(0.10, 11);
  std::vector<GemmSample> s;
  for (const auto& [m, n, k] : synthetic_gemm_shapes()) {
    const double f = 2.0 * double(m) * double(n) * double(k);
    s.push_back({f, 0.72 * f / (f + 3e9) * noise.factor()});
  }
  const GemmCurveFit fit = fit_gemm_curve(s);
  auto rms = [&](double a, double h) {
    double sum = 0;
    for (const GemmSample& x : s) sum += std::pow(a * x.flops / (x.flops + h) / x.efficiency - 1, 2);
    return std::sqrt(sum / double(s.size()));
  };
  CHECK(rms(fit.max_fraction, fit.half_flops) == doctest::Approx(fit.rms_rel_residual).epsilon(1e-12));
  for (double d : {-1e-4, 1e-4}) {
    CHECK(rms(fit.max_fraction * (1 + d), fit.half_flops) > fit.rms_rel_residual);
    CHECK(rms(fit.max_fraction, fit.half_flops * (1 + 10 * d)) > fit.rms_rel_residual);
  }
}

TEST_CASE("gemm_curve_on_saturated_data_gives_a_small_half_size") {
  // Every GEMM at the plateau: no rise to fit, the half size goes far below the data and
  // max_fraction is the plateau.
  const GemmCurveFit fit = fit_gemm_curve({{1e11, 0.70}, {1e12, 0.70}, {1e13, 0.70}});
  CHECK(rel(fit.max_fraction, 0.70) < 1e-6);
  CHECK(fit.half_flops < 1e6);
}

TEST_CASE("gemm_curve_needs_two_distinct_sizes") {
  CHECK_THROWS_AS(fit_gemm_curve({{1e9, 0.5}, {1e9, 0.51}}), FitError);
  CHECK_THROWS_AS(fit_gemm_curve({{1e9, 0.5}, {-1, 0.5}}), FitError);
}

TEST_CASE("alpha_beta_noise_free_recovers_parameters_exactly") {
  const FitResult r = fit_synthetic(SyntheticParams{});
  REQUIRE(r.hardware.collectives.size() == 1);
  const FittedCollective& c = r.hardware.collectives[0];
  CHECK(c.collective == Collective::all_reduce);
  CHECK(c.ranks == 8);
  CHECK(c.nodes == 1);
  CHECK(c.points == 28);  // 8 B .. 1 GiB, powers of two
  CHECK(rel(c.latency_us, 12.0) < kExact);
  CHECK(rel(c.algbw_GBps, 180.0) < kExact);
  CHECK(rel(c.busbw_GBps, 180.0 * 2 * 7 / 8) < kExact);
  CHECK(c.rms_rel_residual < kExact);
}

TEST_CASE("alpha_beta_one_percent_noise_recovers_parameters_within_one_percent") {
  SyntheticParams p;
  p.noise = 0.01;
  const FittedCollective c = fit_synthetic(p).hardware.collectives.at(0);
  MESSAGE("latency " << c.latency_us << " us, algbw " << c.algbw_GBps << " GB/s");
  CHECK(rel(c.latency_us, 12.0) < kNoisy);
  CHECK(rel(c.algbw_GBps, 180.0) < kNoisy);
}

TEST_CASE("alpha_beta_weights_make_small_and_large_messages_count") {
  // Unweighted least squares would let the 1 GiB point swamp the latency; with 1/t^2
  // weights a 1% error on the largest message moves the latency by well under 1%.
  std::vector<CollectiveSample> s;
  for (double b = 8; b <= double(1LL << 30); b *= 2) s.push_back({b, 12e-6 + b / 180e9});
  s.back().time_s *= 1.01;
  const AlphaBetaFit f = fit_alpha_beta(s);
  CHECK(rel(f.alpha_s, 12e-6) < 0.001);
}

TEST_CASE("alpha_beta_negative_latency_is_clamped_to_zero") {
  // Pure bandwidth with a slight superlinearity: the free fit's alpha would be < 0.
  std::vector<CollectiveSample> s;
  for (double b = 1e3; b <= 1e9; b *= 10) s.push_back({b, b / 100e9 * (b < 1e5 ? 0.9 : 1.0)});
  const AlphaBetaFit f = fit_alpha_beta(s);
  CHECK(f.alpha_clamped);
  CHECK(f.alpha_s == 0);
  CHECK(f.beta_GBps > 0);
}

TEST_CASE("alpha_beta_needs_two_distinct_sizes_and_rising_time") {
  CHECK_THROWS_AS(fit_alpha_beta({{1024, 1e-5}, {1024, 1.1e-5}}), FitError);
  CHECK_THROWS_AS(fit_alpha_beta({{1024, 2e-5}, {1e6, 1e-5}}), FitError);
}

TEST_CASE("rows_whose_check_is_not_ok_are_excluded_and_counted") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  // Absurd times on failed rows: if they were used, the fits would be far off.
  doc["gemm"][0]["check"] = "failed";
  doc["gemm"][0]["time_s_median"] = 0;
  doc["gemm"][3]["check"] = "failed: result mismatch";
  doc["gemm"][3]["time_s_median"] = 1000.0;
  doc["nccl"][5]["check"] = "failed";
  doc["nccl"][5]["time_s_median"] = 1.0;
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  CHECK(r.hardware.excluded_rows == 3);
  REQUIRE(r.excluded.size() == 3);
  CHECK(r.excluded[0].json_path == "/gemm/0");
  CHECK(r.excluded[2].json_path == "/nccl/5");
  const FittedGemm& g = r.hardware.gemm.at(Dtype::bf16);
  CHECK(g.points == static_cast<std::int64_t>(synthetic_gemm_shapes().size()) - 2);
  CHECK(rel(g.max_fraction, 0.72) < kExact);
  CHECK(rel(g.half_flops, 3e9) < kExact);
  const FittedCollective& c = r.hardware.collectives.at(0);
  CHECK(c.points == 27);
  CHECK(rel(c.latency_us, 12.0) < kExact);
  CHECK(rel(c.algbw_GBps, 180.0) < kExact);
}

TEST_CASE("gemm_torch_rows_join_the_gemm_fit_of_their_dtype_and_must_name_their_library") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  nlohmann::json row = doc["gemm"][0];
  row["library"] = "torch._scaled_mm";
  doc["gemm_torch"] = nlohmann::json::array({row});
  const RawCalibration raw = parse_raw_text(doc);
  REQUIRE(raw.gemm.size() == doc["gemm"].size() + 1);
  CHECK(raw.gemm.back().json_path == "/gemm_torch/0");
  CHECK(raw.gemm.back().time_s_median == raw.gemm.front().time_s_median);
  // A gemm_torch row without its library, or with another, is bad input at its path.
  doc["gemm_torch"][0].erase("library");
  CHECK(input_error_path(doc) == "/gemm_torch/0/library");
  doc["gemm_torch"][0]["library"] = "torch.mm";
  CHECK(input_error_path(doc) == "/gemm_torch/0/library");
}

TEST_CASE("ok_rows_need_a_positive_time_and_iterations") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][2]["time_s_median"] = 0;
  CHECK(input_error_path(doc) == "/gemm/2/time_s_median");
  doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][2]["iterations"] = 0;
  CHECK(input_error_path(doc) == "/nccl/2/iterations");
}

TEST_CASE("skipped_rows_may_carry_zeros_and_nulls") {
  // As calibrate/bench writes a GEMM it could not run: no iterations, zero times, and null
  // for a figure it could not compute.
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  nlohmann::json& g = doc["gemm"][1];
  g["check"] = "skipped: fp8 needs compute capability >= 8.9";
  g["iterations"] = 0;
  g["time_s_median"] = 0;
  g["tflops"] = nullptr;
  nlohmann::json& c = doc["nccl"][1];
  c["check"] = "failed";
  c["algbw_GBps"] = nullptr;
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  CHECK(r.hardware.excluded_rows == 2);
  CHECK(rel(r.hardware.gemm.at(Dtype::bf16).max_fraction, 0.72) < kExact);
  // On an ok row null stays an error.
  doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][1]["tflops"] = nullptr;
  CHECK(input_error_path(doc) == "/gemm/1/tflops");
}

TEST_CASE("memory_gbps_that_disagrees_with_bytes_over_time_is_warned_about") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["memory"][0]["GBps"] = 1500.0;  // e.g. the buffer instead of read + write
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  CHECK(rel(*r.hardware.memory.device_bw_GBps, 3000) < kExact);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("/memory/0") != std::string::npos);
}

TEST_CASE("bad_input_unknown_key_names_the_json_path") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][3]["busbw"] = 1.0;
  CHECK(input_error_path(doc) == "/nccl/3/busbw");
  doc = synthetic_raw(SyntheticParams{});
  doc["machine"]["gpus"][1]["uuid"] = "GPU-0";
  CHECK(input_error_path(doc) == "/machine/gpus/1/uuid");
  doc = synthetic_raw(SyntheticParams{});
  doc["extra"] = 1;
  CHECK(input_error_path(doc) == "/extra");
}

TEST_CASE("bad_input_wrong_format_string_names_the_json_path") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["format"] = "stepcast-calibrate-raw-v0";
  CHECK(input_error_path(doc) == "/format");
  doc.erase("format");
  CHECK(input_error_path(doc) == "/format");
}

TEST_CASE("bad_input_wrong_types_and_names_name_the_json_path") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][1]["dtype"] = "int8";
  CHECK(input_error_path(doc) == "/gemm/1/dtype");
  doc = synthetic_raw(SyntheticParams{});
  doc["memory"][0]["kind"] = "peer_to_peer";
  CHECK(input_error_path(doc) == "/memory/0/kind");
  doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][0]["collective"] = "allreduce";
  CHECK(input_error_path(doc) == "/nccl/0/collective");
  doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][0]["ranks"] = 16;  // nodes 1 x gpus_per_node 8
  CHECK(input_error_path(doc) == "/nccl/0/ranks");
  doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][0]["m"] = 1.5;
  CHECK(input_error_path(doc) == "/gemm/0/m");
}

TEST_CASE("bad_input_malformed_json_names_the_file") {
  try {
    parse_raw_calibration(JsonDoc::parse("{\"format\": ", "broken.json"));
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "broken.json");
  }
}

TEST_CASE("device_names_map_to_catalog_gpus") {
  CHECK(catalog_gpu_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm5-80gb");
  CHECK(catalog_gpu_for_device("NVIDIA H200") == "h200-sxm-141gb");
  CHECK(catalog_gpu_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb");
  CHECK(catalog_gpu_for_device("NVIDIA A100-SXM4-40GB") == "a100-sxm4-40gb");
  // Display names and keys of the catalog match as they are, in any case.
  CHECK(catalog_gpu_for_device("NVIDIA H100 PCIe") == "h100-pcie-80gb");
  CHECK(catalog_gpu_for_device("nvidia l40s") == "l40s-48gb");
  CHECK(catalog_gpu_for_device("a10-24gb") == "a10-24gb");
  CHECK_FALSE(catalog_gpu_for_device("NVIDIA H100 NVL").has_value());
  // Every mapped key is in the catalog.
  for (const char* n :
       {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "A100-SXM-80GB"})
    CHECK(find_gpu(*catalog_gpu_for_device(n)) != nullptr);
}

TEST_CASE("unknown_device_name_is_bad_input_at_its_json_path") {
  SyntheticParams p;
  p.device_name = "NVIDIA H100 NVL";
  try {
    fit_synthetic(p);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/machine/gpus/0/name");
  }
  // --gpu overrides the device name.
  FitOptions o;
  o.gpu = "h100-sxm5-80gb";
  CHECK(fit_synthetic(p, o).hardware.gpu == "h100-sxm5-80gb");
  o.gpu = "h101";
  CHECK_THROWS_AS(fit_synthetic(p, o), FitOptionError);
}

TEST_CASE("dtype_without_catalog_peak_is_bad_input") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][4]["dtype"] = "fp8";
  FitOptions o;
  o.gpu = "a100-sxm4-80gb";  // Ampere has no fp8 tensor-core path
  try {
    fit_calibration(parse_raw_text(doc), o);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/gemm/4/dtype");
  }
}

TEST_CASE("memory_device_copy_counts_read_and_write") {
  const FitResult r = fit_synthetic(SyntheticParams{});
  const FittedMemory& m = r.hardware.memory;
  REQUIRE(m.device_bw_GBps.has_value());
  CHECK(rel(*m.device_bw_GBps, 3000) < kExact);
  CHECK(rel(*m.memory_efficiency, 3000.0 / find_gpu("h100-sxm5-80gb")->memory_bw_GBps) < kExact);
  CHECK(rel(*m.h2d_GBps, 50) < kExact);
  CHECK(rel(*m.d2h_GBps, 50) < kExact);
  CHECK(r.warnings.empty());
}

TEST_CASE("collective_model_figures_come_from_one_node_of_the_catalog_box") {
  const FitResult r = fit_synthetic(SyntheticParams{});
  CHECK(r.hardware.model_box == "dgx-h100");
  const FittedCollective& c = r.hardware.collectives.at(0);
  REQUIRE(c.model_latency_us.has_value());
  REQUIRE(c.model_busbw_GBps.has_value());
  CHECK(*c.model_latency_us > 1);    // µs: an NCCL all-reduce is never below a microsecond
  CHECK(*c.model_busbw_GBps > 100);  // GB/s: NVLink 4 through NVSwitch
  CHECK_FALSE(r.model_notes.at(0).algorithm.empty());
}

TEST_CASE("collective_model_is_absent_beyond_one_node") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  for (auto& row : doc["nccl"]) {
    row["ranks"] = 16;
    row["nodes"] = 2;
  }
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  const FittedCollective& c = r.hardware.collectives.at(0);
  CHECK(c.nodes == 2);
  CHECK_FALSE(c.model_latency_us.has_value());
  CHECK_FALSE(r.model_notes.at(0).why_none.empty());
  CHECK(rel(c.busbw_GBps, 180.0 * 2 * 15 / 16) < kExact);
}

TEST_CASE("too_few_sizes_is_reported_not_fitted") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["gemm"] = nlohmann::json::array({doc["gemm"][0]});
  doc["nccl"] = nlohmann::json::array({doc["nccl"][0]});
  doc["memory"] = nlohmann::json::array();
  const FitResult r = fit_calibration(parse_raw_text(doc), {});
  CHECK(r.hardware.gemm.empty());
  CHECK(r.hardware.collectives.empty());
  CHECK_FALSE(r.hardware.memory.device_bw_GBps.has_value());
  // gemm bf16, 3 copy kinds, the all-reduce, and the kernel model's attention, memory-bound
  // kernels, launch and overlap (no rows of theirs)
  CHECK(r.not_fitted.size() == 9);
}

TEST_CASE("reports_name_the_fitted_values_with_units") {
  const FitResult r = fit_synthetic(SyntheticParams{});
  const std::string text = fit_report_text(r, "out.json");
  CHECK(text.find("0.7200") != std::string::npos);
  CHECK(text.find("half_flops (GFLOP)") != std::string::npos);
  CHECK(text.find("latency (µs)") != std::string::npos);
  CHECK(text.find("busbw (GB/s)") != std::string::npos);
  const auto j = nlohmann::json::parse(fit_report_json(r, "out.json"));
  CHECK(j.at("hardware").at("format") == kHardwareFormat);
  CHECK(j.at("output_file") == "out.json");
}

// ---- hostile measurements ------------------------------------------------------------

TEST_CASE("absurd_measurements_are_bad_input_at_their_json_path") {
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][4]["time_s_median"] = 1e300;  // a GEMM of 1e300 s
  CHECK(input_error_path(doc) == "/gemm/4/time_s_median");
  doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][4]["time_s_median"] = 1e-300;  // faster than any operation
  CHECK(input_error_path(doc) == "/gemm/4/time_s_median");
  doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][4]["time_s_min"] = -1;
  CHECK(input_error_path(doc) == "/gemm/4/time_s_min");
  doc = synthetic_raw(SyntheticParams{});
  doc["gemm"][4]["m"] = 4294967298LL;
  CHECK(input_error_path(doc) == "/gemm/4/m");
  doc = synthetic_raw(SyntheticParams{});
  doc["memory"][0]["time_s_median"] = 1e-300;
  CHECK(input_error_path(doc) == "/memory/0/time_s_median");
  doc = synthetic_raw(SyntheticParams{});
  doc["memory"][0]["GBps"] = 1e300;
  CHECK(input_error_path(doc) == "/memory/0/GBps");
  doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][3]["algbw_GBps"] = 1e300;
  CHECK(input_error_path(doc) == "/nccl/3/algbw_GBps");
  doc = synthetic_raw(SyntheticParams{});
  doc["nccl"][3]["ranks"] = 4294967304LL;  // 2^32 + 8: must not wrap to 8
  CHECK(input_error_path(doc) == "/nccl/3/ranks");
}

TEST_CASE("a_fit_outside_the_hardware_bounds_is_bad_input_naming_the_raw_file") {
  // Every copy 1e6 times slower than it could be: a bandwidth of 3 MB/s... then slower
  // still, below limits::kMinBandwidth_GBps, which the hardware reader would refuse.
  nlohmann::json doc = synthetic_raw(SyntheticParams{});
  doc["memory"][1]["time_s_median"] = 9999.0;  // 1 GiB in 2.8 h: 1e-4 GB/s
  doc["memory"][1]["GBps"] = 1e-4;
  try {
    fit_calibration(parse_raw_text(doc), {});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "synthetic.json");
    CHECK(std::string(e.what()).find("/memory/h2d_GBps") != std::string::npos);
    CHECK(std::string(e.what()).find("not physical") != std::string::npos);
  }
  // GEMMs at 100x the dense peak: the fitted curve is beyond kMaxMeasuredFraction.
  doc = synthetic_raw(SyntheticParams{});
  for (auto& g : doc["gemm"]) g["time_s_median"] = g["time_s_median"].get<double>() / 100;
  CHECK_THROWS_AS(fit_calibration(parse_raw_text(doc), {}), InputError);
}

TEST_CASE("the_hardware_file_fit_writes_always_reads_back") {
  // Over noise levels and seeds, and with parts missing: whatever fit returns, the hardware
  // reader accepts (fit checks this itself before returning; here it is checked again).
  for (double noise : {0.0, 0.01, 0.2}) {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      SyntheticParams p;
      p.noise = noise;
      p.seed = seed;
      nlohmann::json doc = synthetic_raw(p);
      if (seed == 2) doc["memory"] = nlohmann::json::array();
      if (seed == 3) doc["nccl"] = nlohmann::json::array();
      const FitResult r = fit_calibration(parse_raw_text(doc), {});
      const std::string text = hardware_json(r.hardware);
      const HardwareFile back = parse_hardware(JsonDoc::parse(text, "hw.json"));
      CHECK(back.gemm.size() == r.hardware.gemm.size());
      CHECK(back.collectives.size() == r.hardware.collectives.size());
      CHECK(hardware_json(back) == text);
    }
  }
}
