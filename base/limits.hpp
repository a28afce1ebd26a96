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

/// Largest JSON document read (a scenario, catalog, hardware or raw calibration file), bytes.
/// The largest real ones (the model catalog, a raw calibration sweep) are well under 1 MB;
/// this keeps a wrong path (a disk image, a data set) from being read whole.
inline constexpr std::int64_t kMaxDocumentBytes = 16LL << 20;

/// Largest measured-run file (.jsonl) read, bytes: 100,000 records of ~2 kB each are about
/// 220 MB; 1 GiB admits five times that and keeps memory bounded.
inline constexpr std::int64_t kMaxRecordFileBytes = 1LL << 30;

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

/// Spread of per-GPU speed among identical GPUs (coefficient of variation): at most 0.5.
/// Measured spreads are about 2% (V100 SGEMM on Longhorn, A100 ResNet on Lonestar6); at 0.5
/// the slowest of a million GPUs would take 3.4x the typical time.
inline constexpr double kMaxGpuSpeedCv = 0.5;

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

// Measured on one core of the development machine (2 cores, Release build, stepcast
// predict --json, 10 B GPT, DDP and ZeRO-3 alike): 131,072 GPUs take 0.6 s and 150 MB,
// 1,048,576 GPUs 2.7 s and 1.2 GB (about 1.1 kB per GPU); 10,000 layers 1.3 s and 390 MB;
// grad_accum 10,000 4.3 s and 1 GB (the simulator's cost grows with these until it
// collapses repeated micro-steps and layers).

/// Most GPUs in one scenario (nodes x GPUs per node): 2^20, about ten times the largest
/// training clusters built; predict costs 2.7 s and 1.2 GB there (see above).
inline constexpr std::int64_t kMaxGpus = 1LL << 20;

/// Most nodes: every node holds at least one GPU, so no more nodes than GPUs.
inline constexpr std::int64_t kMaxNodes = kMaxGpus;

/// Most GPUs in one node: rack-scale NVLink domains hold 72 (GB200 NVL72); 1,024 leaves
/// room for anything sold as one NVLink domain.
inline constexpr std::int64_t kMaxGpusPerNode = 1024;

/// Most sequences per GPU per micro-step: real micro-batches are at most a few thousand
/// short sequences; 2^20 keeps micro_batch x seq_len (a tensor's rows) far inside int64.
inline constexpr std::int64_t kMaxMicroBatch = 1LL << 20;

/// Most micro-steps per optimizer step: real runs accumulate at most a few thousand. The
/// simulator plays a few and adds the repeating rest in closed form, so its cost does not
/// grow with this; 2^20 only keeps the step's task and event counts far inside int64.
inline constexpr std::int64_t kMaxGradAccum = 1LL << 20;

/// Longest sequence, tokens: the longest contexts trained are about 1 M tokens; 2^22
/// keeps micro_batch x seq_len far inside int64 and attention's s^2 exact in a double.
inline constexpr std::int64_t kMaxSeqLen = 1LL << 22;

/// Most tokens in one optimizer step (GPUs x micro_batch x grad_accum x seq_len): real
/// global batches are at most ~16 M tokens; 2^40 stays far below 2^53, so token counts held
/// in doubles are exact integers.
inline constexpr std::int64_t kMaxTokensPerStep = 1LL << 40;

/// Most transformer blocks: the deepest models trained have ~130; 10,000 costs 1.3 s and
/// 390 MB per prediction (see above), 10^6 would not finish.
inline constexpr std::int64_t kMaxLayers = 10'000;

/// Widest hidden size: the widest models have 25,600 (PaLM 540B 18,432); 2^20 keeps the
/// parameter count (layers x ~12 hidden^2) inside int64.
inline constexpr std::int64_t kMaxHidden = 1LL << 20;

/// Widest MLP: 4 x kMaxHidden (the usual expansion ratio, gated MLPs use less).
inline constexpr std::int64_t kMaxFfnHidden = 4 * kMaxHidden;

/// Largest vocabulary: real vocabularies have at most ~256 k tokens; 2^24 keeps the
/// embedding (vocab x hidden) inside int64.
inline constexpr std::int64_t kMaxVocab = 1LL << 24;

/// Most gradient buckets per optimizer step (trainable gradient bytes / bucket size):
/// PyTorch accepts any bucket_cap_mb, so the bucket count is bounded instead; real setups
/// have at most a few thousand buckets, and each one is a simulated collective.
inline constexpr std::int64_t kMaxBucketsPerStep = 100'000;

/// Slowest and fastest straggler speed relative to the catalog part: a GPU or link at 1%
/// is broken, not straggling (and 1e-300 overflowed the simulator's clock); 10x covers
/// a newer part in an older box.
inline constexpr double kMinSpeedRatio = 0.01;
inline constexpr double kMaxSpeedRatio = 10.0;

/// Largest data set per epoch: corpora are at most ~10^14 tokens (tens of trillions);
/// 10^16 tokens or 10^15 sequences refuse typos without touching real runs.
inline constexpr double kMaxDatasetTokens = 1e16;
inline constexpr double kMaxDatasetSamples = 1e15;

/// Highest price per GPU-hour, USD: list prices are 0.1 to ~15 USD; 1,000 refuses a price
/// per node-month or in cents.
inline constexpr double kMaxPricePerGpuHourUsd = 1000.0;

}  // namespace stepcast::limits
