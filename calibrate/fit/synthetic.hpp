/// \file
/// Synthetic raw calibration files for the tests of calibrate/fit: GEMM times, copies and
/// collectives generated from known parameters, optionally with multiplicative noise from a
/// fixed-seed generator. Test-only; nothing here is a measurement.
#pragma once

#include "calibrate/fit/fit.hpp"
#include "base/json_input.hpp"
#include "model/collective.hpp"
#include "topologies/gpu.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <string>

namespace stepcast::testing {

/// Multiplicative noise factors 1 + u, u uniform in [-amplitude, amplitude). The uniform
/// draw is built from the 53 high bits of std::mt19937_64 (whose sequence the C++ standard
/// fixes), not from std::uniform_real_distribution (whose algorithm it leaves open), so the
/// values are the same with every standard library.
class Noise {
 public:
  Noise(double amplitude, std::uint64_t seed) : amplitude_(amplitude), engine_(seed) {}
  double factor() {
    const double unit = static_cast<double>(engine_() >> 11) * 0x1p-53;  // [0, 1)
    return 1.0 + amplitude_ * (2.0 * unit - 1.0);
  }

 private:
  double amplitude_;
  std::mt19937_64 engine_;
};

/// The parameters a synthetic file is generated from (the brief's test values).
struct SyntheticParams {
  std::string device_name = "NVIDIA H100 80GB HBM3";  ///< maps to h100-sxm5-80gb
  std::string catalog_gpu = "h100-sxm5-80gb";         ///< whose bf16 peak defines eff
  double max_fraction = 0.72;
  double half_flops = 3e9;
  double alpha_s = 12e-6;
  double beta_GBps = 180;
  int ranks = 8;
  double noise = 0;  ///< amplitude of the multiplicative noise on times (0.01 = ±1%)
  std::uint64_t seed = 20240601;
};

/// GEMM shapes (m, n, k): for each edge e = 128, 256, .., 16384 the shapes (e, e, e),
/// (e, 2e, e) and (2e, 2e, e), so F = 2mnk doubles from 2*128^3 ≈ 4.2e6 to 2*16384^3 ≈ 8.8e12
/// FLOP: 22 sizes, about 7 of them far below half_flops = 3e9 (they pin max_fraction /
/// half_flops) and 8 far above (they pin max_fraction). With ±1% uniform noise on the
/// times, over 2000 seeds the 99th percentile of the relative error is 0.46% on
/// max_fraction and 0.74% on half_flops (13 shapes, one aspect ratio fewer: 1.0%).
inline std::vector<std::array<std::int64_t, 3>> synthetic_gemm_shapes() {
  std::vector<std::array<std::int64_t, 3>> shapes;
  for (std::int64_t edge = 128; edge <= 16384; edge *= 2) {
    shapes.push_back({edge, edge, edge});
    if (edge == 16384) break;
    shapes.push_back({edge, 2 * edge, edge});
    shapes.push_back({2 * edge, 2 * edge, edge});
  }
  return shapes;
}

inline nlohmann::json synthetic_machine(const std::string& device_name) {
  nlohmann::json gpus = nlohmann::json::array();
  for (int i = 0; i < 8; ++i)
    gpus.push_back({{"index", i},
                    {"name", device_name},
                    {"sm_count", 132},
                    {"memory_bytes", 85520809984LL},
                    {"compute_capability", "9.0"}});
  return {{"hostname", "synthetic"},
          {"date_utc", "2000-01-01T00:00:00Z"},
          {"gpus", gpus},
          {"driver_version", "synthetic"},
          {"cuda_runtime_version", "synthetic"},
          {"nccl_version", "synthetic"},
          {"nvidia_smi_topo", ""},
          {"nvidia_smi_list", ""},
          {"nics", nlohmann::json::array()},
          {"notes", {"SYNTHETIC test data generated from known parameters; not a measurement"}}};
}

/// A raw calibration document: bf16 GEMMs on synthetic_gemm_shapes(), one device copy of
/// 1 GiB at 3000 GB/s (read + write), host copies at 50 GB/s, and an all-reduce over `ranks` GPUs of one
/// node at every power of two from 8 B to 1 GiB.
inline nlohmann::json synthetic_raw(const SyntheticParams& p) {
  const GpuSpec* gpu = find_gpu(p.catalog_gpu);
  if (!gpu) throw std::logic_error("synthetic_raw: unknown GPU " + p.catalog_gpu);
  Noise noise(p.noise, p.seed);
  nlohmann::json gemm = nlohmann::json::array();
  for (const auto& [m, n, k] : synthetic_gemm_shapes()) {
    const double flops = 2.0 * double(m) * double(n) * double(k);
    const double eff = p.max_fraction * flops / (flops + p.half_flops);
    const double t = flops / (eff * gpu->peak(Dtype::bf16) * 1e12) * noise.factor();
    gemm.push_back({{"name", "square"},
                    {"dtype", "bf16"},
                    {"m", m},
                    {"n", n},
                    {"k", k},
                    {"iterations", 20},
                    {"time_s_median", t},
                    {"time_s_min", t},
                    {"time_s_max", t},
                    {"tflops", flops / t / 1e12},
                    {"check", "ok"}});
  }
  // Copies of a 1 GiB buffer; a device copy counts read + write, 2 GiB (as the benchmark).
  const double gib = double(1LL << 30);
  nlohmann::json memory = {{{"kind", "device_to_device"},
                            {"bytes", 2LL << 30},
                            {"iterations", 20},
                            {"time_s_median", 2 * gib / 3000e9},
                            {"GBps", 3000.0}},
                           {{"kind", "host_to_device"},
                            {"bytes", 1LL << 30},
                            {"iterations", 20},
                            {"time_s_median", gib / 50e9},
                            {"GBps", 50.0}},
                           {{"kind", "device_to_host"},
                            {"bytes", 1LL << 30},
                            {"iterations", 20},
                            {"time_s_median", gib / 50e9},
                            {"GBps", 50.0}}};
  nlohmann::json nccl = nlohmann::json::array();
  for (std::int64_t bytes = 8; bytes <= (1LL << 30); bytes *= 2) {
    const double t = (p.alpha_s + double(bytes) / (p.beta_GBps * 1e9)) * noise.factor();
    const double algbw = double(bytes) / t / 1e9;
    nccl.push_back({{"collective", "all_reduce"},
                    {"ranks", p.ranks},
                    {"nodes", 1},
                    {"gpus_per_node", p.ranks},
                    {"bytes", bytes},
                    {"dtype", "float"},
                    {"iterations", 20},
                    {"time_s_median", t},
                    {"time_s_min", t},
                    {"algbw_GBps", algbw},
                    {"busbw_GBps", algbw * bus_bandwidth_factor(Collective::all_reduce, p.ranks)},
                    {"nccl_algo", "auto"},
                    {"nccl_proto", "auto"},
                    {"check", "ok"}});
  }
  return {{"format", kRawCalibrationFormat},
          {"machine", synthetic_machine(p.device_name)},
          {"gemm", gemm},
          {"memory", memory},
          {"nccl", nccl}};
}

inline RawCalibration parse_raw_text(const nlohmann::json& doc, const std::string& name = "synthetic.json") {
  return parse_raw_calibration(JsonDoc::parse(doc.dump(), name));
}

}  // namespace stepcast::testing
