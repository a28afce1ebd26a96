// Tests of model/offload: PCIe bytes per parameter, host memory per parameter and the
// exposed offload time, each against its formula (offload.hpp).
#include "model/offload.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace stepcast;

TEST_CASE("offload PCIe bytes per local parameter: ZeRO-Offload moves 2w (w down, w up) per step") {
  // Ren et al. 2021 Sec. 4.1: 4M bytes for M fp16 parameters = 2 B down + 2 B up each.
  CHECK(pcie_bytes_per_param(OffloadKind::optimizer, Strategy::zero2, 1, 2) == 4);
  // ZeRO-2 copies every micro-step's gradients: w·m down + w up.
  CHECK(pcie_bytes_per_param(OffloadKind::optimizer, Strategy::zero2, 8, 2) == 8 * 2 + 2);
  // ZeRO-1 reduces (and copies) the gradients of the last micro-step only.
  CHECK(pcie_bytes_per_param(OffloadKind::optimizer, Strategy::zero1, 8, 2) == 2 + 2);
  // Parameter offload: w·m down + 2 gathers x w x m up; SHARD_GRAD_OP gathers once.
  CHECK(pcie_bytes_per_param(OffloadKind::parameters, Strategy::zero3, 4, 2) == 4 * 2 + 2 * 2 * 4);
  CHECK(pcie_bytes_per_param(OffloadKind::parameters, Strategy::fsdp_shard_grad_op, 4, 2) == 4 * 2 + 2 * 4);
  CHECK(pcie_bytes_per_param(OffloadKind::none, Strategy::zero3, 4, 2) == 0);
  // fp32 training (FSDP CPUOffload without mixed precision): w = 4.
  CHECK(pcie_bytes_per_param(OffloadKind::parameters, Strategy::fsdp_full_shard, 1, 4) == 4 + 2 * 4);
}

TEST_CASE("offload host bytes per parameter: 12 (master, m, v) + 4 (fp32 gradient), + w with parameters") {
  CHECK(host_bytes_per_param(OffloadKind::optimizer, 2) == 16);
  CHECK(host_bytes_per_param(OffloadKind::parameters, 2) == 18);
  CHECK(host_bytes_per_param(OffloadKind::none, 2) == 0);
  CHECK(kCpuAdamBytesPerParam == 30);
  CHECK(gradient_arrival_bytes_per_param(2) == 10);
}

TEST_CASE("offload is refused where the framework cannot do it") {
  CHECK(offload_supported(OffloadKind::optimizer, Strategy::zero1));
  CHECK(offload_supported(OffloadKind::optimizer, Strategy::zero3));
  CHECK_FALSE(offload_supported(OffloadKind::optimizer, Strategy::ddp));
  CHECK_FALSE(offload_supported(OffloadKind::optimizer, Strategy::fsdp_full_shard));  // FSDP offloads parameters
  CHECK(offload_supported(OffloadKind::parameters, Strategy::fsdp_full_shard));
  CHECK_FALSE(offload_supported(OffloadKind::parameters, Strategy::zero2));
  CHECK(parse_offload("parameters") == OffloadKind::parameters);
  CHECK_THROWS_AS(parse_offload("cpu"), std::invalid_argument);
}

namespace {
/// 1e9 local parameters, w 2, PCIe 20 GB/s (one copy 0.1 s), host 100 GB/s, 2 GPUs per host.
OffloadInputs inputs(OffloadKind kind, Strategy s) {
  OffloadInputs in;
  in.kind = kind;
  in.strategy = s;
  in.local_params = 1e9;
  in.micro_steps = 2;
  in.w = 2;
  in.gpus_per_host = 2;
  in.pcie_GBps = 20;
  in.host_memory_GBps = 100;
  in.forward_s = 1;
  in.backward_s = 2;
  in.step_compute_s = 6;
  return in;
}
}  // namespace

TEST_CASE(
    "offload times: CPU Adam over host memory, copies hidden behind backward, the step waits for Adam and "
    "the copy up") {
  const OffloadTimes t = offload_times(inputs(OffloadKind::optimizer, Strategy::zero2));
  CHECK(t.down_s == doctest::Approx(2 * 0.1));  // 2 micro-steps of 2 GB at 20 GB/s
  CHECK(t.up_s == doctest::Approx(0.1));
  // 2 GPUs x 1e9 x (30 + 2 arrivals x 10) B over 100 GB/s x 0.75.
  const double cpu = 2 * 1e9 * (30 + 2 * 10) / (100e9 * kHostMemoryEfficiency);
  CHECK(t.cpu_s == doctest::Approx(cpu));
  CHECK(t.exposed_s == doctest::Approx(cpu + 0.1));  // the copies down hide behind 2 s of backward
  // A backward shorter than a copy exposes the difference every micro-step.
  OffloadInputs short_bwd = inputs(OffloadKind::optimizer, Strategy::zero2);
  short_bwd.backward_s = 0.04;
  CHECK(offload_times(short_bwd).exposed_s == doctest::Approx(2 * 0.06 + cpu + 0.1));
}

TEST_CASE("offload times: CPU Adam takes the slower of host DRAM and the host's cores at 29.5M params/s each") {
  OffloadInputs in = inputs(OffloadKind::optimizer, Strategy::zero2);
  const double dram = 2 * 1e9 * (30 + 2 * 10) / (100e9 * kHostMemoryEfficiency);  // 1.33 s
  in.host_cores = 0;                                                              // cores unknown: DRAM alone
  CHECK(offload_times(in).cpu_s == doctest::Approx(dram));
  in.host_cores = 48;  // 2e9 params / (48 x 29.5e6) = 1.41 s > 1.33 s: the cores bound it
  CHECK(offload_times(in).cpu_s == doctest::Approx(2e9 / (48 * 29.5e6)));
  in.host_cores = 52;  // 2e9 / (52 x 29.5e6) = 1.30 s < 1.33 s: DRAM bounds it again
  CHECK(offload_times(in).cpu_s == doctest::Approx(dram));
}

TEST_CASE("offload times: the delayed parameter update hides Adam and the copy up behind the next step") {
  OffloadInputs in = inputs(OffloadKind::optimizer, Strategy::zero2);
  in.delayed_update = true;
  CHECK(offload_times(in).exposed_s == 0);  // 1.33 s of Adam + 0.1 s < 6 s of GPU work
  in.step_compute_s = 1.0;
  const double cpu = 2 * 1e9 * (30 + 2 * 10) / (100e9 * kHostMemoryEfficiency);
  CHECK(offload_times(in).exposed_s == doctest::Approx(cpu + 0.1 - 1.0));
}

TEST_CASE("offload times: parameter shards come up before each gather, hidden behind forward and backward") {
  const OffloadTimes t = offload_times(inputs(OffloadKind::parameters, Strategy::zero3));
  CHECK(t.up_s == doctest::Approx(2 * 2 * 0.1));  // 2 gathers x 2 micro-steps
  CHECK(t.down_s == doctest::Approx(2 * 0.1));
  const double cpu = 2 * 1e9 * (30 + 2 * 10) / (100e9 * kHostMemoryEfficiency);
  CHECK(t.exposed_s == doctest::Approx(cpu));  // every copy hides; the host's step does not
  CHECK(offload_times(inputs(OffloadKind::none, Strategy::zero3)).exposed_s == 0);
  OffloadInputs bad = inputs(OffloadKind::optimizer, Strategy::zero2);
  bad.pcie_GBps = 0;
  CHECK_THROWS_AS(offload_times(bad), std::invalid_argument);
}
