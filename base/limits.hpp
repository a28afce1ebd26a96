/// \file
/// Physical sanity bounds on every input that could make the model meaningless, in one place,
/// each with the reason for it. A value outside its bound is bad input (exit 2, naming the
/// file and the JSON path), never a silent overflow: the readers check against these and the
/// simulator relies on them (its time arithmetic in integer nanoseconds stays in range).
///
/// The bounds are generous on purpose: they admit every real machine and job by orders of
/// magnitude and refuse only values no hardware or training run can have.
#pragma once

#include <cstdint>

namespace stepcast::limits {

// ---------------------------------------------------------------------------------------
// Reading files: what a well-formed input can look like at all.
// ---------------------------------------------------------------------------------------

/// Largest input file read, bytes. The largest real inputs (a measured-run .jsonl of
/// 100,000 records, a catalog) are a few tens of MB; this keeps a wrong path (a disk image,
/// /dev/zero) from being read whole.
inline constexpr std::int64_t kMaxInputFileBytes = 256LL << 20;

/// Deepest nesting of JSON arrays and objects. stepcast's formats nest at most 5 deep; the
/// bound keeps recursive parsing and error messages far from the stack's limit.
inline constexpr int kMaxJsonDepth = 64;

// ---------------------------------------------------------------------------------------
// Hardware and calibration: GPUs, links, boxes, clusters, measured kernels and collectives.
// ---------------------------------------------------------------------------------------

/// Dense peak of one GPU, TFLOP/s: (1e-3, 1e5]. The fastest parts (B200 FP8) reach a few
/// thousand; below 1 GFLOP/s is no GPU, and a near-zero peak would make step times overflow.
inline constexpr double kMinPeakTflops = 1e-3;
inline constexpr double kMaxPeakTflops = 1e5;

/// Bandwidth of any memory, link, NIC or measured copy/collective, GB/s: [1e-3, 1e5]. HBM3e
/// reaches 8,000 and NVLink 5 1,800 per GPU; 1 MB/s is below any network GPUs train over,
/// and a bandwidth near zero would make transfer times overflow.
inline constexpr double kMinBandwidth_GBps = 1e-3;
inline constexpr double kMaxBandwidth_GBps = 1e5;

/// Memory of one GPU, GiB: at most 1e4 (10 TiB; the largest parts hold 192).
inline constexpr double kMaxGpuMemoryGiB = 1e4;

/// Streaming multiprocessors of one GPU: at most 1,024 (B200 has 148 per die pair).
inline constexpr int kMaxSmCount = 1024;

/// NVLink links of one GPU (or bundled between two GPUs): at most 64 (Hopper and Blackwell
/// have 18).
inline constexpr int kMaxNvlinkLinks = 64;

/// Board power, W: at most 1e4 (the largest accelerators draw about 1.2 kW).
inline constexpr double kMaxTdpW = 1e4;

/// Added latency of one link kind, µs: at most 1e4 (10 ms; Ethernet with TCP adds ~50).
inline constexpr double kMaxLinkLatency_us = 1e4;

/// GPUs in one box (one NVLink/PCIe domain): at most 1,024 (rack-scale GB200 NVL72 has 72).
inline constexpr int kMaxGpusPerBox = 1024;

/// Switch chips, PCIe switches, CPUs or NICs in one box: at most 1,024 each (a DGX has
/// at most 12 NVSwitches, 8 PCIe switches, 2 CPUs and 10 NICs).
inline constexpr int kMaxDevicesPerBox = 1024;

/// NICs per GPU of a box or a cluster's nodes: at most 4 (the densest nodes give each GPU
/// one or two); keeps the network graph proportional to the GPUs.
inline constexpr int kMaxNicsPerGpu = 4;

/// GPUs in one catalog cluster (nodes x GPUs per box): at most 2^20, ten times the largest
/// clusters built; the topology graph costs about 1 kB per GPU.
inline constexpr std::int64_t kMaxClusterGpus = 1LL << 20;

/// Oversubscription of a fat tree: at most 1,024 (real trees use 1:1 to 4:1).
inline constexpr double kMaxOversubscription = 1024;

/// Efficiencies (fractions of a datasheet peak) of the catalogs: in [1e-3, 1]. Below 0.1 %
/// is a broken measurement, and a near-zero efficiency would make times overflow.
inline constexpr double kMinEfficiency = 1e-3;
inline constexpr double kMaxEfficiency = 1.0;

/// A measured fraction of a datasheet peak (a calibration's GEMM max_fraction or memory
/// efficiency): at most 1.5. Boost clocks can beat the datasheet a little (stepcast fit
/// warns above 1); 1.5 times the peak means the wrong GPU or a broken timer.
inline constexpr double kMaxMeasuredFraction = 1.5;

/// FLOPs per GEMM call at which a fitted curve reaches half its efficiency: at most 1e16
/// (a 65,536-cubed GEMM is 5.6e14 FLOPs; a curve still rising beyond that was never
/// measured where training runs).
inline constexpr double kMaxGemmHalfFlops = 1e16;

/// A measured kernel, copy or collective time, seconds: [1e-9, 1e4]. No GPU operation
/// takes less than a nanosecond; a single call over 3 hours is a hung run.
inline constexpr double kMinMeasuredTime_s = 1e-9;
inline constexpr double kMaxMeasuredTime_s = 1e4;

/// A measured or fitted collective latency (alpha), µs: at most 1e6 (1 s; a ring over
/// thousands of nodes stays within tens of ms).
inline constexpr double kMaxCollectiveLatency_us = 1e6;

/// A measured throughput as the benchmark printed it, TFLOP/s: at most kMaxPeakTflops
/// (informational; the fit recomputes it from FLOPs and time).
inline constexpr double kMaxMeasuredTflops = kMaxPeakTflops;

/// Bytes of one measured copy or collective buffer: at most 2^50 (1 PiB; benchmarks use up
/// to a few GiB).
inline constexpr std::int64_t kMaxMeasuredBytes = 1LL << 50;

/// A GEMM dimension (m, n or k) of a calibration: at most 2^24, so 2mnk stays exact in a
/// double's range (benchmarks use up to 2^16).
inline constexpr std::int64_t kMaxGemmDim = 1LL << 24;

/// Timed iterations of one benchmark row: at most 2^30.
inline constexpr std::int64_t kMaxIterations = 1LL << 30;

/// Relative RMS residual of a fit: at most 1e3 (a fit off by 1000x explains nothing).
inline constexpr double kMaxFitResidual = 1e3;

// ---------------------------------------------------------------------------------------
// Workload and layout: models, training setups, strategies, scenario sizes.
// ---------------------------------------------------------------------------------------

// (workload and layout bounds go here)

}  // namespace stepcast::limits
