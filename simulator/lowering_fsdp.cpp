/// \file
/// Sharded parameters: ZeRO-3, FSDP FULL_SHARD, SHARD_GRAD_OP and HYBRID_SHARD
/// (lowering.hpp). Per unit (each layer; a root unit with the embeddings, final norm and LM
/// head) an all-gather before forward and again before backward, issued up to
/// prefetch_layers units ahead, parameters freed after use, each unit's gradients
/// reduce-scattered on a second NCCL stream after its backward. SHARD_GRAD_OP keeps the
/// forward's parameters for backward; HYBRID_SHARD gathers and reduces inside the node and
/// all-reduces each unit's gradient shard across nodes.
#include "simulator/lowering_common.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepcast::sim::lowering {

namespace {

class ShardedLowering final : public StrategyLowering {
 public:
  explicit ShardedLowering(Strategy s) : strategy_(s) {}

  std::string_view name() const override { return "sharded (ZeRO-3, FSDP FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD)"; }
  StreamLayout streams() const override { return StreamLayout{"nccl all-gather", true}; }

  void micro_step(Builder& b, std::int64_t k, bool last) const override {
    if (b.step().gpus == 1) {  // nothing to gather or reduce
      replicated_micro_step(b, k);
      return;
    }
    sharded_micro_step(b, k, last);
  }

 private:
  bool hybrid() const { return strategy_ == Strategy::fsdp_hybrid_shard; }
  bool keep_for_backward() const { return strategy_ == Strategy::fsdp_shard_grad_op; }
  FabricScope shard_level() const { return hybrid() ? FabricScope::intra_node : FabricScope::all; }
  int shard_ranks(const CostedStep& p) const { return hybrid() ? p.gpus_per_node : p.gpus; }
  /// Bytes a gathered unit adds on top of the shard already held.
  double gathered(const CostedStep& p, double bytes) const { return bytes * (1.0 - 1.0 / shard_ranks(p)); }

  void sharded_micro_step(Builder& b, std::int64_t k, bool last) const;
  void reduce_unit(Builder& b, const std::string& what, double grad_bytes, int after) const;

  Strategy strategy_;
};

void ShardedLowering::sharded_micro_step(Builder& b, std::int64_t k, bool last) const {
  const CostedStep& p = b.step();
  const std::string mk = micro_suffix(p, k);
  const FabricScope level = shard_level();
  const int L = p.layers;
  const int pf = std::max(0, p.prefetch_layers);
  // SHARD_GRAD_OP's parameters stay gathered from forward to backward, so the memory model
  // counts them whole among the static weights: nothing extra to allocate.
  const double layer_gather = p.layer_gather_bytes > 0 ? p.layer_gather_bytes : p.layer_param_bytes;
  const double unit = keep_for_backward() ? 0.0 : gathered(p, layer_gather);

  // Forward: the root unit, then each layer gathered up to `pf` layers ahead of use.
  const int ag_root =
      b.collective(Lane::gather, "all-gather root" + mk, "parameter all-gather (forward)", Collective::all_gather,
                   p.root_param_bytes, level, {}, keep_for_backward() ? 0.0 : gathered(p, p.root_param_bytes));
  int ag_first = -1;
  ProgramHooks h;
  h.before_forward = [&](int i, const MicroStepTasks& t) {
    std::vector<int> deps;
    if (i - 1 - pf >= 1) deps.push_back(t.forward[i - 1 - pf]);
    const int ag =
        b.collective(Lane::gather, fmt::format("all-gather L{} (fwd){}", i, mk), "parameter all-gather (forward)",
                     Collective::all_gather, layer_gather, level, deps, unit);
    if (i == 1) ag_first = ag;
    return i == 1 ? std::vector<int>{ag, ag_root} : std::vector<int>{ag};
  };
  h.forward_free_bytes = unit;
  h.head_forward_deps = {ag_root};
  // Backward: layers last to first, each gathered again (FULL_SHARD, ZeRO-3) up to `pf`
  // layers ahead, its gradients reduce-scattered on the reduction stream.
  h.before_backward = [&](int i, const MicroStepTasks& t) {
    if (keep_for_backward()) return std::vector<int>{};
    std::vector<int> deps;
    if (i + 1 + pf <= L) deps.push_back(t.backward[i + 1 + pf]);
    return std::vector<int>{b.collective(Lane::gather, fmt::format("all-gather L{} (bwd){}", i, mk),
                                         "parameter all-gather (backward)", Collective::all_gather, layer_gather, level,
                                         deps, unit)};
  };
  h.backward_alloc_bytes = p.layer_grad_bytes;
  h.backward_extra_free_bytes = unit;
  h.after_backward = [&](int i, int bwd) { reduce_unit(b, fmt::format("L{}{}", i, mk), p.layer_grad_bytes, bwd); };
  const MicroStepTasks t = micro_step_program(b, k, h);
  if (k == 0) {
    b.mark_unhideable(ag_root);
    b.mark_unhideable(ag_first);
  }
  // The root unit's gradients (embeddings, LM head) are complete after the last layer.
  reduce_unit(b, "root" + mk, p.root_grad_bytes, t.backward[1]);
  if (!keep_for_backward()) b.add_free(t.backward[1], gathered(p, p.root_param_bytes));
  if (last && b.last_reduce >= 0) b.mark_unhideable(b.last_reduce);
}

void ShardedLowering::reduce_unit(Builder& b, const std::string& what, double grad_bytes, int after) const {
  if (grad_bytes <= 0) return;
  const CostedStep& p = b.step();
  const double shard = grad_bytes / shard_ranks(p);
  b.last_reduce = b.collective(Lane::reduce, "reduce-scatter " + what, "gradient reduce-scatter",
                               Collective::reduce_scatter, grad_bytes, shard_level(), {after}, 0, grad_bytes - shard);
  if (hybrid() && p.nodes > 1)
    b.last_reduce =
        b.collective(Lane::reduce, "all-reduce across nodes " + what, "gradient all-reduce across nodes (shard)",
                     Collective::all_reduce, shard, FabricScope::inter_node, {b.last_reduce});
}

}  // namespace

std::unique_ptr<StrategyLowering> sharded_lowering(Strategy s) { return std::make_unique<ShardedLowering>(s); }

}  // namespace stepcast::sim::lowering
