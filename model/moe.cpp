#include "model/moe.hpp"

#include "topologies/fabric.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace stepcast {

namespace {

void check(const MoeSpec& m) {
  if (m.experts < 1 || m.top_k < 1 || m.top_k > m.experts || m.shared_experts < 0 || m.expert_ffn < 1 ||
      m.shared_ffn < 0 || m.first_dense_layers < 0 || m.moe_every < 1)
    throw std::invalid_argument(
        "MoE spec: expected experts >= 1, 1 <= top_k <= experts, shared_experts >= 0, "
        "expert_ffn >= 1, shared_ffn >= 0, first_dense_layers >= 0, moe_every >= 1");
}

std::int64_t shared_width(const MoeSpec& m) { return m.shared_ffn > 0 ? m.shared_ffn : m.expert_ffn; }

}  // namespace

std::int64_t moe_layer_count(std::int64_t layers, const MoeSpec& moe) {
  check(moe);
  if (layers < 1) throw std::invalid_argument("MoE: layers must be >= 1");
  if (layers <= moe.first_dense_layers) return 0;
  return (layers - moe.first_dense_layers + moe.moe_every - 1) / moe.moe_every;
}

std::int64_t moe_tokens_per_rank(std::int64_t rows, int tp) {
  if (rows < 1 || tp < 1 || rows % tp != 0)
    throw std::invalid_argument("MoE tokens per rank: tp " + std::to_string(tp) + " must divide the " +
                                std::to_string(rows) + " rows");
  return rows / tp;
}

std::int64_t expert_parameters(std::int64_t hidden, std::int64_t ffn, bool gated) {
  return (gated ? 3 : 2) * hidden * ffn;
}

std::int64_t moe_mlp_parameters(const TransformerSpec& spec, const MoeSpec& moe) {
  check(moe);
  const std::int64_t h = spec.hidden;
  return moe.experts * expert_parameters(h, moe.expert_ffn, spec.gated_mlp) +
         moe.shared_experts * expert_parameters(h, shared_width(moe), spec.gated_mlp) + h * moe.experts;
}

std::int64_t moe_mlp_active_parameters(const TransformerSpec& spec, const MoeSpec& moe) {
  check(moe);
  const std::int64_t h = spec.hidden;
  return moe.top_k * expert_parameters(h, moe.expert_ffn, spec.gated_mlp) +
         moe.shared_experts * expert_parameters(h, shared_width(moe), spec.gated_mlp) + h * moe.experts;
}

MoeParameters moe_parameters(const TransformerSpec& spec, const MoeSpec& moe) {
  TransformerSpec dense = spec;  // the same model with every layer's dense MLP
  dense.moe.reset();
  const ParameterBreakdown b = parameter_breakdown(dense);
  const std::int64_t n = moe_layer_count(spec.layers, moe);
  const std::int64_t dense_mlp = b.mlp / spec.layers;
  const std::int64_t dense_total = b.total() - n * dense_mlp;
  return MoeParameters{dense_total + n * moe_mlp_parameters(spec, moe),
                       dense_total + n * moe_mlp_active_parameters(spec, moe)};
}

ExpertWork expert_work(const TransformerSpec& spec, const MoeSpec& moe, double tokens, int ep, double imbalance) {
  check(moe);
  if (ep < 1 || moe.experts % ep != 0)
    throw std::invalid_argument("expert parallelism " + std::to_string(ep) + " must divide the " +
                                std::to_string(moe.experts) + " experts");
  if (tokens < 0 || imbalance < 1) throw std::invalid_argument("expert work: tokens >= 0 and imbalance >= 1");
  ExpertWork w;
  w.local_experts = moe.experts / ep;
  w.rows_per_expert = tokens * static_cast<double>(moe.top_k) * ep / static_cast<double>(moe.experts) * imbalance;
  w.flops_forward = 2.0 * w.rows_per_expert * static_cast<double>(w.local_experts) *
                    static_cast<double>(expert_parameters(spec.hidden, moe.expert_ffn, spec.gated_mlp));
  return w;
}

double routed_expert_parameters(const TransformerSpec& spec) {
  if (!spec.moe) return 0.0;
  const MoeSpec& m = *spec.moe;
  return static_cast<double>(moe_layer_count(spec.layers, m)) * static_cast<double>(m.experts) *
         static_cast<double>(expert_parameters(spec.hidden, m.expert_ffn, spec.gated_mlp));
}

double moe_layer_share(const TransformerSpec& spec) {
  if (!spec.moe) return 0.0;
  return static_cast<double>(moe_layer_count(spec.layers, *spec.moe)) / static_cast<double>(spec.layers);
}

std::vector<GroupedGemm> moe_layer_gemms(const TransformerSpec& spec, const MoeSpec& moe, std::int64_t tokens, int ep,
                                         double imbalance) {
  if (tokens < 1) throw std::invalid_argument("MoE GEMMs need >= 1 token");
  const ExpertWork w = expert_work(spec, moe, static_cast<double>(tokens), ep, imbalance);
  const std::int64_t rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(w.rows_per_expert)));
  const std::int64_t h = spec.hidden, f = moe.expert_ffn;
  const int up = spec.gated_mlp ? 2 : 1;
  std::vector<GroupedGemm> out{
      {GemmShape{"router", tokens, moe.experts, h, 1}, 1},
      {GemmShape{"expert_up", rows, f, h, up}, w.local_experts},
      {GemmShape{"expert_down", rows, h, f, 1}, w.local_experts},
  };
  if (moe.shared_experts > 0) {
    const std::int64_t fs = moe.shared_experts * shared_width(moe);
    out.push_back({GemmShape{"shared_up", tokens, fs, h, up}, 1});
    out.push_back({GemmShape{"shared_down", tokens, h, fs, 1}, 1});
  }
  return out;
}

double moe_permutation_bytes(const TransformerSpec& spec, const MoeSpec& moe, double tokens, double w) {
  check(moe);
  if (tokens < 0 || w <= 0) throw std::invalid_argument("permutation bytes: tokens >= 0, w > 0");
  return 4.0 * tokens * static_cast<double>(moe.top_k) * static_cast<double>(spec.hidden) * w;
}

double moe_all_to_all_bytes(const TransformerSpec& spec, const MoeSpec& moe, double tokens, double w, int ep) {
  check(moe);
  if (ep < 1 || tokens < 0 || w <= 0) throw std::invalid_argument("all-to-all bytes: ep >= 1, tokens >= 0, w > 0");
  return tokens * static_cast<double>(moe.top_k) * static_cast<double>(spec.hidden) * w * (ep - 1) / ep;
}

double all_to_all_time_s(double bytes_out, const CommFabric& f, double latency_s) {
  if (bytes_out < 0 || latency_s < 0) throw std::invalid_argument("all-to-all: bytes and latency must be >= 0");
  const int e = f.ranks();
  if (e <= 1) return 0;
  const double ppn = f.intra.ranks;
  const double peers = e - 1;
  double t = 0;
  if (ppn > 1) t = bytes_out * (ppn - 1) / peers / (f.intra.bw_GBps * 1e9);
  if (f.inter) {
    const double per_rank_GBps = f.inter->bw_GBps / ppn;
    t = std::max(t, bytes_out * (e - ppn) / peers / (per_rank_GBps * 1e9));
  }
  return latency_s + t;
}

namespace {
constexpr std::array<std::string_view, 3> kDispatchers{"alltoall", "hybridep", "deepep"};
}  // namespace

std::string_view name(MoeDispatcher d) { return kDispatchers.at(static_cast<std::size_t>(d)); }

std::vector<std::string> moe_dispatcher_names() { return {kDispatchers.begin(), kDispatchers.end()}; }

MoeDispatcher parse_moe_dispatcher(std::string_view s) {
  for (std::size_t i = 0; i < kDispatchers.size(); ++i)
    if (kDispatchers[i] == s) return static_cast<MoeDispatcher>(i);
  throw std::invalid_argument("unknown MoE dispatcher \"" + std::string(s) +
                              "\"; expected one of alltoall, hybridep, deepep");
}

MoeHostOps moe_host_ops(MoeDispatcher d, bool fp8) {
  MoeHostOps o;
  if (d == MoeDispatcher::alltoall) {
    // router 9; dispatcher 24 forward, 8 backward; experts 3 (16-bit) or 8 (fp8 padding and
    // scaling) forward, 5 or 10 backward. Graphed router and preprocessing leave 16/21
    // forward and 12/17 backward.
    o.python_forward = fp8 ? 41 : 36;
    o.python_backward = fp8 ? 27 : 22;
    o.captured_forward = 20;
    o.captured_backward = 10;
  } else {
    // HybridEP's fused dispatch and combine: router 9, dispatcher 3, experts 3 or 5 forward.
    o.python_forward = fp8 ? 17 : 15;
    o.python_backward = fp8 ? 20 : 18;
    o.captured_forward = 9;
    o.captured_backward = 9;
  }
  // Per local expert: its GEMMs (fc1, fc2; backward dgrad and wgrad of each) and, under
  // fp8, each GEMM input's quantization.
  o.per_expert_forward = fp8 ? 4 : 2;
  o.per_expert_backward = fp8 ? 6 : 4;
  return o;
}

double combined_layer_pair_s(const CombinedLayerPair& p) {
  const double first = std::max(p.attn_fwd_s, p.combine_bwd_s);  // both streams' first op done
  const double mlp_bwd_end = first + p.mlp_bwd_dgrad_s;
  const double dispatch_fwd_end = first + p.dispatch_fwd_s;
  const double dispatch_bwd_end = std::max(dispatch_fwd_end, mlp_bwd_end) + p.dispatch_bwd_s;
  const double mlp_fwd_end = std::max(mlp_bwd_end + p.mlp_bwd_wgrad_s, dispatch_fwd_end) + p.mlp_fwd_s;
  const double combine_fwd_end = std::max(dispatch_bwd_end, mlp_fwd_end) + p.combine_fwd_s;
  const double attn_bwd_end = std::max(mlp_fwd_end, dispatch_bwd_end) + p.attn_bwd_s;
  return std::max(combine_fwd_end, attn_bwd_end);
}

}  // namespace stepcast
