// CPU offload: PCIe bytes, the host's Adam step and what the step does not hide. The
// formulas and their sources are in offload.hpp.
#include "model/offload.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace stepcast {

namespace {
constexpr std::array<std::string_view, 3> kOffload{"none", "optimizer", "parameters"};

/// Parameter all-gathers per micro-step: forward and backward, one under SHARD_GRAD_OP.
double gathers_per_micro_step(Strategy s) { return s == Strategy::fsdp_shard_grad_op ? 1.0 : 2.0; }
}  // namespace

std::string_view name(OffloadKind k) { return kOffload[static_cast<int>(k)]; }

OffloadKind parse_offload(std::string_view text) {
  for (std::size_t i = 0; i < kOffload.size(); ++i)
    if (kOffload[i] == text) return static_cast<OffloadKind>(i);
  throw std::invalid_argument("unknown offload \"" + std::string(text) +
                              "\"; expected one of \"none\", \"optimizer\", \"parameters\"");
}

std::vector<std::string> offload_names() { return {kOffload.begin(), kOffload.end()}; }

bool offload_supported(OffloadKind kind, Strategy s) {
  switch (kind) {
    case OffloadKind::none:
      return true;
    case OffloadKind::optimizer:
      return s == Strategy::zero1 || s == Strategy::zero2 || s == Strategy::zero3;
    case OffloadKind::parameters:
      return s == Strategy::zero3 || s == Strategy::fsdp_full_shard || s == Strategy::fsdp_shard_grad_op ||
             s == Strategy::fsdp_hybrid_shard;
  }
  return false;
}

double gradient_arrival_bytes_per_param(double w) { return w + 8.0; }

std::int64_t gradient_copies(Strategy s, std::int64_t micro_steps) {
  if (micro_steps < 1) throw std::invalid_argument("gradient copies need micro_steps >= 1");
  return s == Strategy::zero1 ? 1 : micro_steps;
}

double pcie_bytes_per_param(OffloadKind kind, Strategy s, std::int64_t micro_steps, double w) {
  if (w <= 0) throw std::invalid_argument("PCIe bytes need w > 0");
  const double m = static_cast<double>(micro_steps);
  switch (kind) {
    case OffloadKind::none:
      return 0;
    case OffloadKind::optimizer:
      return w * static_cast<double>(gradient_copies(s, micro_steps)) + w;
    case OffloadKind::parameters:
      return w * m + w * gathers_per_micro_step(s) * m;
  }
  return 0;
}

double host_bytes_per_param(OffloadKind kind, double w) {
  switch (kind) {
    case OffloadKind::none:
      return 0;
    case OffloadKind::optimizer:
      return 16;
    case OffloadKind::parameters:
      return 16 + w;
  }
  return 0;
}

OffloadTimes offload_times(const OffloadInputs& in) {
  OffloadTimes t;
  if (in.kind == OffloadKind::none) return t;
  if (!(in.pcie_GBps > 0) || !(in.host_memory_GBps > 0) || in.gpus_per_host < 1 || in.host_cores < 0 ||
      in.local_params < 0 || in.micro_steps < 1 || !(in.w > 0))
    throw std::invalid_argument(
        "offload needs PCIe and host memory rates > 0, GPUs per host >= 1, host cores >= 0, micro_steps >= 1");
  const double P = in.local_params, w = in.w, m = static_cast<double>(in.micro_steps);
  const double pcie = in.pcie_GBps * 1e9;
  const double copies = static_cast<double>(gradient_copies(in.strategy, in.micro_steps));
  const double one_copy_s = w * P / pcie;  // one micro-step's gradients, or one shard
  t.down_s = copies * one_copy_s;
  const double arrivals = in.kind == OffloadKind::parameters ? m : copies;
  if (in.kind == OffloadKind::parameters) t.down_s = m * one_copy_s;
  const double dram_s = in.gpus_per_host * P *
                        (kCpuAdamBytesPerParam + arrivals * gradient_arrival_bytes_per_param(w)) /
                        (in.host_memory_GBps * kHostMemoryEfficiency * 1e9);
  const double cores_s = in.host_cores > 0 ? in.gpus_per_host * P / (in.host_cores * kCpuAdamParamsPerCoreSecond) : 0;
  t.cpu_s = std::max(dram_s, cores_s);
  double after;  // the host's step and what follows it before the next step can use it
  if (in.kind == OffloadKind::optimizer) {
    t.up_s = one_copy_s;
    t.exposed_s = copies * std::max(0.0, one_copy_s - in.backward_s);
    after = t.cpu_s + t.up_s;
  } else {
    const double g = gathers_per_micro_step(in.strategy);
    t.up_s = g * m * one_copy_s;
    const double up_bwd = (g - 1) * one_copy_s;
    t.exposed_s = m * (std::max(0.0, one_copy_s - in.forward_s) + std::max(0.0, up_bwd + one_copy_s - in.backward_s));
    after = t.cpu_s;
  }
  t.exposed_s += in.delayed_update ? std::max(0.0, after - in.step_compute_s) : after;
  return t;
}

}  // namespace stepcast
