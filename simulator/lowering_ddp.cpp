/// \file
/// Replicated parameters: PyTorch DDP and FSDP NO_SHARD (lowering.hpp).
///  - DDP: gradients bucketed in the order they become ready, the first bucket capped at
///    first_bucket_bytes, each all-reduced when its last gradient exists, during the last
///    micro-step only (no_sync before it); the optimizer after the last bucket.
///  - FSDP NO_SHARD: each unit's gradients all-reduced after its backward, last micro-step.
#include "simulator/lowering_common.hpp"

#include <fmt/format.h>

namespace stepcast::sim::lowering {

namespace {

class ReplicatedLowering final : public StrategyLowering {
 public:
  explicit ReplicatedLowering(Strategy s) : strategy_(s) {}

  std::string_view name() const override { return "replicated (DDP, FSDP NO_SHARD)"; }
  StreamLayout streams() const override { return StreamLayout{"nccl", false}; }

  void micro_step(Builder& b, std::int64_t k, bool last) const override {
    const std::vector<Chunk> chunks = replicated_micro_step(b, k);
    if (b.step().gpus == 1 || !last) return;
    const std::string mk = micro_suffix(b.step(), k);
    if (strategy_ == Strategy::ddp) {
      reduce_buckets(b, chunks, Collective::all_reduce, "gradient all-reduce (bucketed)", b.step().first_bucket_bytes,
                     mk, true);
      return;
    }
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      if (chunks[c].bytes <= 0) continue;
      b.last_reduce =
          b.collective(Lane::reduce, fmt::format("all-reduce unit {}{}", c, mk), "gradient all-reduce (per FSDP unit)",
                       Collective::all_reduce, chunks[c].bytes, FabricScope::all, {chunks[c].task});
    }
    if (b.last_reduce >= 0) b.mark_unhideable(b.last_reduce);
  }

 private:
  Strategy strategy_;
};

}  // namespace

std::unique_ptr<StrategyLowering> replicated_lowering(Strategy s) { return std::make_unique<ReplicatedLowering>(s); }

}  // namespace stepcast::sim::lowering
