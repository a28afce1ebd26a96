/// \file
/// DeepSpeed ZeRO-1 and ZeRO-2 (stage_1_and_2, overlap_comm; lowering.hpp): parameters
/// replicated, gradients bucketed in ready order and reduce-scattered on the reduction
/// stream during backward (ZeRO-2 every micro-step, ZeRO-1 the last), a sharded optimizer
/// step, then the updated parameters all-gathered in buckets inside step(). With
/// overlap_param_gather (Megatron-Core's distributed optimizer, --overlap-param-gather) the
/// all-gathers run instead at the step's start, one bucket after the other in forward order
/// (megatron/core/optimizer/distrib_optimizer.py at core_r0.8.0: the buckets' views in
/// reverse, each next all-gather dispatched when the forward pre-hook waits on the one
/// before), and the first micro-step's forward of a layer waits for the bucket that holds
/// it. Megatron launches the next bucket only once the forward reaches the one before; here
/// it follows at once, which hides the same time whenever a bucket's all-gather is shorter
/// than the forward of its layers.
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
    const bool gather_first = k == 0 && b.step().overlap_param_gather && b.step().gpus > 1;
    const std::vector<Chunk> chunks = replicated_micro_step(b, k, gather_first ? gather_hooks(b) : ProgramHooks{});
    if (b.step().gpus == 1) return;
    if (strategy_ == Strategy::zero2 || last)
      reduce_buckets(b, chunks, Collective::reduce_scatter, "gradient reduce-scatter (bucketed)", b.step().bucket_bytes,
                     micro_suffix(b.step(), k), last);
  }

  void after_optimizer(Builder& b, int opt) const override {
    const CostedStep& p = b.step();
    if (p.gpus == 1 || p.overlap_param_gather) return;
    const auto sizes = bucket_sizes(p.layers * p.layer_grad_bytes + p.root_grad_bytes, p.bucket_bytes, p.bucket_bytes);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const int t =
          b.collective(Lane::gather, fmt::format("all-gather params bucket {}", i), "parameter all-gather (after step)",
                       Collective::all_gather, sizes[i], FabricScope::all, {opt});
      b.mark_unhideable(t);
    }
  }

 private:
  /// The parameter all-gathers at the step's start, in forward order (the last gradient
  /// bucket first: it holds the embeddings and the first layers), and hooks that make the
  /// forward of layer i and of the head wait for the bucket holding their first byte in
  /// gradient order (head, layers L..1, embeddings with layer 1: replicated_micro_step).
  static ProgramHooks gather_hooks(Builder& b) {
    const CostedStep& p = b.step();
    const std::vector<double> sizes =
        bucket_sizes(p.layers * p.layer_grad_bytes + p.root_grad_bytes, p.bucket_bytes, p.bucket_bytes);
    std::vector<int> gather(sizes.size(), -1);
    int prev = -1;
    for (std::size_t j = sizes.size(); j-- > 0;) {
      gather[j] = b.collective(Lane::gather, fmt::format("all-gather params bucket {}", j),
                               "parameter all-gather (beside the forward)", Collective::all_gather, sizes[j],
                               FabricScope::all, prev < 0 ? std::vector<int>{} : std::vector<int>{prev});
      prev = gather[j];
    }
    // The bucket holding gradient-order offset `at` (bytes).
    auto bucket_of = [sizes, gather](double at) {
      double end = 0;
      for (std::size_t j = 0; j < sizes.size(); ++j)
        if (at < (end += sizes[j])) return gather[j];
      return gather.back();
    };
    ProgramHooks h;
    const double head = p.head_grad_bytes, layer = p.layer_grad_bytes;
    const int L = p.layers;
    h.before_forward = [bucket_of, head, layer, L](int i, const MicroStepTasks&) {
      return std::vector<int>{bucket_of(head + (L - i) * layer)};
    };
    h.head_forward_deps = {bucket_of(0)};
    return h;
  }

  Strategy strategy_;
};

}  // namespace

std::unique_ptr<StrategyLowering> zero12_lowering(Strategy s) { return std::make_unique<Zero12Lowering>(s); }

}  // namespace stepcast::sim::lowering
