/// \file
/// DeepSpeed ZeRO-1 and ZeRO-2 (stage_1_and_2, overlap_comm; lowering.hpp): parameters
/// replicated, gradients bucketed in ready order and reduce-scattered on the reduction
/// stream during backward (ZeRO-2 every micro-step, ZeRO-1 the last), a sharded optimizer
/// step, then the updated parameters all-gathered in buckets inside step().
#include "simulator/lowering_common.hpp"

#include <fmt/format.h>

namespace stepcast::sim::lowering {

namespace {

class Zero12Lowering final : public StrategyLowering {
 public:
  explicit Zero12Lowering(Strategy s) : strategy_(s) {}

  std::string_view name() const override { return "ZeRO-1/2"; }
  StreamLayout streams() const override { return StreamLayout{"nccl", true}; }

  void micro_step(Builder& b, std::int64_t k, bool last) const override {
    const std::vector<Chunk> chunks = replicated_micro_step(b, k);
    if (b.plan().gpus == 1) return;
    if (strategy_ == Strategy::zero2 || last)
      reduce_buckets(b, chunks, Collective::reduce_scatter, "gradient reduce-scatter (bucketed)",
                     b.plan().bucket_bytes, micro_suffix(b.plan(), k), last);
  }

  void after_optimizer(Builder& b, int opt) const override {
    const StepPlan& p = b.plan();
    if (p.gpus == 1) return;
    const auto sizes = bucket_sizes(p.layers * p.layer_grad_bytes + p.root_grad_bytes, p.bucket_bytes, p.bucket_bytes);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const int t = b.collective(Lane::gather, fmt::format("all-gather params bucket {}", i),
                                 "parameter all-gather (after step)", Collective::all_gather, sizes[i],
                                 FabricScope::all, {opt});
      b.mark_unhideable(t);
    }
  }

 private:
  Strategy strategy_;
};

}  // namespace

std::unique_ptr<StrategyLowering> zero12_lowering(Strategy s) { return std::make_unique<Zero12Lowering>(s); }

}  // namespace stepcast::sim::lowering
