/// \file
/// `stepcast fit`: reads a raw calibration run ("stepcast-calibrate-raw-v1": cuBLAS GEMMs,
/// memory copies and nccl-tests-style collectives timed on one machine) and fits the
/// model's parameters to it:
///
///  - GEMM efficiency per dtype, eff(F) = max_fraction · F / (F + half_flops) with F = 2mnk
///    FLOPs per call and eff = achieved / catalog dense peak (model/compute.hpp), by
///    Levenberg-Marquardt least squares on relative residuals, started from the linearised
///    fit 1/eff = 1/max_fraction + (half_flops/max_fraction) · (1/F);
///  - memory: the device-to-device bandwidth of the largest copy (read + write counted, as
///    the benchmark counts its bytes), its fraction of the datasheet bandwidth, and
///    host-to-device / device-to-host;
///  - collectives: per (collective, ranks, nodes), t = alpha + bytes / beta by weighted
///    least squares with weights 1/t² (relative error, so small and large messages count
///    alike), beside the catalog model's latency and large-message busbw for the same run.
///
///  - the kernel model (kernel_fit.hpp): GEMM ceiling through tile and wave quantization,
///    attention curves, memory-bound kernels' bandwidth, launch and eager op cost, and the
///    slowdown of a GEMM beside a collective, into the hardware file's "kernel_model".
///
/// Rows whose "check" is not "ok" are left out of every fit and counted.
#pragma once

#include "calibrate/fit/kernel_fit.hpp"
#include "topologies/hardware_file.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
struct GpuSpec;

// ---- the raw calibration file ----------------------------------------------------------

struct RawGemm {
  std::string name;
  Dtype dtype = Dtype::bf16;
  std::int64_t m = 1, n = 1, k = 1;
  std::int64_t iterations = 1;
  double time_s_median = 0;  ///< seconds per call
  double time_s_min = 0;
  double time_s_max = 0;
  double tflops = 0;      ///< as the benchmark computed it (informational)
  std::string check;      ///< "ok" or why the result is not trusted
  std::string json_path;  ///< e.g. "/gemm/3" (cuBLASLt) or "/gemm_torch/0" (PyTorch), for messages
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

enum class CopyKind { device_to_device, host_to_device, device_to_host };
std::string_view name(CopyKind);

struct RawMemory {
  CopyKind kind = CopyKind::device_to_device;
  /// Bytes moved per call as the benchmark counts them: read + write (2 x the buffer) for
  /// device to device, the buffer for host copies.
  std::int64_t bytes = 0;
  std::int64_t iterations = 1;
  double time_s_median = 0;
  double GBps = 0;  ///< bytes / time_s_median / 1e9, as the benchmark computed it
  std::string json_path;
};

struct RawCollective {
  Collective collective = Collective::all_reduce;
  std::int64_t ranks = 1;
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 1;
  std::int64_t bytes = 0;  ///< nccl-tests S (whole buffer)
  std::string dtype;       ///< NCCL data type name, as the benchmark wrote it
  std::int64_t iterations = 1;
  double time_s_median = 0;  ///< seconds per call
  double time_s_min = 0;
  double algbw_GBps = 0;  ///< as the benchmark computed it (informational)
  double busbw_GBps = 0;
  std::string nccl_algo;  ///< NCCL_ALGO of the run (or what the benchmark wrote)
  std::string nccl_proto;
  std::string check;
  std::string json_path;
};

struct RawCalibration {
  Machine machine;
  std::vector<RawGemm> gemm;
  std::vector<RawMemory> memory;
  std::vector<RawCollective> nccl;
  // The kernel model's microbenchmarks (optional sections; kernel_fit.hpp).
  std::vector<RawLaunch> launch;
  std::vector<RawAttention> attention;
  std::vector<RawMemoryKernel> memory_kernels;
  std::vector<RawOverlap> overlap;
  std::string file;
};

/// Reads a raw calibration file strictly: unknown keys, a wrong "format", wrong types or
/// ranges throw InputError naming the file and the JSON path. Rows with check "ok" must
/// have iterations and a time > 0; others (skipped, failed) may carry zeros, and null for
/// their measured figures.
RawCalibration load_raw_calibration(const std::filesystem::path& path);
RawCalibration parse_raw_calibration(const JsonDoc& doc);

// ---- the fits --------------------------------------------------------------------------

/// Data that cannot support a fit (fewer than two distinct sizes, a curve that does not
/// rise with size). fit_calibration turns it into a "not fitted" entry of the report.
class FitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad option of fit_calibration (an unknown --gpu or --box, a box without that GPU);
/// the command line reports it as bad input.
class FitOptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// One measured GEMM: FLOPs per call and achieved / peak.
struct GemmSample {
  double flops = 0;
  double efficiency = 0;
};

struct GemmCurveFit {
  double max_fraction = 0;
  double half_flops = 0;
  double rms_rel_residual = 0;
  int points = 0;
  int iterations = 0;  ///< Levenberg-Marquardt iterations taken
};

/// Least-squares fit of eff(F) = max_fraction · F / (F + half_flops) on the relative
/// residuals (fitted - measured) / measured. Throws FitError with fewer than two distinct
/// sizes or non-positive data.
GemmCurveFit fit_gemm_curve(const std::vector<GemmSample>& samples);

/// One measured collective size: bytes (nccl-tests S) and seconds per call.
struct CollectiveSample {
  double bytes = 0;
  double time_s = 0;
};

struct AlphaBetaFit {
  double alpha_s = 0;    ///< latency, s
  double beta_GBps = 0;  ///< bandwidth, GB/s (1e9 B/s)
  double rms_rel_residual = 0;
  int points = 0;
  bool alpha_clamped = false;  ///< the free fit gave alpha < 0; refitted with alpha = 0
};

/// Weighted least squares of t = alpha + bytes / beta with weights 1/t² (minimises the
/// relative residuals). Throws FitError with fewer than two distinct sizes or a time that
/// does not grow with size.
AlphaBetaFit fit_alpha_beta(const std::vector<CollectiveSample>& samples);

// ---- the whole file --------------------------------------------------------------------

struct FitOptions {
  /// GPU catalog key; empty: from machine.gpus[0].name (catalog_gpu_for_device).
  std::string gpu;
  /// Box catalog key whose one-node fabric gives the model figures; empty: the first box
  /// of the catalog holding the GPU (none: no model figures).
  std::string box;
  /// Written as the hardware file's "source" ("stepcast fit <raw_name>").
  std::string raw_name;
};

/// A part of the raw file that gave no fitted value, and why.
struct NotFitted {
  std::string what;  ///< "gemm bf16", "all_reduce 8 ranks 1 node"
  std::string reason;
};

/// A row left out of the fits.
struct ExcludedRow {
  std::string json_path;
  std::string check;
};

/// Per-collective detail for the report: the model's algorithm and protocol at the
/// largest size, or why the model has no figure.
struct CollectiveModelNote {
  std::string algorithm;  ///< at the largest measured size ("" when no model figure)
  std::string protocol;
  std::string why_none;  ///< non-empty when the model has no figure for this run
  double min_bytes = 0;
  double max_bytes = 0;
};

struct FitResult {
  HardwareFile hardware;
  std::string raw_file;          ///< the raw file as named in FitOptions::raw_name
  const GpuSpec* gpu = nullptr;  ///< the catalog GPU used for peaks
  std::string gpu_mapped_from;   ///< "--gpu" or the device name it was mapped from
  std::vector<NotFitted> not_fitted;
  std::vector<ExcludedRow> excluded;
  std::vector<CollectiveModelNote> model_notes;  ///< parallel to hardware.collectives
  std::vector<GemmCurveFit> gemm_details;        ///< parallel to hardware.gemm (map order)
  std::vector<std::string> warnings;
};

/// Fits everything. Throws InputError naming the file and JSON path when the raw file cannot
/// be fitted against the catalog (a device name stepcast does not know, a dtype the catalog
/// GPU has no peak for), FitOptionError for a bad --gpu / --box. Parts without enough data
/// become NotFitted entries, not errors.
FitResult fit_calibration(const RawCalibration& raw, const FitOptions& options);

/// The catalog key for a device name as CUDA / nvidia-smi report it: an exact
/// (case-insensitive) match of a catalog key or display name, else a small table of the
/// names drivers use (see fit.cpp for the sources). nullopt when unknown.
std::optional<std::string> catalog_gpu_for_device(const std::string& device_name);

// ---- reports ---------------------------------------------------------------------------

/// The text report: machine, GEMM fits per dtype, memory, collectives measured vs model,
/// excluded rows, parts not fitted and warnings. `output_file`: where the file was written.
std::string fit_report_text(const FitResult& result, const std::string& output_file);
/// {"output_file", "hardware": {...}, "excluded": [...], "not_fitted": [...], "warnings"}.
std::string fit_report_json(const FitResult& result, const std::string& output_file);

}  // namespace stepcast
