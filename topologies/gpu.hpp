/// \file
/// GPU specifications as data (topologies/catalog/gpus.json), each entry citing its
/// datasheet. Peaks are dense (no 2:4 sparsity) tensor-core figures unless noted.
#pragma once

#include "base/types.hpp"

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
class JsonObject;

struct GpuSpec {
  std::string name;          ///< catalog key, as in measured-run records: "a100-sxm4-80gb"
  std::string display_name;  ///< "NVIDIA A100-SXM4-80GB"
  GpuArch arch = GpuArch::ampere;
  int sm_count = 0;  ///< streaming multiprocessors (SMs), from the architecture whitepaper/datasheet
  /// CUDA compute capability x 10 (B200: sm_100 -> 100; RTX 5090: sm_120 -> 120), where the
  /// generation's parts differ in it; 0 when not stated (optional key "sm_arch").
  int sm_arch = 0;
  std::map<Dtype, double> peak_tflops;  ///< dense peak per dtype, TFLOP/s (1e12 FLOP/s); absent = unsupported
  /// HBM/GDDR capacity, bytes. The JSON gives "memory_GiB": NVIDIA's on-board "80GB" is
  /// binary (an A100-SXM4-80GB shows 81920 MiB in nvidia-smi), so 80 -> 80 x 2^30 B.
  double memory_bytes = 0;
  double memory_bw_GBps = 0;        ///< memory bandwidth, GB/s
  int nvlink_gen = 0;               ///< 0 when the GPU has no NVLink
  int nvlink_links = 0;             ///< NVLink links per GPU
  double nvlink_GBps_per_link = 0;  ///< per link, per direction, GB/s (datasheet line rate)
  int pcie_gen = 0;                 ///< host interface generation (3, 4, 5)
  int pcie_lanes = 16;
  double tdp_w = 0;    ///< board power, W (informational)
  std::string source;  ///< datasheet(s)
  /// Best achievable dense matmul per dtype, TFLOP/s: the "maximum achievable matmul
  /// FLOPS" (MAMF) of a brute-force shape search, not the datasheet peak. Absent where no
  /// measurement was published; the compute model then takes its documented default.
  std::map<Dtype, double> gemm_ceiling_tflops;
  std::string gemm_ceiling_source;  ///< where the ceilings come from (empty if none)

  /// Peak for a dtype; throws std::invalid_argument if the GPU has no such tensor core path.
  double peak(Dtype d) const;
  bool supports(Dtype d) const { return peak_tflops.count(d) != 0; }
  bool operator==(const GpuSpec&) const = default;
};

/// Reads one catalog entry or an inline GPU in a scenario; strict (unknown keys are errors).
/// Keys: name, display_name, arch, sm_count (integer >= 1), optional sm_arch, peak_tflops {fp32 required;
/// tf32/fp16/bf16/fp8 where the architecture has that tensor-core path}, memory_GiB,
/// memory_bw_GBps, nvlink_gen, nvlink_links, nvlink_GBps_per_link (all three 0 or all > 0),
/// pcie_gen, pcie_lanes, optional tdp_w, source, optional gemm_ceiling_tflops {dtype: TFLOP/s,
/// each <= that dtype's peak} with gemm_ceiling_source (both or neither).
GpuSpec parse_gpu(JsonObject& obj);

/// The GPU catalog, loaded once from topologies/catalog/gpus.json under data_dir(), then the
/// GPUs added by add_gpus and add_inline_gpu (base/catalog_store.hpp: entries never move).
const std::deque<GpuSpec>& gpu_catalog();
/// By catalog name (case-insensitive); nullptr if unknown.
const GpuSpec* find_gpu(const std::string& name);
/// Adds the GPUs of a user catalog file ({"gpus": [...]}, the format of gpus.json) that the
/// front end read; a name already in the catalog is an InputError naming the file and the
/// entry. All or nothing.
void add_gpus(const JsonDoc& doc);
/// Adds a GPU given inline in a scenario and returns the catalog's entry; throws
/// std::invalid_argument when a different GPU has that name.
const GpuSpec& add_inline_gpu(const GpuSpec& gpu);

}  // namespace stepcast
