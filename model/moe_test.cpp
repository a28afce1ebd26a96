// Mixture-of-experts counts, expert work and all-to-all bytes against their formulas and the
// published Mixtral-8x7B counts.
#include "model/moe.hpp"

#include "topologies/fabric.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

using namespace stepcast;

namespace {

/// Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): 32 layers, h 4096, 32 heads,
/// 8 KV heads, 8 experts of SwiGLU width 14336, top-2, V 32000, untied embeddings, RMSNorm.
TransformerSpec mixtral_dense_shape() {
  TransformerSpec s;
  s.name = "mixtral-shape";
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.kv_heads = 8;
  s.ffn_hidden = 14336;
  s.gated_mlp = true;
  s.vocab = 32000;
  s.seq_len = 4096;
  s.tied_embeddings = false;
  s.norm = Norm::rmsnorm;
  return s;
}

MoeSpec mixtral_moe() {
  MoeSpec m;
  m.experts = 8;
  m.top_k = 2;
  m.expert_ffn = 14336;
  return m;
}

}  // namespace

TEST_CASE("MoE layers: every k-th layer after the first dense ones") {
  MoeSpec m = mixtral_moe();
  CHECK(moe_layer_count(32, m) == 32);
  m.first_dense_layers = 3;  // DeepSeek-V3: 61 layers, the first 3 dense
  CHECK(moe_layer_count(61, m) == 58);
  m.first_dense_layers = 0;
  m.moe_every = 2;  // layers 0, 2, ..., 30
  CHECK(moe_layer_count(32, m) == 16);
  CHECK(moe_layer_count(31, m) == 16);
  m.first_dense_layers = 40;
  CHECK(moe_layer_count(32, m) == 0);
  m.top_k = 9;  // more than the 8 experts
  CHECK_THROWS_AS(moe_layer_count(32, m), std::invalid_argument);
}

TEST_CASE("Mixtral-8x7B: 46.7B parameters in all, 12.9B active per token (Mistral AI), within 1%") {
  const MoeParameters p = moe_parameters(mixtral_dense_shape(), mixtral_moe());
  CHECK(static_cast<double>(p.total) == doctest::Approx(46.7e9).epsilon(0.01));
  CHECK(static_cast<double>(p.active) == doctest::Approx(12.9e9).epsilon(0.01));
}

TEST_CASE("one expert with top-1 and no shared expert is the dense model plus its router") {
  TransformerSpec s = mixtral_dense_shape();
  MoeSpec one;
  one.experts = 1;
  one.top_k = 1;
  one.expert_ffn = s.ffn_hidden;
  const MoeParameters p = moe_parameters(s, one);
  CHECK(p.total == parameter_count(s) + s.layers * s.hidden);  // + a 4096 x 1 router per layer
  CHECK(p.active == p.total);
  const ExpertWork w = expert_work(s, one, 4096, 1);
  CHECK(w.rows_per_expert == doctest::Approx(4096));
  CHECK(w.flops_forward == doctest::Approx(2.0 * 4096 * 3 * 4096 * 14336));
  CHECK(moe_all_to_all_bytes(s, one, 4096, 2, 1) == 0);
}

TEST_CASE("shared experts count in every token's active parameters; routed ones k of E") {
  TransformerSpec s = mixtral_dense_shape();
  MoeSpec m;
  m.experts = 64;
  m.top_k = 6;
  m.shared_experts = 2;
  m.expert_ffn = 1408;
  const std::int64_t e = 3 * 4096 * 1408;  // one gated expert
  CHECK(moe_mlp_parameters(s, m) == 64 * e + 2 * e + 4096 * 64);
  CHECK(moe_mlp_active_parameters(s, m) == 6 * e + 2 * e + 4096 * 64);
  m.shared_ffn = 5632;  // a wider shared expert
  CHECK(moe_mlp_active_parameters(s, m) == 6 * e + 2 * (3 * 4096 * 5632) + 4096 * 64);
}

TEST_CASE("expert parallelism: tokens·k·ep/E rows per local expert; all-to-all tokens·k·h·w·(ep-1)/ep") {
  const TransformerSpec s = mixtral_dense_shape();
  const MoeSpec m = mixtral_moe();
  // 8 experts over 8 ranks, 4096 tokens per rank, top-2: one local expert with 8192 rows.
  const ExpertWork w = expert_work(s, m, 4096, 8);
  CHECK(w.local_experts == 1);
  CHECK(w.rows_per_expert == doctest::Approx(4096.0 * 2 * 8 / 8));
  // Busiest rank 1.25x the mean.
  CHECK(expert_work(s, m, 4096, 8, 1.25).rows_per_expert == doctest::Approx(1.25 * 8192));
  // 4096 tokens x 2 x 4096 x 2 bytes = 64 MiB, 7/8 of it leaves the rank.
  CHECK(moe_all_to_all_bytes(s, m, 4096, 2, 8) == doctest::Approx(4096.0 * 2 * 4096 * 2 * 7 / 8));
  CHECK_THROWS_AS(expert_work(s, m, 4096, 3), std::invalid_argument);  // 3 does not divide 8
  CHECK_THROWS_AS(expert_work(s, m, 4096, 8, 0.9), std::invalid_argument);
}

TEST_CASE("under TP with SP a rank routes its own b·s/t tokens; t must divide them") {
  CHECK(moe_tokens_per_rank(4096, 1) == 4096);
  CHECK(moe_tokens_per_rank(4096, 2) == 2048);
  CHECK_THROWS_AS(moe_tokens_per_rank(4097, 2), std::invalid_argument);
  CHECK_THROWS_AS(moe_tokens_per_rank(4096, 0), std::invalid_argument);
}

TEST_CASE("all-to-all: NVLink peers at the intra rate, other nodes' peers at the node's NIC share") {
  CommFabric f;
  f.intra.ranks = 8;
  f.intra.bw_GBps = 370;
  CHECK(all_to_all_time_s(1e9, f, 10e-6) == doctest::Approx(10e-6 + 1e9 / 370e9));
  // Two nodes of 8: 7 of 15 peers in the node, 8 in the other over 400 GB/s of NICs shared
  // by 8 GPUs (50 GB/s each): the NICs are the bottleneck.
  f.inter = FabricLevel{};
  f.inter->ranks = 2;
  f.inter->bw_GBps = 400;
  const double nvlink = 1e9 * 7.0 / 15 / 370e9, nic = 1e9 * 8.0 / 15 / 50e9;
  CHECK(all_to_all_time_s(1e9, f, 0) == doctest::Approx(std::max(nvlink, nic)));
  CHECK(all_to_all_time_s(1e9, f, 0) == doctest::Approx(nic));
  CommFabric one;
  CHECK(all_to_all_time_s(1e9, one, 10e-6) == 0);
}

TEST_CASE("every MoE catalog entry's total and active counts match the published ones") {
  // Published counts are rounded: 46.7B, 141B, 30.5B, 671B (total) within 1%; active
  // 12.9B, 39B within 1%; 3.3B (Qwen3-30B-A3B) and 37B (DeepSeek-V3) are given to two
  // significant figures, so within 1% plus half their last digit (0.05B, 0.5B).
  int seen = 0;
  for (const TransformerSpec& spec : model_catalog()) {
    if (!spec.moe) continue;
    ++seen;
    REQUIRE(spec.published_params.has_value());
    REQUIRE(spec.published_active_params.has_value());
    const double total = static_cast<double>(parameter_count(spec));
    const double active = static_cast<double>(active_parameter_count(spec));
    const double pub_total = static_cast<double>(*spec.published_params);
    const double pub_active = static_cast<double>(*spec.published_active_params);
    // Kimi-K2's README gives '1T' and '32B' (one and two figures): the shape gives 1.026T and 32.9B.
    const bool kimi = spec.name == "kimi-k2";
    CHECK_MESSAGE(std::abs(total / pub_total - 1) < (kimi ? 0.03 : 0.01), spec.name, " total ", total);
    const double digit = kimi                                              ? 1e9
                         : pub_active < 1e10                               ? 0.05e9
                         : pub_active < 1e11 && spec.name == "deepseek-v3" ? 0.5e9
                                                                           : 0.0;
    // gpt-oss's card counts the unembedding and not the input embedding among the active.
    const double counted = spec.name == "gpt-oss-120b"
                               ? active - static_cast<double>(spec.vocab) * static_cast<double>(spec.hidden)
                               : active;
    CHECK_MESSAGE(std::abs(counted - pub_active) <= 0.01 * pub_active + digit, spec.name, " active ", counted);
    CHECK(active < total);
  }
  CHECK(seen >= 4);
  const TransformerSpec* v3 = find_model("deepseek-v3");
  REQUIRE(v3 != nullptr);
  CHECK(v3->mla.has_value());
  CHECK(moe_layer_count(v3->layers, *v3->moe) == 58);
}

TEST_CASE(
    "one expert, top-1, no shared expert: the MoE model's counts and FLOPs are the dense model's, "
    "but for the 1-wide router") {
  TransformerSpec dense = mixtral_dense_shape();
  TransformerSpec moe = dense;
  moe.moe = MoeSpec{1, 1, 0, dense.ffn_hidden, 0, 0, 1};
  // The router of one expert is h x 1: h parameters a MoE layer adds; nothing else differs.
  const std::int64_t router = dense.layers * dense.hidden;
  CHECK(parameter_count(moe) == parameter_count(dense) + router);
  CHECK(active_parameter_count(moe) == parameter_count(moe));
  FlopsOptions o;
  const StepFlops fd = training_flops(dense, 4096, 8192, o);
  const StepFlops fm = training_flops(moe, 4096, 8192, o);
  // Router GEMM: 2 FLOPs per weight per token forward, twice that backward; MFU: 6 per weight.
  CHECK(fm.forward - fd.forward == doctest::Approx(2.0 * router * 8192));
  CHECK(fm.backward - fd.backward == doctest::Approx(4.0 * router * 8192));
  CHECK(fm.model - fd.model == doctest::Approx(6.0 * router * 8192));
  // The expert part alone (the layers' MLPs less the router) is exactly the dense MLP.
  CHECK(parameter_breakdown(moe).mlp - router == parameter_breakdown(dense).mlp);
}

TEST_CASE("a MoE model's FLOPs use its active parameters: 6·P_active per token plus attention") {
  const TransformerSpec* m = find_model("mixtral-8x7b");
  REQUIRE(m != nullptr);
  FlopsOptions o;
  const double tokens = 4096;
  const StepFlops f = training_flops(*m, 4096, tokens, o);
  const double attention = 12.0 * 32 * 4096 * 4096;  // 12·L·q·s
  CHECK(f.model == doctest::Approx((6.0 * static_cast<double>(active_parameter_count(*m)) + attention) * tokens));
  CHECK(f.model < 6.0 * static_cast<double>(parameter_count(*m)) * tokens);
}

TEST_CASE("MoE layer GEMMs: E/ep groups of tokens·k·ep/E rows, the router and the shared experts") {
  const TransformerSpec* v3 = find_model("deepseek-v3");
  REQUIRE(v3 != nullptr);
  const auto g = moe_layer_gemms(*v3, *v3->moe, 4096, 64, 1.0);
  REQUIRE(g.size() == 5);
  CHECK(g[0].shape.name == "router");
  CHECK(g[0].shape.n == 256);
  CHECK(g[1].groups == 4);                     // 256 experts over 64 ranks
  CHECK(g[1].shape.m == 4096 * 8 * 64 / 256);  // 8192 rows per local expert
  CHECK(g[1].shape.count_per_layer == 2);      // gate and up
  CHECK(g[3].shape.n == 2048);                 // one shared expert
  // Imbalance 1.5 scales the rows of the busiest rank.
  CHECK(moe_layer_gemms(*v3, *v3->moe, 4096, 64, 1.5)[1].shape.m == 12288);
  CHECK(moe_permutation_bytes(*v3, *v3->moe, 4096, 2) == 4.0 * 4096 * 8 * 7168 * 2);
}

TEST_CASE(
    "combined 1F1B layer pair: the compute alone when the all-to-alls are free; each all-to-all longer than "
    "the compute it sits beside shows; never below either stream's own work") {
  CombinedLayerPair p;
  p.attn_fwd_s = 1;
  p.attn_bwd_s = 2;
  p.mlp_fwd_s = 1;
  p.mlp_bwd_dgrad_s = 0.5;
  p.mlp_bwd_wgrad_s = 0.5;
  CHECK(combined_layer_pair_s(p) == doctest::Approx(5));
  // Short all-to-alls hide: combine_bwd behind attn_fwd, the dispatches behind the MLP's
  // backward and forward, combine_fwd behind attn_bwd.
  p.combine_bwd_s = p.dispatch_fwd_s = p.dispatch_bwd_s = p.combine_fwd_s = 0.4;
  CHECK(combined_layer_pair_s(p) == doctest::Approx(5));
  // combine_bwd longer than attn_fwd delays mlp_bwd by the difference.
  CombinedLayerPair q = p;
  q.combine_bwd_s = 1.5;
  CHECK(combined_layer_pair_s(q) == doctest::Approx(combined_layer_pair_s(p) + 0.5));
  // Huge all-to-alls: the communication stream sets the time.
  CombinedLayerPair r = p;
  r.combine_bwd_s = r.dispatch_fwd_s = r.dispatch_bwd_s = r.combine_fwd_s = 10;
  CHECK(combined_layer_pair_s(r) >= 40);
  CHECK(combined_layer_pair_s(r) >= 5);
}

TEST_CASE("MoE dispatcher names round-trip; an unknown one is refused naming the choices") {
  for (const std::string& n : moe_dispatcher_names()) CHECK(name(parse_moe_dispatcher(n)) == n);
  CHECK_THROWS_WITH_AS(parse_moe_dispatcher("nccl"), doctest::Contains("alltoall, hybridep, deepep"),
                       std::invalid_argument);
}
