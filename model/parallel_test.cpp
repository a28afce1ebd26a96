// Tests of model/parallel: layout rules, Megatron rank placement, and each TP/SP/CP/PP
// formula against hand-worked numbers.
#include "model/parallel.hpp"
#include "model/memory.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

using namespace stepcast;

namespace {

/// Llama-2-70B's shape: L 80, h 8192, 64 heads of 128, 8 KV heads (kv_dim 1024), SwiGLU
/// ffn 28672, V 32000, s 4096.
TransformerSpec llama70b() {
  TransformerSpec s;
  s.name = "llama70b-shape";
  s.layers = 80;
  s.hidden = 8192;
  s.heads = 64;
  s.kv_heads = 8;
  s.ffn_hidden = 28672;
  s.gated_mlp = true;
  s.vocab = 32000;
  s.seq_len = 4096;
  s.norm = Norm::rmsnorm;
  return s;
}

ParallelLayout layout(int dp, int tp, int pp, int cp = 1) {
  ParallelLayout l;
  l.dp = dp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  return l;
}

}  // namespace

TEST_CASE("schedule, sharding and group names round-trip; unknown names list the choices") {
  for (const auto& n : pipeline_schedule_names()) CHECK(name(parse_pipeline_schedule(n)) == n);
  for (const auto& n : group_kind_names()) CHECK(name(parse_group_kind(n)) == n);
  CHECK(name(PipelineScheduleKind::one_f_one_b) == "1f1b");
  CHECK(parse_dp_sharding("zero1") == Strategy::zero1);
  CHECK_THROWS_WITH_AS(parse_pipeline_schedule("pipedream"), doctest::Contains("\"zb-h1\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_group_kind("ep"), doctest::Contains("\"tp\""), std::invalid_argument);
}

TEST_CASE("old strategies are layouts with tp = pp = cp = 1") {
  const ParallelLayout l = data_parallel_layout(Strategy::fsdp_full_shard, 64);
  CHECK(l.dp == 64);
  CHECK(l.tp * l.pp * l.cp == 1);
  CHECK(l.dp_sharding == Strategy::fsdp_full_shard);
  CHECK(l.gpus() == 64);
}

namespace {
/// The rules `l` breaks for Llama-2-70B on 64 GPUs (8 per node), sequences of 4,096 tokens,
/// 16 micro-batches.
std::vector<LayoutRule> broken_rules(const ParallelLayout& l, std::int64_t seq_len = 4096) {
  LayoutContext c;
  c.gpus = 64;
  c.gpus_per_node = 8;
  c.nodes = 8;
  c.seq_len = seq_len;
  c.micro_batches = 16;
  return layout_violations(l, llama70b(), c);
}
ParallelLayout with(int tp, int cp, int pp) {
  ParallelLayout l;
  l.tp = tp, l.cp = cp, l.pp = pp;
  return l;
}
using Rules = std::vector<LayoutRule>;
}  // namespace

TEST_CASE("layout rules at their boundaries: whole replicas, TP splits of the model and the sequence") {
  CHECK(broken_rules(with(8, 1, 4)).empty());
  CHECK(broken_rules(with(8, 3, 1), 4608) == Rules{LayoutRule::divides_gpus});  // 24 does not divide 64
  CHECK(broken_rules(with(16, 1, 1)) == Rules{LayoutRule::tp_model});  // divides the 64 heads, not the 8 KV heads
  CHECK(broken_rules(with(3, 1, 1)) == Rules{LayoutRule::tp_placement, LayoutRule::divides_gpus, LayoutRule::tp_model});
  ParallelLayout sp = with(8, 2, 1);
  sp.sp = true;
  CHECK(broken_rules(sp).empty());                                  // 2,048 tokens per CP rank over 8 TP ranks
  CHECK(broken_rules(sp, 4100) == Rules{LayoutRule::sp_sequence});  // 2 x cp divides it, tp x cp not
  CHECK(broken_rules(sp, 4098) == Rules{LayoutRule::sp_sequence, LayoutRule::cp_sequence});
  sp.tp = 1;
  CHECK(broken_rules(sp) == Rules{LayoutRule::sp_needs_tp});
}

TEST_CASE("a pipeline runs ddp or zero1 within each stage (DeepSpeed refuses ZeRO-2/3, FSDP does not pipeline)") {
  ParallelLayout l = with(8, 1, 2);
  for (Strategy s : {Strategy::ddp, Strategy::zero1}) {
    l.dp_sharding = s;
    CHECK(broken_rules(l).empty());
  }
  for (Strategy s : {Strategy::zero2, Strategy::zero3, Strategy::fsdp_full_shard}) {
    l.dp_sharding = s;
    CHECK(broken_rules(l) == Rules{LayoutRule::pipeline_strategy});
  }
}

TEST_CASE("the interleaved schedule: vpp >= 2 with it and only with it, micro-batches in groups of pp") {
  ParallelLayout l = with(8, 1, 4);
  l.vpp = 2;
  CHECK(broken_rules(l) == Rules{LayoutRule::interleaved_vpp});
  l.schedule = PipelineScheduleKind::interleaved;
  CHECK(broken_rules(l).empty());  // 16 micro-batches in groups of 4
  l.pp = 8;
  l.tp = 4;
  CHECK(broken_rules(l).empty());
  l.pp = 32, l.tp = 2;
  CHECK(broken_rules(l) == Rules{LayoutRule::interleaved_groups});  // 16 micro-batches, groups of 32
  l.pp = 16, l.tp = 4, l.vpp = 5;
  CHECK(broken_rules(l).empty());  // 80 chunks of one layer
  l.vpp = 6;
  CHECK(broken_rules(l) == Rules{LayoutRule::pipeline_layers});  // 96 chunks, 80 layers
  l.vpp = 2;
  l.pp = 1;
  CHECK(broken_rules(l) == Rules{LayoutRule::vpp_pipeline});
}

TEST_CASE("expert parallelism needs experts; a degree below 1 is the only rule then checked") {
  ParallelLayout l = with(1, 1, 1);
  l.ep = 2;
  CHECK(broken_rules(l) == Rules{LayoutRule::ep_model});
  l.ep = 0;
  CHECK(broken_rules(l) == Rules{LayoutRule::degrees});
}

TEST_CASE("Megatron rank order is tp fastest, then cp, dp, pp") {
  const ParallelLayout l = layout(4, 8, 2, 2);  // 128 ranks
  CHECK(group_stride(l, GroupKind::tp) == 1);
  CHECK(group_stride(l, GroupKind::cp) == 8);
  CHECK(group_stride(l, GroupKind::dp) == 16);  // 8·2
  CHECK(group_stride(l, GroupKind::pp) == 64);  // 8·2·4
  // tp 3, cp 1, dp 2, pp 1: 3 + 8·1 + 16·2 + 64·1 = 107.
  CHECK(rank_of(l, RankCoords{3, 1, 2, 1}) == 107);
  const RankCoords c = rank_coords(l, 107);
  CHECK(c.tp == 3);
  CHECK(c.cp == 1);
  CHECK(c.dp == 2);
  CHECK(c.pp == 1);
  for (std::int64_t r = 0; r < l.gpus(); ++r) CHECK(rank_of(l, rank_coords(l, r)) == r);
  CHECK_THROWS_AS(rank_coords(l, 128), std::invalid_argument);
  CHECK_THROWS_AS(rank_of(l, RankCoords{8, 0, 0, 0}), std::invalid_argument);
}

TEST_CASE("tp 8 on 8-GPU nodes: one node per TP group; DP and PP groups one rank per node, 8 sharing NICs") {
  const ParallelLayout l = layout(4, 8, 2);  // 64 GPUs, 8 nodes
  const GroupPlacement tp = group_placement(l, GroupKind::tp, 8);
  CHECK(tp.ranks == 8);
  CHECK(tp.ranks_per_node == 8);
  CHECK(tp.nodes_spanned == 1);
  CHECK(tp.groups_sharing_a_node == 1);
  const GroupPlacement dp = group_placement(l, GroupKind::dp, 8);  // stride 8: ranks 0, 8, 16, 24
  CHECK(dp.ranks == 4);
  CHECK(dp.ranks_per_node == 1);
  CHECK(dp.nodes_spanned == 4);
  CHECK(dp.groups_sharing_a_node == 8);
  const GroupPlacement pp = group_placement(l, GroupKind::pp, 8);  // stride 32: ranks 0, 32
  CHECK(pp.nodes_spanned == 2);
  CHECK(pp.ranks_per_node == 1);
  CHECK(pp.groups_sharing_a_node == 8);
}

TEST_CASE("tp 4 on 8-GPU nodes: two TP groups per node; a DP group takes two ranks on each of two nodes") {
  const ParallelLayout l = layout(4, 4, 1);  // 16 GPUs, 2 nodes
  const GroupPlacement tp = group_placement(l, GroupKind::tp, 8);
  CHECK(tp.ranks_per_node == 4);
  CHECK(tp.nodes_spanned == 1);
  CHECK(tp.groups_sharing_a_node == 2);
  // DP group of rank 0: 0, 4, 8, 12 -> nodes 0, 0, 1, 1; node 0 holds DP groups 0..3.
  const GroupPlacement dp = group_placement(l, GroupKind::dp, 8);
  CHECK(dp.ranks_per_node == 2);
  CHECK(dp.nodes_spanned == 2);
  CHECK(dp.groups_sharing_a_node == 4);
}

TEST_CASE("group placement: CP inside a node, partial nodes and groups straddling nodes") {
  // tp 2, cp 4, dp 2 = 16 GPUs: a CP group 0, 2, 4, 6 lies in node 0 with the group of rank 1.
  const GroupPlacement cp = group_placement(layout(2, 2, 1, 4), GroupKind::cp, 8);
  CHECK(cp.ranks_per_node == 4);
  CHECK(cp.nodes_spanned == 1);
  CHECK(cp.groups_sharing_a_node == 2);
  // 4 GPUs on one 8-GPU node: DP groups {0, 2} and {1, 3}.
  const GroupPlacement part = group_placement(layout(2, 2, 1), GroupKind::dp, 8);
  CHECK(part.ranks_per_node == 2);
  CHECK(part.nodes_spanned == 1);
  CHECK(part.groups_sharing_a_node == 2);
  // tp 3 on 4-GPU nodes: {0,1,2} on node 0; {3,4,5} straddles nodes 0 and 1 (worst case).
  const GroupPlacement odd = group_placement(layout(2, 3, 1), GroupKind::tp, 4);
  CHECK(odd.ranks_per_node == 3);
  CHECK(odd.nodes_spanned == 2);
  CHECK(odd.groups_sharing_a_node == 2);
  CHECK_THROWS_AS(group_placement(layout(2, 3, 1), GroupKind::tp, 0), std::invalid_argument);
}

TEST_CASE("TP GEMMs: column-parallel QKV and MLP-up divide n by t, row-parallel out and down divide k") {
  const TransformerSpec m = llama70b();
  const auto g = tp_layer_gemms(m, 4096, 8);
  REQUIRE(g.size() == 5);
  // qkv: n = (8192 + 2·1024) / 8 = 1280, k = 8192.
  CHECK(g[0].name == "qkv");
  CHECK(g[0].m == 4096);
  CHECK(g[0].n == 1280);
  CHECK(g[0].k == 8192);
  // attn_out: k = 8192 / 8 = 1024, n = 8192.
  CHECK(g[1].n == 8192);
  CHECK(g[1].k == 1024);
  // mlp_up (gate and up): n = 28672 / 8 = 3584; mlp_down: k = 3584.
  CHECK(g[2].n == 3584);
  CHECK(g[2].count_per_layer == 2);
  CHECK(g[3].k == 3584);
  CHECK(g[3].n == 8192);
  // vocab-parallel LM head: 32000 / 8 = 4000 rows.
  CHECK(g[4].n == 4000);
  // t = 1 is the unsplit layer.
  const auto full = layer_gemms(m, 4096);
  const auto one = tp_layer_gemms(m, 4096, 1);
  for (std::size_t i = 0; i < full.size(); ++i) CHECK((one[i].n == full[i].n && one[i].k == full[i].k));
  CHECK_THROWS_AS(tp_layer_gemms(m, 4096, 16), std::invalid_argument);  // kv_heads 8
}

TEST_CASE("vocab-parallel rows are ceil(V_pad / t), V padded to a multiple of divisible_by·t") {
  // GPT-2's 50257 over t = 8: ceil(50257 / 8) = 6283 unpadded; Megatron's 128·8 = 1024
  // multiple pads to 50·1024 = 51200, 6400 rows.
  CHECK(vocab_rows_per_rank(50257, 8) == 6283);
  CHECK(vocab_rows_per_rank(50257, 8, 128) == 6400);
  CHECK(vocab_rows_per_rank(32000, 8) == 4000);
  CHECK_THROWS_AS(vocab_rows_per_rank(32000, 0), std::invalid_argument);
}

TEST_CASE("TP bytes per layer: 2 all-reduces of b·s·h·w each way; SP: 2 AG + 2 RS, backward plus 2 re-gathers") {
  // b·s = 4096 tokens, h = 8192, w = 2: one collective = 4096·8192·2 = 67,108,864 B.
  const double one = 67108864.0;
  const TpLayerComm plain = tp_layer_comm(4096, 8192, 2, 8, false);
  REQUIRE(plain.forward.size() == 1);
  CHECK(plain.forward[0].op == Collective::all_reduce);
  CHECK(plain.forward[0].count == 2);
  CHECK(plain.forward_bytes() == doctest::Approx(2 * one));  // 134,217,728
  CHECK(plain.backward_bytes() == doctest::Approx(2 * one));
  const TpLayerComm sp = tp_layer_comm(4096, 8192, 2, 8, true);
  CHECK(sp.forward_bytes() == doctest::Approx(4 * one));   // 268,435,456
  CHECK(sp.backward_bytes() == doctest::Approx(6 * one));  // 402,653,184
  CHECK(sp.backward[0].op == Collective::all_gather);
  CHECK(sp.backward[0].count == 4);
  // GEMMs that keep their gathered input (nanotron's column_linear) skip the 2 re-gathers.
  const TpLayerComm kept = tp_layer_comm(4096, 8192, 2, 8, true, Recompute::none, true);
  CHECK(kept.forward_bytes() == doctest::Approx(4 * one));
  CHECK(kept.backward_bytes() == doctest::Approx(4 * one));
  CHECK(kept.backward[0].count == 2);
  CHECK(kept.backward[0].attn_in_count == 0);
  // Full recompute replays the forward's 2 all-reduces in backward: 4 in all.
  CHECK(tp_layer_comm(4096, 8192, 2, 8, false, Recompute::full).backward_bytes() == doctest::Approx(4 * one));
  CHECK(tp_layer_comm(4096, 8192, 2, 8, false, Recompute::selective).backward_bytes() == doctest::Approx(2 * one));
  // One TP rank: nothing to communicate.
  CHECK(tp_layer_comm(4096, 8192, 2, 1, false).forward.empty());
  CHECK(tp_layer_comm(4096, 8192, 2, 1, false).backward_bytes() == 0);
}

TEST_CASE("TP overlap exposure: ring exchange hides the collective up to one GEMM chunk per step") {
  // tp 8: 8 chunks of a 8 ms GEMM (1 ms each), 7 steps.
  TpCollective ring{Collective::all_gather, 1, 1e6, TpOverlap::ring_exchange, 8e-3, 8, 0.0};
  // 3.5 ms of all-gather: 0.5 ms a step, under a chunk's 1 ms: nothing exposed.
  CHECK(tp_overlap_exposed_s(ring, 3.5e-3) == doctest::Approx(0.0));
  // 14 ms: 2 ms a step: total = 1 + 7·2 = 15 ms, 7 ms beyond the GEMM.
  CHECK(tp_overlap_exposed_s(ring, 14e-3) == doctest::Approx(7e-3));
  // Without overlap the collective blocks: all of it.
  TpCollective alone = ring;
  alone.overlap = TpOverlap::none;
  CHECK(tp_overlap_exposed_s(alone, 14e-3) == doctest::Approx(14e-3));
}

TEST_CASE("TP overlap exposure: bulk and pipeline pay for the SMs the collective's kernel holds") {
  // 16 of 132 SMs: the GEMM runs at 116/132 while both run.
  const double s = 16.0 / 132.0;
  TpCollective bulk{Collective::all_gather, 1, 1e6, TpOverlap::bulk, 10e-3, 1, s};
  // 4 ms beside a 10 ms GEMM: the GEMM loses 4·s ms.
  CHECK(tp_overlap_exposed_s(bulk, 4e-3) == doctest::Approx(4e-3 * s));
  // Longer than the slowed GEMM (10/(1 - s) = 11.38 ms): the collective sets the time.
  CHECK(tp_overlap_exposed_s(bulk, 20e-3) == doctest::Approx(10e-3));
  // Pipeline, 4 splits of a 8 ms GEMM and a 4 ms reduce-scatter: first split 2 ms alone,
  // 6 ms of GEMM beside 3 ms of reduce-scatter (+3·s), last split's 1 ms alone.
  TpCollective pipe{Collective::reduce_scatter, 1, 1e6, TpOverlap::pipeline, 8e-3, 4, s};
  CHECK(tp_overlap_exposed_s(pipe, 4e-3) == doctest::Approx(3e-3 * s + 1e-3));
}

TEST_CASE("TP comm overlap keeps tp_layer_comm's bytes under SP and pairs each collective with a GEMM") {
  TpLayerGemmTimes g;
  g.qkv_fprop = 1e-3;
  g.fc2_fprop = 4e-3;
  const TpLayerComm o = tp_layer_comm_overlapped(4096, 8192, 2, 8, g, 132);
  const TpLayerComm sp = tp_layer_comm(4096, 8192, 2, 8, true);
  CHECK(o.forward_bytes() == doctest::Approx(sp.forward_bytes()));
  CHECK(o.backward_bytes() == doctest::Approx(sp.backward_bytes()));
  REQUIRE(o.forward.size() == 4);
  CHECK(o.forward[0].overlap == TpOverlap::ring_exchange);
  CHECK(o.forward[0].chunks == 8);
  CHECK(o.forward[0].gemm_s == 1e-3);
  CHECK(o.forward[3].overlap == TpOverlap::pipeline);
  CHECK(o.forward[3].gemm_s == 4e-3);
  CHECK(tp_layer_comm_overlapped(4096, 8192, 2, 8, g, 132, Recompute::full).backward.size() == 10);
  CHECK_THROWS_AS(tp_layer_comm_overlapped(4096, 8192, 2, 1, g, 132), std::invalid_argument);
}

TEST_CASE(
    "Megatron's async backward: QKV and MLP-up collectives beside their dgrad and wgrad GEMMs, the rest "
    "block, tp_layer_comm's bytes") {
  TpLayerGemmTimes g;
  g.qkv_dgrad = 1e-3, g.qkv_wgrad = 2e-3, g.fc1_dgrad = 3e-3, g.fc1_wgrad = 4e-3;
  const TpLayerComm a = tp_layer_comm_async(4096, 8192, 2, 8, true, g, 0.25);
  const TpLayerComm sp = tp_layer_comm(4096, 8192, 2, 8, true);
  CHECK(a.forward_bytes() == doctest::Approx(sp.forward_bytes()));
  CHECK(a.backward_bytes() == doctest::Approx(sp.backward_bytes()));
  for (const TpCollective& c : a.forward) CHECK(c.overlap == TpOverlap::none);
  // The output gradient's 2 all-gathers block; the re-gathers pair with dgrad, the
  // reduce-scatters with wgrad.
  REQUIRE(a.backward.size() == 5);
  CHECK(a.backward[0].overlap == TpOverlap::none);
  CHECK(a.backward[0].count == 2);
  CHECK((a.backward[1].op == Collective::all_gather && a.backward[1].gemm_s == 1e-3));
  CHECK((a.backward[2].op == Collective::reduce_scatter && a.backward[2].gemm_s == 2e-3));
  CHECK((a.backward[4].op == Collective::reduce_scatter && a.backward[4].gemm_s == 4e-3));
  // bulk: a 1 ms collective beside the 4 ms wgrad costs 1 ms x the 25% SM share; a 6 ms one
  // outlasts 4 / (1 - 0.25) = 5.33 ms of GEMM and costs 6 - 4 = 2 ms.
  CHECK(tp_overlap_exposed_s(a.backward[4], 1e-3) == doctest::Approx(0.25e-3));
  CHECK(tp_overlap_exposed_s(a.backward[4], 6e-3) == doctest::Approx(2e-3));
  // Without SP: the input gradient's all-reduce beside wgrad, both column-parallel projections.
  const TpLayerComm ar = tp_layer_comm_async(4096, 8192, 2, 8, false, g, 0.25);
  CHECK(ar.backward_bytes() == doctest::Approx(tp_layer_comm(4096, 8192, 2, 8, false).backward_bytes()));
  REQUIRE(ar.backward.size() == 2);
  CHECK((ar.backward[0].op == Collective::all_reduce && ar.backward[0].overlap == TpOverlap::bulk &&
         ar.backward[0].gemm_s == 2e-3));
  CHECK(tp_layer_comm_async(4096, 8192, 2, 8, true, g, 0.25, Recompute::full).backward.size() == 7);
  CHECK_THROWS_AS(tp_layer_comm_async(4096, 8192, 2, 1, true, g, 0.25), std::invalid_argument);
  CHECK_THROWS_AS(tp_layer_comm_async(4096, 8192, 2, 8, true, g, 1.0), std::invalid_argument);
}

TEST_CASE("CP ring attention: cp - 1 steps of local K and V forward, K, V, dK, dV backward") {
  // b·s = 8192 tokens over cp 4: 2048 local tokens, kv_dim 1024, w 2: one K chunk 4,194,304 B.
  const CpLayerComm c = cp_layer_comm(llama70b(), 8192, 2, 4);
  CHECK(c.steps == 3);
  CHECK(c.forward_bytes_per_step == doctest::Approx(8388608.0));    // K + V
  CHECK(c.backward_bytes_per_step == doctest::Approx(16777216.0));  // K, V, dK, dV
  CHECK(c.forward_bytes() == doctest::Approx(25165824.0));
  CHECK(c.backward_bytes() == doctest::Approx(50331648.0));
  CHECK(cp_layer_comm(llama70b(), 8192, 2, 1).forward_bytes() == 0);
  CHECK_THROWS_AS(cp_layer_comm(llama70b(), 8190, 2, 4), std::invalid_argument);
}

TEST_CASE("uneven stages: extra layers go to chunks 1..r, never the first") {
  CHECK(layers_per_stage(80, 4) == std::vector<int>{20, 20, 20, 20});
  // 30 over 4: q 7, r 2 -> chunks 1 and 2 get 8.
  CHECK(layers_per_stage(30, 4) == std::vector<int>{7, 8, 8, 7});
  // 11 over 4: q 2, r 3 = n - 1 -> only the first stays at 2.
  CHECK(layers_per_stage(11, 4) == std::vector<int>{2, 3, 3, 3});
  // 10 over pp 2, vpp 2: chunks {2, 3, 3, 2}; stage 0 holds chunks 0 and 2, stage 1 chunks 1 and 3.
  CHECK(layers_per_chunk(10, 2, 2) == std::vector<int>{2, 3, 3, 2});
  CHECK(layers_per_stage(10, 2, 2) == std::vector<int>{5, 5});
  CHECK(layers_per_stage(4, 4) == std::vector<int>{1, 1, 1, 1});
  CHECK_THROWS_AS(layers_per_stage(3, 4), std::invalid_argument);
}

TEST_CASE("balanced split: a stage moves on once the cumulative cost passes its share, the head counted") {
  // 16 layers + a head of 4 layer-costs over 4 stages: total 20, thresholds 5, 10, 15, 20.
  // Layer j goes to the current stage, which moves on after j > threshold: stage 0 takes
  // 1..6, stage 1 7..11, stage 2 12..16, stage 3 only the head (nanotron's last rank).
  CHECK(balanced_layers_per_stage(16, 4, 4.0) == std::vector<int>{6, 5, 5, 0});
  // No head cost: the layer that crosses each threshold stays behind (21 = 80/4 + 1).
  CHECK(balanced_layers_per_stage(80, 4, 0.0) == std::vector<int>{21, 20, 20, 19});
  // A stage before the last left empty takes a layer from its busier neighbour: {4, 0, 0, 0}
  // becomes {3, 1, 0, 0}, then {2, 1, 1, 0}; the last keeps the head alone.
  CHECK(balanced_layers_per_stage(4, 4, 100.0) == std::vector<int>{2, 1, 1, 0});
  CHECK_THROWS_AS(balanced_layers_per_stage(3, 4, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(balanced_layers_per_stage(8, 2, -1.0), std::invalid_argument);
}

TEST_CASE("balanced split: the head costs V·h over one layer's linear weights") {
  // Llama-2-70B: q and o 8192², k and v 8192·1024 each, MLP 3·8192·28672 per layer.
  const TransformerSpec m = llama70b();
  const double layer = 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672;
  CHECK(head_cost_in_layers(m) == doctest::Approx(32000.0 * 8192 / layer));
  CHECK(split_layers_per_chunk(m, 4, 2, StageSplit::even) == layers_per_chunk(80, 4, 2));
  CHECK_THROWS_AS(split_layers_per_chunk(m, 4, 2, StageSplit::balanced), std::invalid_argument);
  const std::vector<int> balanced = split_layers_per_chunk(m, 4, 1, StageSplit::balanced);
  CHECK(balanced.size() == 4);
  CHECK(balanced.back() <= balanced.front());  // the head's stage holds no more layers than the first
  int sum = 0;
  for (int n : balanced) sum += n;
  CHECK(sum == 80);
  CHECK(parse_stage_split("balanced") == StageSplit::balanced);
  CHECK(name(StageSplit::even) == "even");
  CHECK_THROWS_AS(parse_stage_split("cost"), std::invalid_argument);
}

TEST_CASE("pipeline p2p: b·s·h·w per boundary, divided by t under SP") {
  // 4096·8192·2 = 67,108,864 B; SP over 8: 8,388,608 B.
  CHECK(pipeline_p2p_bytes(4096, 8192, 2, 8, false) == doctest::Approx(67108864.0));
  CHECK(pipeline_p2p_bytes(4096, 8192, 2, 8, true) == doctest::Approx(8388608.0));
  // Sends per micro-batch: the last stage sends one fewer (its last chunk ends the model).
  CHECK(pipeline_sends_per_microbatch(0, 4) == 1);
  CHECK(pipeline_sends_per_microbatch(3, 4) == 0);
  CHECK(pipeline_sends_per_microbatch(0, 4, 2) == 2);
  CHECK(pipeline_sends_per_microbatch(3, 4, 2) == 1);
  CHECK(pipeline_sends_per_microbatch(0, 1) == 0);
  CHECK_THROWS_AS(pipeline_sends_per_microbatch(4, 4), std::invalid_argument);
}

TEST_CASE("bubble: 1F1B and GPipe (p-1)/m, interleaved (p-1)/(v·m), ZB-H1 (p-1)/(3m)") {
  // p 4, m 8: 3/8; v 2: 3/16; ZB-H1: 3/24.
  CHECK(bubble_fraction(PipelineScheduleKind::one_f_one_b, 4, 8) == doctest::Approx(0.375));
  CHECK(bubble_fraction(PipelineScheduleKind::gpipe, 4, 8) == doctest::Approx(0.375));
  CHECK(bubble_fraction(PipelineScheduleKind::interleaved, 4, 8, 2) == doctest::Approx(0.1875));
  CHECK(bubble_fraction(PipelineScheduleKind::zb_h1, 4, 8) == doctest::Approx(0.125));
  // ZB-H1 with no weight-gradient work to defer (T_W = 0) is 1F1B: 3·2 / (8·2).
  CHECK(bubble_fraction_zb_h1(4, 8, 1, 1, 0) == doctest::Approx(0.375));
  // T_F 1, T_B 1.2, T_W 0.8: 3·1.4 / (8·3) = 0.175.
  CHECK(bubble_fraction_zb_h1(4, 8, 1, 1.2, 0.8) == doctest::Approx(0.175));
  CHECK(bubble_fraction(PipelineScheduleKind::one_f_one_b, 1, 1) == 0);
  CHECK_THROWS_AS(bubble_fraction_1f1b(4, 0), std::invalid_argument);
}

TEST_CASE("1F1B keeps p micro-batches on stage 0, p - i on stage i; GPipe all m") {
  CHECK(in_flight_microbatches(PipelineScheduleKind::one_f_one_b, 0, 4, 8) == 4);
  CHECK(in_flight_microbatches(PipelineScheduleKind::one_f_one_b, 3, 4, 8) == 1);
  CHECK(in_flight_microbatches(PipelineScheduleKind::one_f_one_b, 0, 4, 2) == 2);  // m < p
  CHECK(in_flight_microbatches(PipelineScheduleKind::zb_h1, 1, 4, 8) == 3);
  CHECK(in_flight_microbatches(PipelineScheduleKind::gpipe, 2, 4, 8) == 8);
  CHECK_THROWS_AS(in_flight_microbatches(PipelineScheduleKind::gpipe, 4, 4, 8), std::invalid_argument);
}

TEST_CASE("interleaved stage 0 keeps p·(1 + (p-1)/(p·v)) micro-batches") {
  // p 4, v 2, m 8: warm-up 2·3 + 1·4 = 10 chunks, +1 = 11 chunks = 5.5 = 4·(1 + 3/8).
  CHECK(in_flight_microbatches(PipelineScheduleKind::interleaved, 0, 4, 8, 2) == doctest::Approx(5.5));
  CHECK(in_flight_microbatches(PipelineScheduleKind::interleaved, 0, 4, 8, 2) ==
        doctest::Approx(4 * (1 + 3.0 / (4 * 2))));
  // Last stage: 0 + 4 + 1 = 5 chunks = 2.5.
  CHECK(in_flight_microbatches(PipelineScheduleKind::interleaved, 3, 4, 8, 2) == doctest::Approx(2.5));
  // m = 1: only its 2 chunks exist.
  CHECK(in_flight_microbatches(PipelineScheduleKind::interleaved, 0, 4, 1, 2) == doctest::Approx(1.0));
}

TEST_CASE("Korthikanti Table 2: sbh(10 + 24/t + 5as/(ht)) without SP, sbh(34/t + 5as/(ht)) with SP") {
  // GPT-3 175B's layer: s 2048, b 1, h 12288, a 96, t 8. sbh = 25,165,824;
  // 5as/(ht) = 5·96·2048 / (12288·8) = 10.
  const double sbh = 25165824.0;
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, false) == doctest::Approx(sbh * 23));
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, true) == doctest::Approx(sbh * 14.25));
  // Selective recompute drops the score term: 10 + 3 = 13; with SP 34/8 = 4.25.
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, false, Recompute::selective) ==
        doctest::Approx(sbh * 13));
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, true, Recompute::selective) ==
        doctest::Approx(sbh * 4.25));
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, true, Recompute::full) ==
        doctest::Approx(sbh * 2));
  // t = 1: both rows are Sec. 4.1's sbh(34 + 5as/h) = sbh(34 + 80).
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 1, false) == doctest::Approx(sbh * 114));
  CHECK(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 1, true) == doctest::Approx(sbh * 114));
  CHECK_THROWS_AS(korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 0, false), std::invalid_argument);
}

TEST_CASE("Korthikanti at t = 1 agrees with memory's per-layer activations for a GPT shape") {
  TransformerSpec gpt;
  gpt.name = "gpt-shape";
  gpt.layers = 2;
  gpt.hidden = 1024;
  gpt.heads = 16;
  gpt.kv_heads = 16;
  gpt.ffn_hidden = 4096;
  gpt.vocab = 1000;
  gpt.seq_len = 512;
  gpt.norm = Norm::layernorm;
  gpt.dropout = 0.1;  // Korthikanti counts the dropout masks
  CHECK(korthikanti_activation_bytes_per_layer(512, 2, 1024, 16, 1, false) ==
        doctest::Approx(activation_bytes_per_layer(gpt, 2, 512, Recompute::none, false)));
}

TEST_CASE("vocab-parallel embedding, head and loss: one all-reduce each way, 3 fp32 loss all-reduces") {
  // 4096 tokens, h 8192, w 2: 67,108,864 B per activation collective; loss 3·4096·4 = 49,152 B.
  const double one = 67108864.0;
  const TpLayerComm plain = tp_embedding_head_comm(4096, 8192, 2, 8, false);
  CHECK(plain.forward_bytes() == doctest::Approx(one + 49152));
  CHECK(plain.backward_bytes() == doctest::Approx(one));
  // SP: forward RS (embedding) + AG (head) + loss; backward AG (embedding), RS + re-gather (head).
  const TpLayerComm sp = tp_embedding_head_comm(4096, 8192, 2, 8, true);
  CHECK(sp.forward_bytes() == doctest::Approx(2 * one + 49152));
  CHECK(sp.backward_bytes() == doctest::Approx(3 * one));
  CHECK(tp_embedding_head_comm(4096, 8192, 2, 1, true).forward.empty());
}

TEST_CASE("stage parameters: matrices and vocab split by t, norms replicated, embedding first, head last") {
  const TransformerSpec m = llama70b();
  // Per layer: attention 2·8192² + 2·8192·1024 = 150,994,944; MLP 3·8192·28672 =
  // 704,643,072; two RMSNorms 16,384. Per rank at t 8: 855,638,016 / 8 + 16,384
  // = 106,971,136; 20 layers a stage = 2,139,422,720. Word table 32000/8·8192 = 32,768,000.
  const StageParameters first = stage_parameters_per_gpu(m, 0, 4, 1, 8);
  CHECK(first.layers == doctest::Approx(2139422720.0));
  CHECK(first.embedding == doctest::Approx(32768000.0));
  CHECK(first.head == 0);
  const StageParameters mid = stage_parameters_per_gpu(m, 1, 4, 1, 8);
  CHECK(mid.total() == doctest::Approx(2139422720.0));
  // Last: final norm 8192 + untied LM head 32,768,000.
  const StageParameters last = stage_parameters_per_gpu(m, 3, 4, 1, 8);
  CHECK(last.head == doctest::Approx(32776192.0));
  // t = 1, p = 1: the whole model.
  CHECK(stage_parameters_per_gpu(m, 0, 1, 1, 1).total() == doctest::Approx(static_cast<double>(parameter_count(m))));
  // Tied embeddings and p > 1: the last stage holds a copy of the word table; p = 1 does not.
  TransformerSpec tied = m;
  tied.tied_embeddings = true;
  CHECK(stage_parameters_per_gpu(tied, 3, 4, 1, 8).head == doctest::Approx(32776192.0));
  CHECK(stage_parameters_per_gpu(tied, 0, 1, 1, 8).head == doctest::Approx(8192.0));
  CHECK_THROWS_AS(stage_parameters_per_gpu(m, 4, 4, 1, 8), std::invalid_argument);
  CHECK_THROWS_AS(stage_parameters_per_gpu(m, 0, 4, 1, 16), std::invalid_argument);
}

TEST_CASE("CP ring under TP: a rank exchanges only its kv_heads/t heads") {
  // b·s = 8192 over cp 4 and tp 8: 2048 tokens x kv_dim 1024 / 8 x 2 B = 524,288 B per K chunk.
  const CpLayerComm c = cp_layer_comm(llama70b(), 8192, 2, 4, 8);
  CHECK(c.forward_bytes_per_step == doctest::Approx(2 * 524288.0));
  CHECK(c.backward_bytes_per_step == doctest::Approx(4 * 524288.0));
  CHECK_THROWS_AS(cp_layer_comm(llama70b(), 8192, 2, 4, 16), std::invalid_argument);  // 16 does not divide 8 KV heads
}

TEST_CASE("CP ring exposure: steps x max(0, step - attention/cp); hidden when a chunk's attention is longer") {
  // cp 4, 3 steps; attention 8 ms -> 2 ms a chunk.
  CHECK(cp_ring_exposed_s(3, 1e-3, 8e-3, 4) == 0);                          // 1 ms transfers hide
  CHECK(cp_ring_exposed_s(3, 2e-3, 8e-3, 4) == 0);                          // the boundary: equal
  CHECK(cp_ring_exposed_s(3, 5e-3, 8e-3, 4) == doctest::Approx(3 * 3e-3));  // 3 ms of each 5 ms show
  CHECK(cp_ring_exposed_s(0, 5e-3, 8e-3, 1) == 0);                          // cp 1: no ring
  CHECK_THROWS_AS(cp_ring_exposed_s(3, -1, 1, 4), std::invalid_argument);
}

TEST_CASE(
    "CP all-gather (Llama 3): forward gathers K and V of the whole sequence, backward again plus a "
    "reduce-scatter of dK, dV") {
  // b·s = 8192, kv_dim 1024, w 2: K and V of the whole sequence 2 x 8192 x 1024 x 2 = 33,554,432 B.
  const TpLayerComm c = cp_all_gather_comm(llama70b(), 8192, 2, 4);
  REQUIRE(c.forward.size() == 1);
  CHECK(c.forward[0].op == Collective::all_gather);
  CHECK(c.forward_bytes() == doctest::Approx(33554432.0));
  CHECK(c.backward_bytes() == doctest::Approx(2 * 33554432.0));
  CHECK(cp_all_gather_comm(llama70b(), 8192, 2, 4, 8).forward_bytes() == doctest::Approx(33554432.0 / 8));
  CHECK(cp_all_gather_comm(llama70b(), 8192, 2, 1).forward.empty());
  CHECK(parse_cp_comm("all_gather") == CpCommKind::all_gather);
  CHECK(name(CpCommKind::ring) == "ring");
  CHECK_THROWS_AS(parse_cp_comm("allgather"), std::invalid_argument);
}

TEST_CASE("CP placement, Megatron order tp-cp-dp-pp: the gradient group is the DP x CP ranks of one TP rank") {
  // tp 2, cp 2, dp 2, pp 2 on 8-GPU nodes: a CP group (stride 2) sits in one node; the
  // gradient group {dp x cp} = ranks 0, 2, 4, 6 of node 0: 4 ranks, one node, 2 groups per node.
  const ParallelLayout l = layout(2, 2, 2, 2);
  const GroupPlacement cp = group_placement(l, GroupKind::cp, 8);
  CHECK(cp.ranks == 2);
  CHECK(cp.nodes_spanned == 1);
  const ParallelLayout g = gradient_group_layout(l);
  CHECK(g.dp == 4);
  CHECK(g.cp == 1);
  const GroupPlacement grad = group_placement(g, GroupKind::dp, 8);
  CHECK(grad.ranks == 4);
  CHECK(grad.ranks_per_node == 4);
  CHECK(grad.groups_sharing_a_node == 2);
  for (int dp = 0; dp < 2; ++dp)
    for (int c = 0; c < 2; ++c) CHECK(rank_of(l, RankCoords{0, c, dp, 0}) % 2 == 0);  // TP rank 0 of stage 0
}

TEST_CASE("CP rules: cp divides the sequence, 2·cp for causal load balance") {
  TransformerSpec s = llama70b();
  CHECK(cp_sequence_chunks(s, 8) == 16);        // 4096 / 16 chunks
  CHECK(4104 % cp_sequence_chunks(s, 8) != 0);  // 4104 = 8 x 513
  s.kind = ModelKind::encoder;                  // no causal mask: cp alone must divide
  CHECK(cp_sequence_chunks(s, 8) == 8);
  CHECK(4104 % cp_sequence_chunks(s, 8) == 0);
}

TEST_CASE(
    "expert-parallel groups: ep consecutive ranks of a stage's DP x CP ranks, inside a node when ep <= its GPUs") {
  ParallelLayout l;
  l.dp = 64;
  l.pp = 4;
  const ParallelLayout e8 = expert_parallel_layout(l, 8);
  CHECK(e8.tp == 8);
  CHECK(e8.dp == 8);
  CHECK(e8.pp == 4);
  CHECK(e8.gpus() == l.gpus());
  const GroupPlacement g8 = group_placement(e8, GroupKind::tp, 8);
  CHECK(g8.nodes_spanned == 1);
  CHECK(g8.ranks_per_node == 8);
  const GroupPlacement g64 = group_placement(expert_parallel_layout(l, 64), GroupKind::tp, 8);
  CHECK(g64.nodes_spanned == 8);
  CHECK(g64.ranks_per_node == 8);
  CHECK(g64.groups_sharing_a_node == 1);
  // The expert-data-parallel group: the 64/ep ranks holding the same experts.
  CHECK(expert_parallel_layout(l, 64).dp == 1);
  CHECK_THROWS_AS(expert_parallel_layout(l, 128), std::invalid_argument);  // ep above dp
}

TEST_CASE("parallel folding: expert-parallel groups span a stage's TP x CP x DP ranks, experts not split by TP") {
  ParallelLayout l;
  l.tp = 2;
  l.dp = 16;
  l.pp = 8;
  // Qwen3-235B on 256 H100 (Megatron-Bridge): tp 2 x dp 16 = 32 ranks per stage, ep 32.
  const ParallelLayout e32 = expert_parallel_layout(l, 32);
  CHECK(e32.tp == 32);
  CHECK(e32.dp == 1);
  CHECK(e32.pp == 8);
  CHECK(e32.gpus() == l.gpus());
  CHECK(group_placement(e32, GroupKind::tp, 8).nodes_spanned == 4);
  CHECK(expert_parallel_layout(l, 8).dp == 4);  // 8 consecutive ranks, 4 expert-DP replicas
  l.cp = 2;
  l.dp = 8;
  CHECK(expert_parallel_layout(l, 32).dp == 1);
  CHECK_THROWS_AS(expert_parallel_layout(l, 64), std::invalid_argument);  // above tp x cp x dp
  CHECK_THROWS_AS(expert_parallel_layout(l, 3), std::invalid_argument);
}

TEST_CASE("a MoE layer's MLP collectives: kept in dense layers and beside shared experts, dropped elsewhere") {
  TransformerSpec dense;
  dense.layers = 4;
  CHECK(tp_mlp_layer_share(dense) == 1.0);
  TransformerSpec moe = dense;
  moe.moe = MoeSpec{8, 2, 0, 1024, 0, 0, 1};
  CHECK(tp_mlp_layer_share(moe) == 0.0);
  moe.moe->first_dense_layers = 1;  // 3 of 4 layers route
  CHECK(tp_mlp_layer_share(moe) == doctest::Approx(0.25));
  moe.moe->shared_experts = 1;
  CHECK(tp_mlp_layer_share(moe) == 1.0);

  for (bool sp : {false, true}) {
    const TpLayerComm all = tp_layer_comm(1000, 500, 2.0, 4, sp);
    TpLayerComm none = all;
    scale_tp_collectives(none, 0.0);
    CHECK(none.forward_bytes() == doctest::Approx(all.forward_bytes() / 2));  // attention's half
    CHECK(none.backward_bytes() == doctest::Approx(all.backward_bytes() / 2));
    TpLayerComm quarter = all;
    scale_tp_collectives(quarter, 0.25);
    CHECK(quarter.forward_bytes() == doctest::Approx(all.forward_bytes() * 0.625));
    TpLayerComm same = all;
    scale_tp_collectives(same, 1.0);
    CHECK(same.forward.size() == all.forward.size());
    CHECK(same.backward_bytes() == all.backward_bytes());
  }
  // Overlapped: the collectives beside the MLP's GEMMs go, with the GEMM time they hid behind.
  TpLayerGemmTimes g;
  g.qkv_fprop = g.proj_fprop = g.fc1_fprop = g.fc2_fprop = 1e-3;
  TpLayerComm over = tp_layer_comm_overlapped(1000, 500, 2.0, 4, g, 132);
  scale_tp_collectives(over, 0.0);
  CHECK(over.forward.size() == 2);
  CHECK(over.backward.size() == 3);
  for (const TpCollective& c : over.forward) CHECK(c.mlp_count == 0);
  CHECK_THROWS_AS(scale_tp_collectives(over, 1.5), std::invalid_argument);
}

TEST_CASE("MoE and MLA under TP need SP; ep divides a stage's TP x CP x DP ranks") {
  const TransformerSpec* mix = find_model("mixtral-8x7b");
  const TransformerSpec* dsv3 = find_model("deepseek-v3");
  REQUIRE(mix != nullptr);
  REQUIRE(dsv3 != nullptr);
  LayoutContext c;
  c.gpus = 64;
  c.gpus_per_node = 8;
  c.nodes = 8;
  c.seq_len = 4096;
  c.micro_batches = 16;
  ParallelLayout l = with(2, 1, 4);  // 16 ranks per stage
  l.ep = 8;
  CHECK(layout_violations(l, *mix, c) == Rules{LayoutRule::moe_sp});
  l.sp = true;
  CHECK(layout_violations(l, *mix, c).empty());
  l.ep = 16;                                                              // all 16 ranks of a stage: folded over TP
  CHECK(layout_violations(l, *mix, c) == Rules{LayoutRule::ep_experts});  // Mixtral has 8 experts
  l = with(1, 1, 4);
  l.ep = 32;  // 16 ranks per stage
  CHECK(layout_violations(l, *dsv3, c) == Rules{LayoutRule::ep_ranks});
  l.ep = 16;
  CHECK(layout_violations(l, *dsv3, c).empty());
  l.tp = 2;
  l.ep = 8;
  CHECK(layout_violations(l, *dsv3, c) == Rules{LayoutRule::moe_sp, LayoutRule::mla_tp});
  l.sp = true;
  CHECK(layout_violations(l, *dsv3, c).empty());
}

TEST_CASE("MLA under TP: up projections split the heads, down projections whole on a rank's own tokens") {
  const TransformerSpec* dsv3 = find_model("deepseek-v3");
  REQUIRE(dsv3 != nullptr);
  const std::vector<GemmShape> one = layer_gemms(*dsv3, 4096);
  const std::vector<GemmShape> two = tp_layer_gemms(*dsv3, 4096, 2);
  REQUIRE(one.size() == two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    const std::string& n = one[i].name;
    if (n == "q_a" || n == "kv_a") {
      CHECK(two[i].m == 2048);
      CHECK(two[i].n == one[i].n);
    } else if (n == "q_b" || n == "kv_b") {
      CHECK(two[i].n == one[i].n / 2);
    } else if (n == "attn_out") {
      CHECK(two[i].k == one[i].k / 2);
    }
  }
  // Attention's input collectives move the latents: (1536 + 512 + 64) / 7168 of h.
  CHECK(tp_attention_input_share(*dsv3) == doctest::Approx(2112.0 / 7168));
  TransformerSpec dense;
  dense.hidden = 4096;
  CHECK(tp_attention_input_share(dense) == 1.0);
  TransformerSpec no_q_latent = *dsv3;  // the query projection gathers the hidden states
  no_q_latent.mla->q_lora_rank = 0;
  CHECK(tp_attention_input_share(no_q_latent) == doctest::Approx((7168.0 + 576) / 7168));
  const TpLayerComm all = tp_layer_comm(1000, 500, 2.0, 4, true);
  TpLayerComm mla = all;
  scale_tp_collectives(mla, 1.0, 0.25);
  // Forward: one of the two all-gathers at a quarter; backward: one re-gather and one
  // reduce-scatter of the input gradient.
  CHECK(mla.forward_bytes() == doctest::Approx(all.forward_bytes() - 0.75 * 1000 * 500 * 2));
  CHECK(mla.backward_bytes() == doctest::Approx(all.backward_bytes() - 2 * 0.75 * 1000 * 500 * 2));
  CHECK_THROWS_AS(scale_tp_collectives(mla, 1.0, 0.0), std::invalid_argument);
}
