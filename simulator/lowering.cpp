#include "simulator/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace stepcast::sim {

std::vector<double> bucket_sizes(double total_bytes, double first_bytes, double cap_bytes) {
  assert(first_bytes > 0 && cap_bytes > 0);
  std::vector<double> out;
  double left = total_bytes;
  double cap = first_bytes;
  while (left > 0) {
    const double take = std::min(left, cap);
    out.push_back(take);
    left -= take;
    cap = cap_bytes;
    if (left <= total_bytes * 1e-12) break;  // rounding crumbs
  }
  return out;
}

namespace {

/// A gradient (or parameter) chunk that becomes ready when `task` ends.
struct Chunk {
  int task = -1;
  double bytes = 0;
};

class Lowering {
 public:
  explicit Lowering(const StepPlan& p) : p_(p) {}

  StepGraph run() {
    std::vector<RankGroup> groups = p_.groups;
    if (groups.empty()) groups.push_back(RankGroup{"all ranks", p_.gpus, p_.nodes, 1.0, 1.0});
    for (const RankGroup& grp : groups) {
      RankClass rc;
      rc.name = grp.name;
      rc.ranks = grp.ranks;
      rc.nodes = grp.nodes;
      rc.compute_speed = grp.compute_speed;
      rc.comm_slowdown = p_.comm_slowdown;
      rc.static_memory_bytes = p_.static_memory_bytes;
      const int c = static_cast<int>(g_.classes.size());
      g_.classes.push_back(rc);
      const std::string who = groups.size() > 1 ? " [" + grp.name + "]" : "";
      if (p_.gpus_per_node > 1)
        g_.classes[c].intra_resource = g_.add_link(
            fmt::format("intra-node ring per GPU ({}){}", p_.fabric.intra.kind, who),
            p_.fabric.intra.bw_GBps * grp.link_speed);
      if (p_.nodes > 1 && p_.fabric.inter)
        g_.classes[c].nic_resource = g_.add_link(fmt::format("NICs per node ({}){}", p_.fabric.inter->kind, who),
                                                 p_.fabric.inter->bw_GBps * grp.link_speed);
      const int cs = g_.add_stream("compute", StreamKind::compute, c);
      compute_.push_back(cs);
      if (p_.comm_on_compute_stream) {
        gather_.push_back(cs);
        reduce_.push_back(cs);
      } else {
        const int gs = g_.add_stream(sharded_params() ? "nccl all-gather" : "nccl", StreamKind::communication, c);
        gather_.push_back(gs);
        reduce_.push_back(sharded_params() || zero12() ? g_.add_stream("nccl reduce", StreamKind::communication, c)
                                                       : gs);
      }
    }
    classes_ = static_cast<int>(g_.classes.size());

    const double L = p_.layers;
    fwd_s_ = std::max(0.0, p_.micro.forward_s - p_.micro.head_forward_s) / L;
    bwd_s_ = std::max(0.0, p_.micro.backward_s - p_.micro.head_backward_s) / L;
    rec_s_ = p_.micro.recompute_s / L;

    std::vector<int> grads_done;  // the last reduction before the optimizer
    for (int k = 0; k < p_.micro_steps; ++k) micro_step(k, k + 1 == p_.micro_steps);
    if (last_reduce_ >= 0) grads_done.push_back(last_reduce_);
    const int opt = compute("optimizer step", "optimizer", p_.optimizer_s, 0, grads_done);
    if (zero12() && p_.gpus > 1) {
      // DeepSpeed gathers the updated parameter partitions inside step(), bucket by bucket.
      const auto sizes = bucket_sizes(p_.layers * p_.layer_grad_bytes + p_.root_grad_bytes, p_.bucket_bytes,
                                      p_.bucket_bytes);
      for (std::size_t b = 0; b < sizes.size(); ++b) {
        const int t = collective(Lane::gather, fmt::format("all-gather params bucket {}", b), "parameter all-gather (after step)",
                                 Collective::all_gather, sizes[b], FabricScope::all, {opt});
        g_.unhideable_ops.push_back(g_.tasks[t].op);
      }
    }
    return std::move(g_);
  }

 private:
  bool sharded_params() const {
    return p_.strategy == Strategy::zero3 || p_.strategy == Strategy::fsdp_full_shard ||
           p_.strategy == Strategy::fsdp_shard_grad_op || p_.strategy == Strategy::fsdp_hybrid_shard;
  }
  bool zero12() const { return p_.strategy == Strategy::zero1 || p_.strategy == Strategy::zero2; }
  FabricScope shard_level() const {
    return p_.strategy == Strategy::fsdp_hybrid_shard ? FabricScope::intra_node : FabricScope::all;
  }
  int shard_ranks() const { return p_.strategy == Strategy::fsdp_hybrid_shard ? p_.gpus_per_node : p_.gpus; }
  /// Bytes a gathered unit adds on top of the shard already held.
  double gathered(double bytes) const { return bytes * (1.0 - 1.0 / shard_ranks()); }

  enum class Lane { gather, reduce };

  /// A collective across every rank class; `deps` are class-0 task ids (the tasks of class
  /// c are added right after, so class c's copy of task t is t + c). Returns class 0's id.
  int collective(Lane lane, std::string name, std::string purpose, Collective c, double bytes,
                 FabricScope level, const std::vector<int>& deps, double alloc = 0, double free = 0) {
    const CommFabric f = restrict_fabric(p_.fabric, level);
    std::vector<CollectivePhase> phases;
    if (f.ranks() > 1 && bytes > 0) phases = collective_phases(c, bytes, f, p_.algorithm);
    if (phases.size() == 1) use_measurement(phases[0], f);
    std::vector<std::pair<int, std::vector<int>>> members;
    for (int k = 0; k < classes_; ++k)
      members.push_back({lane == Lane::gather ? gather_[k] : reduce_[k], shifted(deps, k)});
    const auto ids = g_.add_collective(std::move(name), std::move(purpose), level, c, bytes, std::move(phases), members);
    for (int id : ids) {
      g_.tasks[id].alloc_bytes = alloc;
      g_.tasks[id].free_bytes = free;
    }
    return ids[0];
  }

  /// Replaces a phase's latency and rate by a measurement of the same collective on the same
  /// ranks and nodes; loads shrink where the measurement beats the modelled link capacity,
  /// so that alone the phase still runs at the measured rate.
  void use_measurement(CollectivePhase& ph, const CommFabric& f) const {
    for (const MeasuredCollective& m : p_.measured_collectives) {
      if (m.collective != ph.collective || m.ranks != f.ranks() || m.nodes != f.nodes()) continue;
      ph.latency_s = m.latency_s;
      ph.algbw_GBps = m.algbw_GBps;
      if (ph.intra_load > 0) ph.intra_load = std::min(ph.intra_load, f.intra.bw_GBps / m.algbw_GBps);
      if (ph.inter_load > 0 && f.inter) ph.inter_load = std::min(ph.inter_load, f.inter->bw_GBps / m.algbw_GBps);
      ph.algorithm = "measured";
      return;
    }
  }

  /// A compute task on every rank class; returns class 0's id (class c's is that + c).
  int compute(const std::string& name, const std::string& category, double s, double flops,
              const std::vector<int>& deps = {}, double alloc = 0, double free = 0) {
    int first = -1;
    for (int k = 0; k < classes_; ++k) {
      const int t = g_.add_compute(compute_[k], name, category, s, flops, shifted(deps, k));
      g_.tasks[t].alloc_bytes = alloc;
      g_.tasks[t].free_bytes = free;
      if (k == 0) first = t;
    }
    return first;
  }

  static std::vector<int> shifted(const std::vector<int>& deps, int k) {
    std::vector<int> out(deps);
    for (int& d : out) d += k;
    return out;
  }

  void add_free(int task, double bytes) {
    for (int k = 0; k < classes_; ++k) g_.tasks[task + k].free_bytes += bytes;
  }

  void micro_step(int k, bool last) {
    if (sharded_params() && p_.gpus > 1) {
      sharded_micro_step(k, last);
      return;
    }
    // Replicated parameters (DDP, NO_SHARD, ZeRO-1/2; or FSDP/ZeRO-3 on one GPU).
    const std::string mk = p_.micro_steps > 1 ? fmt::format(" m{}", k) : "";
    std::vector<int> fwd(p_.layers + 1);
    for (int i = 1; i <= p_.layers; ++i)
      fwd[i] = compute(fmt::format("fwd L{}{}", i, mk), "forward", fwd_s_, p_.layer_flops_forward, {}, p_.activation_bytes_per_layer);
    compute("fwd head" + mk, "head", p_.micro.head_forward_s, p_.head_flops_forward, {}, p_.logits_bytes);
    std::vector<Chunk> chunks;
    const int head_bwd = compute("bwd head" + mk, "head", p_.micro.head_backward_s, p_.head_flops_backward, {}, 0, p_.logits_bytes);
    chunks.push_back({head_bwd, p_.head_grad_bytes});
    for (int i = p_.layers; i >= 1; --i) {
      if (rec_s_ > 0) compute(fmt::format("recompute L{}{}", i, mk), "recompute", rec_s_, p_.layer_flops_recompute);
      const int b = compute(fmt::format("bwd L{}{}", i, mk), "backward", bwd_s_, p_.layer_flops_backward, {}, 0, p_.activation_bytes_per_layer);
      chunks.push_back({b, p_.layer_grad_bytes});
    }
    chunks.back().bytes += p_.root_grad_bytes - p_.head_grad_bytes;  // embeddings: ready last
    if (p_.gpus == 1) return;

    const Strategy st = p_.strategy;
    if (st == Strategy::ddp && last) {
      reduce_buckets(chunks, Collective::all_reduce, "gradient all-reduce (bucketed)", p_.first_bucket_bytes, mk, true);
    } else if (st == Strategy::fsdp_no_shard && last) {
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        if (chunks[c].bytes <= 0) continue;
        last_reduce_ = collective(Lane::reduce, fmt::format("all-reduce unit {}{}", c, mk), "gradient all-reduce (per FSDP unit)",
                                  Collective::all_reduce, chunks[c].bytes, FabricScope::all, {chunks[c].task});
      }
      if (last_reduce_ >= 0) g_.unhideable_ops.push_back(g_.tasks[last_reduce_].op);
    } else if ((st == Strategy::zero2) || (st == Strategy::zero1 && last)) {
      reduce_buckets(chunks, Collective::reduce_scatter, "gradient reduce-scatter (bucketed)", p_.bucket_bytes, mk,
                     last);
    }
  }

  /// Fills buckets in ready order; each bucket is reduced when its last gradient exists.
  void reduce_buckets(const std::vector<Chunk>& chunks, Collective c, const std::string& purpose, double first_cap,
                      const std::string& mk, bool mark_last_unhideable) {
    double cap = first_cap, fill = 0;
    int n = 0, ready = -1;
    auto launch = [&] {
      last_reduce_ = collective(Lane::reduce, fmt::format("{} bucket {}{}", name(c), n++, mk), purpose, c, fill, FabricScope::all, {ready});
      fill = 0;
      cap = p_.bucket_bytes;
    };
    for (const Chunk& ch : chunks) {
      double left = ch.bytes;
      ready = ch.task;
      while (left > 0) {
        const double take = std::min(left, cap - fill);
        fill += take;
        left -= take;
        if (fill >= cap * (1 - 1e-12)) launch();
        if (left <= ch.bytes * 1e-12) break;
      }
    }
    if (fill > 0) launch();
    if (mark_last_unhideable && last_reduce_ >= 0) g_.unhideable_ops.push_back(g_.tasks[last_reduce_].op);
  }

  void sharded_micro_step(int k, bool last) {
    const std::string mk = p_.micro_steps > 1 ? fmt::format(" m{}", k) : "";
    const FabricScope level = shard_level();
    const bool keep_for_backward = p_.strategy == Strategy::fsdp_shard_grad_op;
    const bool hybrid_across = p_.strategy == Strategy::fsdp_hybrid_shard && p_.nodes > 1;
    const int L = p_.layers;
    const int pf = std::max(0, p_.prefetch_layers);
    // SHARD_GRAD_OP's parameters stay gathered from forward to backward, so the memory
    // model counts them whole among the static weights: nothing extra to allocate.
    const double unit = keep_for_backward ? 0.0 : gathered(p_.layer_param_bytes);

    // Forward: the root unit, then each layer gathered up to `pf` layers ahead of use.
    const int ag_root = collective(Lane::gather, "all-gather root" + mk, "parameter all-gather (forward)",
                                   Collective::all_gather, p_.root_param_bytes, level, {},
                                   keep_for_backward ? 0.0 : gathered(p_.root_param_bytes));
    std::vector<int> fwd(L + 1, -1), agf(L + 1, -1);
    for (int i = 1; i <= L; ++i) {
      std::vector<int> deps;
      if (i - 1 - pf >= 1) deps.push_back(fwd[i - 1 - pf]);
      agf[i] = collective(Lane::gather, fmt::format("all-gather L{} (fwd){}", i, mk), "parameter all-gather (forward)",
                          Collective::all_gather, p_.layer_param_bytes, level, deps, unit);
      std::vector<int> fdeps = {agf[i]};
      if (i == 1) fdeps.push_back(ag_root);
      fwd[i] = compute(fmt::format("fwd L{}{}", i, mk), "forward", fwd_s_, p_.layer_flops_forward, fdeps, p_.activation_bytes_per_layer,
                       keep_for_backward ? 0.0 : unit);
    }
    if (k == 0) {
      g_.unhideable_ops.push_back(g_.tasks[ag_root].op);
      g_.unhideable_ops.push_back(g_.tasks[agf[1]].op);
    }
    compute("fwd head" + mk, "head", p_.micro.head_forward_s, p_.head_flops_forward, {ag_root}, p_.logits_bytes);

    // Backward: layers last to first, each gathered again (FULL_SHARD, ZeRO-3) up to `pf`
    // layers ahead, its gradients reduce-scattered on the reduction stream.
    compute("bwd head" + mk, "head", p_.micro.head_backward_s, p_.head_flops_backward, {}, 0, p_.logits_bytes);
    std::vector<int> bwd(L + 2, -1);
    for (int i = L; i >= 1; --i) {
      std::vector<int> bdeps;
      if (!keep_for_backward) {
        std::vector<int> deps;
        if (i + 1 + pf <= L) deps.push_back(bwd[i + 1 + pf]);
        bdeps.push_back(collective(Lane::gather, fmt::format("all-gather L{} (bwd){}", i, mk),
                                   "parameter all-gather (backward)", Collective::all_gather, p_.layer_param_bytes,
                                   level, deps, unit));
      }
      if (rec_s_ > 0) compute(fmt::format("recompute L{}{}", i, mk), "recompute", rec_s_, p_.layer_flops_recompute, bdeps);
      bwd[i] = compute(fmt::format("bwd L{}{}", i, mk), "backward", bwd_s_, p_.layer_flops_backward, bdeps, p_.layer_grad_bytes,
                       p_.activation_bytes_per_layer + unit);
      reduce_unit(fmt::format("L{}{}", i, mk), p_.layer_grad_bytes, bwd[i], level, hybrid_across);
    }
    // The root unit's gradients (embeddings, LM head) are complete after the last layer.
    reduce_unit("root" + mk, p_.root_grad_bytes, bwd[1], level, hybrid_across);
    if (!keep_for_backward) add_free(bwd[1], gathered(p_.root_param_bytes));
    if (last && last_reduce_ >= 0) g_.unhideable_ops.push_back(g_.tasks[last_reduce_].op);
  }

  void reduce_unit(const std::string& what, double grad_bytes, int after, FabricScope level, bool across) {
    if (grad_bytes <= 0) return;
    const double shard = grad_bytes / shard_ranks();
    last_reduce_ = collective(Lane::reduce, "reduce-scatter " + what, "gradient reduce-scatter", Collective::reduce_scatter,
                              grad_bytes, level, {after}, 0, grad_bytes - shard);
    if (across)
      last_reduce_ = collective(Lane::reduce, "all-reduce across nodes " + what, "gradient all-reduce across nodes (shard)",
                                Collective::all_reduce, shard, FabricScope::inter_node, {last_reduce_});
  }

  const StepPlan& p_;
  StepGraph g_;
  std::vector<int> compute_, gather_, reduce_;  ///< streams per class
  int classes_ = 1;
  double fwd_s_ = 0, bwd_s_ = 0, rec_s_ = 0;
  int last_reduce_ = -1;
};

}  // namespace

StepGraph lower_step(const StepPlan& plan) {
  assert(plan.layers >= 1 && plan.micro_steps >= 1 && plan.gpus >= 1);
  return Lowering(plan).run();
}

}  // namespace stepcast::sim
