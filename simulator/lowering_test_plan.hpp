/// \file
/// The hand-made plan the lowering tests share (lowering*_test.cpp, repetition_test.cpp) and
/// two helpers to find what a lowered graph holds. Test code only.
#pragma once

#include "simulator/lowering.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace stepcast::sim::testing {

/// 4 layers of 100 MB, a 50 MB root unit (20 MB of it an untied LM head), 16 GPUs on two
/// nodes of 8 (NVLink 240 GB/s inside, one 100 GbE NIC per node at 12.5 GB/s).
inline CostedStep plan(Strategy st, std::int64_t micro_steps = 1) {
  CostedStep p;
  p.layout.dp_sharding = st;
  p.micro_steps = micro_steps;
  p.layers = 4;
  p.micro.forward_s = 0.4;
  p.micro.backward_s = 0.8;
  p.micro.head_forward_s = 0.04;
  p.micro.head_backward_s = 0.08;
  p.optimizer_s = 0.1;
  p.layer_param_bytes = p.layer_grad_bytes = 100e6;
  p.root_param_bytes = p.root_grad_bytes = 50e6;
  p.head_param_bytes = p.head_grad_bytes = 20e6;
  p.bucket_bytes = 25e6;
  p.gpus = 16;
  p.nodes = 2;
  p.gpus_per_node = 8;
  p.fabric.arch = GpuArch::ampere;
  p.fabric.intra = FabricLevel{8, LinkClass::nvlink, 240.0, 0.0, "nvlink3", 0};
  p.fabric.inter = FabricLevel{2, LinkClass::network, 12.5, 0.0, "1x roce-100g", 1};
  return p;
}

inline int count_ops(const StepGraph& g, const std::string& purpose) {
  return static_cast<int>(
      std::count_if(g.ops.begin(), g.ops.end(), [&](const CollectiveOp& o) { return o.purpose == purpose; }));
}

inline int task_named(const StepGraph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.tasks.size(); ++i)
    if (g.tasks[i].name == name) return static_cast<int>(i);
  FAIL("no task " << name);
  return -1;
}

}  // namespace stepcast::sim::testing
