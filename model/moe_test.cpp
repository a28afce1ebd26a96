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
