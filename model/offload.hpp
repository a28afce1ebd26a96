/// \file
/// CPU offload: ZeRO-Offload's optimizer on the host, ZeRO-3 / FSDP parameter
/// offload, and what they cost: bytes over PCIe per parameter, the host's Adam step as a
/// memory-bound pass over host memory, host memory, and the part of the host's work the GPU
/// step does not hide. Pure functions over plain numbers; the host's figures come from the
/// box catalog (topologies/ HostSpec).
///
/// Symbols: P the parameters of one GPU's partition (local parameters), w bytes of a
/// working (16-bit) element, m micro-steps per optimizer step.
#pragma once

#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// What lives on the host.
enum class OffloadKind {
  none,
  /// ZeRO-Offload (Ren et al. 2021, arXiv 2101.06840, Sec. 4): fp32 master weights, Adam's
  /// moments and the fp32 gradients on the host; 16-bit gradients go down over PCIe, the
  /// CPU runs Adam, 16-bit parameters come back up. DeepSpeed offload_optimizer (ZeRO-1/2/3).
  optimizer,
  /// ZeRO-3 offload_param / FSDP CPUOffload(offload_params=True): the 16-bit parameter
  /// shards live on the host too and are copied up before each all-gather; the optimizer
  /// runs on the host and the updated shards stay there.
  parameters,
};
/// "none", "optimizer", "parameters".
std::string_view name(OffloadKind);
OffloadKind parse_offload(std::string_view);  ///< throws std::invalid_argument
std::vector<std::string> offload_names();

/// Whether `strategy` can offload `kind`: the optimizer with ZeRO-1/2/3 (DeepSpeed
/// offload_optimizer); parameters with ZeRO-3 (offload_param needs stage 3) and FSDP
/// FULL_SHARD / SHARD_GRAD_OP / HYBRID_SHARD (CPUOffload).
bool offload_supported(OffloadKind kind, Strategy strategy);

/// Fraction of the DRAM wire rate a streaming pass reaches on the host: 0.75, STREAM triad
/// measured at 74-78% of the DDR wire rate (TI SPRAD45A, Table 3-2). A documented default.
inline constexpr double kHostMemoryEfficiency = 0.75;

/// Host-memory bytes the CPU Adam step moves per parameter: reads fp32 master, fp32
/// gradient, m and v (16), writes master, m and v (12) and the 16-bit copy sent back (2):
/// 30 B (DeepSpeed's CPU Adam, csrc/adam/cpu_adam_impl.cpp, updates the fp32 partition in
/// place and writes the 16-bit parameter copy in the same pass).
inline constexpr double kCpuAdamBytesPerParam = 30;

/// Parameters DeepSpeed's CPU Adam updates per second per host core: 29.5e6. DeepSpeed PR
/// #735 (2021-02-08) measures the optimizer step of an 11.6B-parameter GPT-2 at 8.2 s with
/// CPU Adam (56 s with torch Adam): 1.41e9 parameters/s. The host is not named; taken as
/// the DGX-2's 2x Xeon Platinum 8168, 48 cores (the DeepSpeed team's ZeRO-Offload
/// evaluation machine, Ren et al. 2021 Sec. 6), so 1.41e9 / 48 = 29.5e6 per core. At 30 B per
/// parameter that is 0.9 GB/s per core: on the catalog's hosts the cores, not DRAM, bound
/// the step (kernel-benchmarks.md Sec. 4: CPU Adam reaches 0.2-0.5 of DRAM bandwidth).
inline constexpr double kCpuAdamParamsPerCoreSecond = 29.5e6;

/// Host-memory bytes per parameter each time a 16-bit gradient arrives: read it (w) and
/// add it into the fp32 gradient partition (read 4, write 4): w + 8.
double gradient_arrival_bytes_per_param(double w);

/// Gradient copies to the host per optimizer step: every micro-step where the strategy
/// partitions gradients every micro-step (ZeRO-2/3, FSDP), once (the last) for ZeRO-1.
std::int64_t gradient_copies(Strategy strategy, std::int64_t micro_steps);

/// PCIe bytes per local parameter and optimizer step, both directions together:
///   optimizer   w·copies down (16-bit gradients) + w up (updated 16-bit parameters)
///   parameters  w·m down (gradients, every micro-step) + w·g·m up (the shard copied up
///               before each all-gather: g = 2 gathers per micro-step, forward and
///               backward; 1 for SHARD_GRAD_OP), none after the step (the shard stays on
///               the host)
///   none        0
/// ZeRO-Offload paper Sec. 4.1 (its 4M = 2M down + 2M up for M fp16 parameters, m = 1).
double pcie_bytes_per_param(OffloadKind kind, Strategy strategy, std::int64_t micro_steps, double w);

/// Host bytes per local parameter: optimizer 12 (fp32 master, m, v) + 4 (fp32 gradient) =
/// 16; parameters also the 16-bit shard, 16 + w. 0 without offload.
double host_bytes_per_param(OffloadKind kind, double w);

/// What one GPU's offload costs per optimizer step.
struct OffloadInputs {
  OffloadKind kind = OffloadKind::none;
  Strategy strategy = Strategy::zero2;
  double local_params = 0;  ///< P: trainable parameters of this GPU's partition
  std::int64_t micro_steps = 1;
  double w = 2;                 ///< bytes per 16-bit element
  int gpus_per_host = 1;        ///< GPUs whose partitions the host's CPUs update
  int host_cores = 0;           ///< the host's physical cores (0: not known, DRAM bound only)
  double pcie_GBps = 0;         ///< per GPU, all GPUs copying at once
  double host_memory_GBps = 0;  ///< DRAM wire rate of the host
  bool delayed_update = false;  ///< ZeRO-Offload's one-step delayed parameter update
  /// One micro-step's GPU work the copies hide behind, and the whole step's.
  double forward_s = 0, backward_s = 0, step_compute_s = 0;
};

/// Times of one GPU's offload per optimizer step, seconds.
struct OffloadTimes {
  double down_s = 0;     ///< all gradient copies to the host
  double up_s = 0;       ///< all parameter copies to the GPU
  double cpu_s = 0;      ///< the host's Adam step plus the gradient arrivals (all GPUs)
  double exposed_s = 0;  ///< what the GPU step waits for
};

/// The offload's times (Ren et al. 2021, Sec. 4.1-4.3, Fig. 5's schedule):
///   down_s = copies·w·P / pcie;   up_s = (PCIe bytes up)·P / pcie
///   cpu_s  = max(gpus_per_host·P·(30 + copies·(w + 8)) / (host_memory_GBps · kHostMemoryEfficiency),
///                gpus_per_host·P / (host_cores · kCpuAdamParamsPerCoreSecond))
///   optimizer offload: gradient copies run beside the backward that produces them, so a
///     micro-step exposes max(0, copy - backward); then Adam and the copy up wait:
///     exposed = copies·max(0, w·P/pcie - backward) + cpu_s + w·P/pcie
///   parameter offload: each micro-step's copies up hide behind its forward and backward,
///     the gradient copies behind its backward:
///     exposed = m·(max(0, up_fwd - forward) + max(0, up_bwd + down - backward)) + cpu_s
///   delayed parameter update (Sec. 4.3): the host's Adam and the copy up of step k run
///     beside the GPU's step k+1: those terms add max(0, cpu_s + up - step_compute_s).
OffloadTimes offload_times(const OffloadInputs& in);

}  // namespace stepcast
