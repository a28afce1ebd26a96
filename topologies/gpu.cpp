/// \file
/// The GPU catalog: strict parsing of one GPU description and the catalog file
/// topologies/catalog/gpus.json, loaded once.
#include "topologies/gpu.hpp"

#include "base/catalog_store.hpp"
#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

namespace {

/// Bytes in one GiB; NVIDIA's on-board memory sizes ("80GB") are binary (see parse_gpu).
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

/// Tensor-core paths each generation has (datasheets and architecture whitepapers):
/// TF32 and BF16 arrived with Ampere, FP8 with Ada and Hopper, FP4 (NVFP4) with Blackwell; AMD CDNA 3 has all of them
/// (AMD CDNA 3 architecture whitepaper: matrix cores for TF32, FP16, BF16, FP8).
bool arch_has(GpuArch arch, Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::fp16:
      return true;
    case Dtype::tf32:
    case Dtype::bf16:
      return arch != GpuArch::volta && arch != GpuArch::turing;
    case Dtype::fp8:
      return arch == GpuArch::ada || arch == GpuArch::hopper || arch == GpuArch::blackwell || arch == GpuArch::cdna3;
    case Dtype::fp4:
      return arch == GpuArch::blackwell;
  }
  return false;
}

/// Reads "peak_tflops": {"fp32": ..., "bf16": ...}; keys are dtype names.
std::map<Dtype, double> parse_peaks(JsonObject& peaks, GpuArch arch) {
  std::map<Dtype, double> out;
  for (const std::string& key : peaks.keys()) {
    Dtype d = Dtype::fp32;
    try {
      d = parse_dtype(key);
    } catch (const std::invalid_argument& e) {
      throw peaks.error(key, e.what());
    }
    if (!arch_has(arch, d))
      throw peaks.error(key, "a " + std::string(name(arch)) + " GPU has no " + std::string(name(d)) +
                                 " tensor-core path; remove this key");
    out[d] = peaks.number(key, limits::kMinPeakTflops, limits::kMaxPeakTflops);
  }
  if (!out.count(Dtype::fp32)) throw peaks.error("fp32", "missing; expected the non-tensor FP32 peak in TFLOP/s");
  peaks.finish();
  return out;
}

/// Reads the optional "gemm_ceiling_tflops" {dtype: TFLOP/s} and "gemm_ceiling_source": a
/// ceiling needs the dtype's peak and cannot exceed it.
void parse_ceilings(JsonObject& obj, GpuSpec& g) {
  const bool has_ceiling = obj.has("gemm_ceiling_tflops");
  if (has_ceiling != obj.has("gemm_ceiling_source"))
    throw obj.error(has_ceiling ? "gemm_ceiling_tflops" : "gemm_ceiling_source",
                    "gemm_ceiling_tflops and gemm_ceiling_source come together (both or neither)");
  if (!has_ceiling) return;
  JsonObject ceilings = obj.object("gemm_ceiling_tflops");
  for (const std::string& key : ceilings.keys()) {
    Dtype d = Dtype::fp32;
    try {
      d = parse_dtype(key);
    } catch (const std::invalid_argument& e) {
      throw ceilings.error(key, e.what());
    }
    auto peak = g.peak_tflops.find(d);
    if (peak == g.peak_tflops.end())
      throw ceilings.error(key, "no " + std::string(name(d)) + " peak in peak_tflops for this ceiling");
    g.gemm_ceiling_tflops[d] = ceilings.number(key, limits::kMinPeakTflops, peak->second);
  }
  ceilings.finish();
  g.gemm_ceiling_source = obj.string("gemm_ceiling_source");
  if (g.gemm_ceiling_source.empty())
    throw obj.error("gemm_ceiling_source", "expected the measurement the ceilings come from");
}

}  // namespace

double GpuSpec::peak(Dtype d) const {
  auto it = peak_tflops.find(d);
  if (it == peak_tflops.end())
    throw std::invalid_argument("GPU \"" + name + "\" has no " + std::string(stepcast::name(d)) +
                                " peak (no such tensor-core path)");
  return it->second;
}

GpuSpec parse_gpu(JsonObject& obj) {
  GpuSpec g;
  g.name = obj.string("name");
  if (g.name.empty()) throw obj.error("name", "expected a non-empty catalog name");
  g.display_name = obj.string("display_name");
  std::string arch = obj.string("arch");
  try {
    g.arch = parse_gpu_arch(arch);
  } catch (const std::invalid_argument& e) {
    throw obj.error("arch", e.what());
  }
  g.sm_count = obj.int32("sm_count", 1, limits::kMaxSmCount);
  g.sm_arch = obj.optional_int32("sm_arch", 10, 999).value_or(0);  // sm_10 (Tesla) .. three digits
  JsonObject peaks = obj.object("peak_tflops");
  g.peak_tflops = parse_peaks(peaks, g.arch);

  // Datasheet "GB" for HBM and GDDR is binary: an A100-SXM4-80GB reports 81920 MiB in
  // nvidia-smi, and CUDA sees 85,056,798,720 B (> 80e9) after its own reservations.
  g.memory_bytes = obj.positive("memory_GiB", limits::kMaxGpuMemoryGiB) * kBytesPerGiB;
  g.memory_bw_GBps = obj.number("memory_bw_GBps", limits::kMinBandwidth_GBps, limits::kMaxBandwidth_GBps);

  g.nvlink_gen = obj.int32("nvlink_gen", 0, 5);
  g.nvlink_links = obj.int32("nvlink_links", 0, limits::kMaxNvlinkLinks);
  g.nvlink_GBps_per_link = obj.non_negative("nvlink_GBps_per_link", limits::kMaxBandwidth_GBps);
  if (g.nvlink_GBps_per_link > 0 && g.nvlink_GBps_per_link < limits::kMinBandwidth_GBps)
    throw obj.error("nvlink_GBps_per_link",
                    "expected 0 (no NVLink) or a bandwidth >= "
                    "limits::kMinBandwidth_GBps (1e-3 GB/s)");
  const bool any_nvlink = g.nvlink_gen > 0 || g.nvlink_links > 0 || g.nvlink_GBps_per_link > 0;
  const bool all_nvlink = g.nvlink_gen > 0 && g.nvlink_links > 0 && g.nvlink_GBps_per_link > 0;
  if (any_nvlink && !all_nvlink)
    throw obj.error("nvlink_gen",
                    "nvlink_gen, nvlink_links and nvlink_GBps_per_link must be all 0 (no NVLink) "
                    "or all > 0");

  g.pcie_gen = obj.int32("pcie_gen", 1, 6);       // PCIe generations 1..6 exist
  g.pcie_lanes = obj.int32("pcie_lanes", 1, 16);  // a GPU has at most an x16 slot
  g.tdp_w = obj.optional_positive("tdp_w", limits::kMaxTdpW).value_or(0.0);
  g.source = obj.string("source");
  if (g.source.empty()) throw obj.error("source", "expected the datasheet(s) the numbers come from");
  parse_ceilings(obj, g);
  obj.finish();
  return g;
}

namespace {

std::deque<GpuSpec>& gpu_store() {
  static std::deque<GpuSpec> store = [] {
    std::deque<GpuSpec> out;
    catalog_store::append(JsonDoc::load(data_dir() / "topologies" / "catalog" / "gpus.json"), "gpus", parse_gpu, out,
                          "GPU");
    return out;
  }();
  return store;
}

}  // namespace

const std::deque<GpuSpec>& gpu_catalog() { return gpu_store(); }

const GpuSpec* find_gpu(const std::string& name) { return catalog_store::find(gpu_store(), name); }

void add_gpus(const JsonDoc& doc) { catalog_store::append(doc, "gpus", parse_gpu, gpu_store(), "GPU"); }

const GpuSpec& add_inline_gpu(const GpuSpec& gpu) { return catalog_store::add_inline(gpu_store(), gpu, "GPU"); }

}  // namespace stepcast
