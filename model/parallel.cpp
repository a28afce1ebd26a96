// Parallel layouts: rules, Megatron rank placement, TP/SP/CP/PP costs and
// activation memory under TP. Every formula is stated with its source in parallel.hpp.
#include "model/parallel.hpp"

#include "model/moe.hpp"

#include <algorithm>
#include <cassert>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace stepcast {

namespace {

constexpr std::array<std::string_view, 4> kSchedule{"gpipe", "1f1b", "interleaved", "zb-h1"};
constexpr std::array<std::string_view, 4> kGroupKind{"tp", "cp", "dp", "pp"};
constexpr std::array<std::string_view, 2> kCpComm{"ring", "all_gather"};

template <typename E, std::size_t N>
E parse_named(std::string_view text, const std::array<std::string_view, N>& names, const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<E>(i);
  std::string msg = std::string("unknown ") + what + " \"" + std::string(text) + "\"; expected one of ";
  for (std::size_t i = 0; i < N; ++i) msg += (i ? ", \"" : "\"") + std::string(names[i]) + "\"";
  throw std::invalid_argument(msg);
}

[[noreturn]] void broken(const std::string& rule) { throw std::invalid_argument("parallel layout: " + rule); }

std::string str(std::int64_t v) { return std::to_string(v); }

void check_degrees(const ParallelLayout& l) {
  const std::array<std::pair<const char*, int>, 5> degrees{
      {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"vpp", l.vpp}}};
  for (const auto& [what, v] : degrees)
    if (v < 1) broken(std::string(what) + " must be >= 1, got " + str(v));
}

}  // namespace

std::string_view name(PipelineScheduleKind v) { return kSchedule[static_cast<int>(v)]; }
PipelineScheduleKind parse_pipeline_schedule(std::string_view s) {
  return parse_named<PipelineScheduleKind>(s, kSchedule, "pipeline schedule");
}
std::vector<std::string> pipeline_schedule_names() { return {kSchedule.begin(), kSchedule.end()}; }

std::string_view name(GroupKind v) { return kGroupKind[static_cast<int>(v)]; }
GroupKind parse_group_kind(std::string_view s) { return parse_named<GroupKind>(s, kGroupKind, "group kind"); }
std::vector<std::string> group_kind_names() { return {kGroupKind.begin(), kGroupKind.end()}; }

std::string_view name(CpCommKind v) { return kCpComm[static_cast<int>(v)]; }
CpCommKind parse_cp_comm(std::string_view s) {
  return parse_named<CpCommKind>(s, kCpComm, "context-parallel exchange");
}
std::vector<std::string> cp_comm_names() { return {kCpComm.begin(), kCpComm.end()}; }

std::int64_t ParallelLayout::gpus() const { return static_cast<std::int64_t>(dp) * tp * pp * cp; }

int ParallelLayout::degree(GroupKind kind) const {
  switch (kind) {
    case GroupKind::tp:
      return tp;
    case GroupKind::cp:
      return cp;
    case GroupKind::dp:
      return dp;
    case GroupKind::pp:
      return pp;
  }
  return 1;
}

ParallelLayout data_parallel_layout(DpSharding sharding, int gpus) {
  if (gpus < 1) broken("a data-parallel layout needs >= 1 GPU, got " + str(gpus));
  ParallelLayout l;
  l.dp = gpus;
  l.dp_sharding = sharding;
  return l;
}

std::int64_t cp_sequence_chunks(const TransformerSpec& spec, int cp) {
  return spec.kind == ModelKind::decoder ? 2LL * cp : cp;
}

std::string_view describe(LayoutRule rule) {
  switch (rule) {
    case LayoutRule::degrees:
      return "every degree (tp, pp, cp, vpp, ep) must be >= 1";
    case LayoutRule::divides_gpus:
      return "tp x cp x pp does not divide the GPUs";
    case LayoutRule::tp_placement:
      return "tp is neither a divisor of a node's GPUs nor whole nodes dividing the nodes";
    case LayoutRule::tp_model:
      return "tp does not divide the heads, KV heads and MLP width";
    case LayoutRule::sp_needs_tp:
      return "sequence parallelism needs tp >= 2";
    case LayoutRule::sp_sequence:
      return "sequence parallelism: tp x cp does not divide seq_len";
    case LayoutRule::cp_sequence:
      return "context parallelism: 2 x cp (causal; cp otherwise) does not divide seq_len";
    case LayoutRule::cp_attention:
      return "context parallelism without a flash-class attention kernel";
    case LayoutRule::vpp_pipeline:
      return "model chunks (vpp >= 2) without a pipeline";
    case LayoutRule::pipeline_layers:
      return "more stages x chunks than layers";
    case LayoutRule::pipeline_strategy:
      return "a pipeline with a strategy other than ddp or zero1";
    case LayoutRule::interleaved_vpp:
      return "the interleaved schedule and vpp >= 2 go together";
    case LayoutRule::interleaved_groups:
      return "interleaved schedule: the micro-batches are not a multiple of pp";
    case LayoutRule::ep_model:
      return "expert parallelism on a model without experts";
    case LayoutRule::ep_experts:
      return "ep does not divide the experts";
    case LayoutRule::ep_ranks:
      return "ep does not divide the tensor x context x data-parallel ranks of a stage";
    case LayoutRule::moe_sp:
      return "MoE under tensor parallelism without sequence parallelism";
    case LayoutRule::mla_tp:
      return "MLA under tensor parallelism without sequence parallelism";
  }
  return "?";
}

std::vector<LayoutRule> layout_violations(const ParallelLayout& l, const TransformerSpec& m, const LayoutContext& c) {
  std::vector<LayoutRule> out;
  if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.vpp < 1 || l.ep < 1) return {LayoutRule::degrees};
  const std::int64_t model_parallel = static_cast<std::int64_t>(l.tp) * l.cp * l.pp;
  const int gpn = c.gpus_per_node;
  if (gpn > 0 && gpn % l.tp != 0 && (l.tp % gpn != 0 || c.nodes % (l.tp / gpn) != 0))
    out.push_back(LayoutRule::tp_placement);
  if (c.gpus % model_parallel != 0) out.push_back(LayoutRule::divides_gpus);
  if (m.heads % l.tp != 0 || m.kv_heads % l.tp != 0 || m.ffn_hidden % l.tp != 0) out.push_back(LayoutRule::tp_model);
  if (l.sp && l.tp < 2) out.push_back(LayoutRule::sp_needs_tp);
  if (l.sp && c.seq_len % (static_cast<std::int64_t>(l.tp) * l.cp) != 0) out.push_back(LayoutRule::sp_sequence);
  if (l.cp > 1 && c.seq_len % cp_sequence_chunks(m, l.cp) != 0) out.push_back(LayoutRule::cp_sequence);
  if (l.cp > 1 && !c.flash_attention) out.push_back(LayoutRule::cp_attention);
  if (l.pp == 1 && l.vpp > 1) out.push_back(LayoutRule::vpp_pipeline);
  if (l.pp > 1) {
    if (m.layers < static_cast<std::int64_t>(l.pp) * l.vpp) out.push_back(LayoutRule::pipeline_layers);
    if (l.dp_sharding != Strategy::ddp && l.dp_sharding != Strategy::zero1)
      out.push_back(LayoutRule::pipeline_strategy);
    const bool interleaved = l.schedule == PipelineScheduleKind::interleaved;
    if (interleaved != (l.vpp > 1)) out.push_back(LayoutRule::interleaved_vpp);
    if (interleaved && c.micro_batches % l.pp != 0) out.push_back(LayoutRule::interleaved_groups);
  }
  if (l.ep > 1 && !m.moe) out.push_back(LayoutRule::ep_model);
  if (m.moe && m.moe->experts % l.ep != 0) out.push_back(LayoutRule::ep_experts);
  if (c.gpus % model_parallel == 0 && (c.gpus / l.pp) % l.ep != 0) out.push_back(LayoutRule::ep_ranks);
  if (m.moe && l.tp > 1 && !l.sp) out.push_back(LayoutRule::moe_sp);
  if (m.mla && l.tp > 1 && !l.sp) out.push_back(LayoutRule::mla_tp);
  return out;
}

// ---------------------------------------------------------------------------------------

std::int64_t group_stride(const ParallelLayout& l, GroupKind kind) {
  check_degrees(l);
  switch (kind) {
    case GroupKind::tp:
      return 1;
    case GroupKind::cp:
      return l.tp;
    case GroupKind::dp:
      return static_cast<std::int64_t>(l.tp) * l.cp;
    case GroupKind::pp:
      return static_cast<std::int64_t>(l.tp) * l.cp * l.dp;
  }
  return 1;
}

std::int64_t rank_of(const ParallelLayout& l, const RankCoords& c) {
  check_degrees(l);
  const std::array<GroupKind, 4> kinds{GroupKind::tp, GroupKind::cp, GroupKind::dp, GroupKind::pp};
  const std::array<int, 4> coord{c.tp, c.cp, c.dp, c.pp};
  std::int64_t rank = 0;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (coord[i] < 0 || coord[i] >= l.degree(kinds[i]))
      broken(std::string(name(kinds[i])) + " coordinate " + str(coord[i]) + " outside [0, " + str(l.degree(kinds[i])) +
             ")");
    rank += coord[i] * group_stride(l, kinds[i]);
  }
  return rank;
}

RankCoords rank_coords(const ParallelLayout& l, std::int64_t rank) {
  check_degrees(l);
  if (rank < 0 || rank >= l.gpus()) broken("rank " + str(rank) + " outside [0, " + str(l.gpus()) + ")");
  RankCoords c;
  c.tp = static_cast<int>(rank % l.tp);
  c.cp = static_cast<int>(rank / group_stride(l, GroupKind::cp) % l.cp);
  c.dp = static_cast<int>(rank / group_stride(l, GroupKind::dp) % l.dp);
  c.pp = static_cast<int>(rank / group_stride(l, GroupKind::pp) % l.pp);
  return c;
}

namespace {

/// The groups of one kind as arithmetic progressions: `n` members at stride `s`, the
/// s groups of one block interleaved over `p` = s·n consecutive ranks, `world` / p blocks in
/// rank order, `g` ranks to a node (the last node may be partial).
struct Progressions {
  std::int64_t world = 1, s = 1, n = 1, p = 1, g = 1;
  std::int64_t blocks() const { return world / p; }
  std::int64_t nodes() const { return (world + g - 1) / g; }
  /// Period of bP mod g in b (and of node starts mod p in the node index): g / gcd(p, g).
  std::int64_t period() const { return g / std::gcd(p, g); }
};

/// Groups with members on node `node` (s < g): the node's ranks split at block boundaries
/// into pieces; a piece of L ranks inside one block meets min(L, s) of its groups.
std::int64_t groups_on_node(const Progressions& q, std::int64_t node) {
  const std::int64_t start = node * q.g, end = std::min(start + q.g, q.world);
  const std::int64_t head = std::min(end, (start / q.p + 1) * q.p) - start;
  const std::int64_t full = (end - start - head) / q.p;
  const std::int64_t tail = end - start - head - full * q.p;
  return std::min(head, q.s) + full * q.s + std::min(tail, q.s);
}

/// Nodes of the widest group (s < g): members d = (n - 1)·s apart end to end touch
/// floor(d / g) + 1 nodes, one more when the first member's offset in its node x mod g
/// reaches g - (d mod g). First members are x = bP + a (a < s), so x mod g reaches
/// (bP mod g) + s - 1 (or wraps to g - 1); bP mod g repeats with period g / gcd(p, g).
std::int64_t widest_span(const Progressions& q) {
  const std::int64_t d = (q.n - 1) * q.s, rem = d % q.g;
  std::int64_t span = d / q.g + 1;
  if (rem == 0) return span;
  const std::int64_t reach = q.g - rem;
  const std::int64_t bs = std::min(q.blocks(), q.period());
  for (std::int64_t b = 0; b < bs; ++b)
    if ((b * q.p) % q.g + q.s - 1 >= reach) return span + 1;
  return span;
}

/// Most groups on one node (s < g). Blocks at least a node long: node 0 lies in block 0
/// (s groups), a node across the boundary jP holds L = jP mod g ranks of one block and
/// g - L of the next (j < blocks, periodic in j), the last node lies in the last block.
/// Shorter blocks: node starts mod p repeat with period p / gcd(p, g) < g nodes, so those
/// nodes and the (possibly partial) last one are all the kinds of node there are.
std::int64_t most_groups_on_a_node(const Progressions& q) {
  std::int64_t most = 0;
  if (q.p >= q.g) {
    most = q.s;
    const std::int64_t js = std::min(q.blocks() - 1, q.period());
    for (std::int64_t j = 1; j <= js; ++j) {
      const std::int64_t l = (j * q.p) % q.g;
      if (l > 0) most = std::max(most, std::min(l, q.s) + std::min(q.g - l, q.s));
    }
    return most;
  }
  const std::int64_t kinds = std::min(q.nodes(), q.p / std::gcd(q.p, q.g));
  for (std::int64_t node = 0; node < kinds; ++node) most = std::max(most, groups_on_node(q, node));
  return std::max(most, groups_on_node(q, q.nodes() - 1));
}

}  // namespace

GroupPlacement group_placement(const ParallelLayout& l, GroupKind kind, int gpus_per_node) {
  check_degrees(l);
  if (gpus_per_node < 1) broken("gpus_per_node must be >= 1, got " + str(gpus_per_node));
  Progressions q;
  q.world = l.gpus();
  q.s = group_stride(l, kind);
  q.n = l.degree(kind);
  q.p = q.s * q.n;
  q.g = gpus_per_node;
  GroupPlacement out;
  out.ranks = static_cast<int>(q.n);
  if (q.s >= q.g) {
    // Members at least a node apart: one per node; every rank of a node in its own group.
    out.nodes_spanned = static_cast<int>(q.n);
    out.groups_sharing_a_node = static_cast<int>(std::min(q.g, q.world));
    return out;
  }
  // A piece of one block of L ranks holds at most ceil(L / s) members of a group; node 0's
  // first piece is the longest, min(g, p) ranks.
  out.ranks_per_node = static_cast<int>(std::min(q.n, (q.g + q.s - 1) / q.s));
  out.nodes_spanned = static_cast<int>(widest_span(q));
  out.groups_sharing_a_node = static_cast<int>(most_groups_on_a_node(q));
  return out;
}

// ---------------------------------------------------------------------------------------

std::vector<GemmShape> tp_layer_gemms(const TransformerSpec& spec, std::int64_t tokens, int tp) {
  if (tp < 1) throw std::invalid_argument("tp must be >= 1, got " + str(tp));
  if (spec.heads % tp != 0 || spec.kv_heads % tp != 0 || spec.ffn_hidden % tp != 0)
    throw std::invalid_argument("tp " + str(tp) + " must divide heads " + str(spec.heads) + ", kv_heads " +
                                str(spec.kv_heads) + " and ffn_hidden " + str(spec.ffn_hidden));
  std::vector<GemmShape> gemms = layer_gemms(spec, tokens);
  for (auto& g : gemms) {
    if (g.name == "qkv" || g.name == "mlp_up" || g.name == "q" || g.name == "q_b" || g.name == "kv_b")
      g.n /= tp;  // column-parallel (MLA's up projections: the heads)
    else if (g.name == "q_a" || g.name == "kv_a")
      g.m = (g.m + tp - 1) / tp;  // MLA's down projections: whole, on the rank's own tokens
    else if (g.name == "attn_out" || g.name == "mlp_down")
      g.k /= tp;  // row-parallel
    else if (g.name == "lm_head")
      g.n = vocab_rows_per_rank(spec.vocab, tp);
  }
  return gemms;
}

std::int64_t vocab_rows_per_rank(std::int64_t vocab, int tp, int divisible_by) {
  if (vocab < 1 || tp < 1 || divisible_by < 1)
    throw std::invalid_argument("vocab rows need vocab, tp and divisible_by >= 1, got " + str(vocab) + ", " + str(tp) +
                                ", " + str(divisible_by));
  const std::int64_t multiple = static_cast<std::int64_t>(divisible_by) * tp;
  const std::int64_t padded = (vocab + multiple - 1) / multiple * multiple;
  return (padded + tp - 1) / tp;
}

double TpLayerComm::forward_bytes() const {
  double sum = 0;
  for (const auto& c : forward) sum += c.count * c.bytes;
  return sum;
}

double TpLayerComm::backward_bytes() const {
  double sum = 0;
  for (const auto& c : backward) sum += c.count * c.bytes;
  return sum;
}

double tp_mlp_layer_share(const TransformerSpec& spec) {
  if (!spec.moe) return 1.0;
  const double moe = moe_layer_share(spec);
  return 1.0 - moe + (spec.moe->shared_experts > 0 ? moe : 0.0);
}

double tp_attention_input_share(const TransformerSpec& spec) {
  if (!spec.mla) return 1.0;
  const MlaSpec& m = *spec.mla;
  const double q = m.q_lora_rank > 0 ? static_cast<double>(m.q_lora_rank) : static_cast<double>(spec.hidden);
  return (q + static_cast<double>(m.kv_lora_rank + m.qk_rope_dim)) / static_cast<double>(spec.hidden);
}

void scale_tp_collectives(TpLayerComm& comm, double mlp_share, double attention_input_share) {
  if (!(mlp_share >= 0 && mlp_share <= 1) || !(attention_input_share > 0 && std::isfinite(attention_input_share)))
    throw std::invalid_argument("TP collective shares: MLP in [0, 1], attention input > 0");
  if (mlp_share == 1 && attention_input_share == 1) return;
  const auto scale = [&](std::vector<TpCollective>& list) {
    std::vector<TpCollective> out;
    for (TpCollective c : list) {
      // The part that stays, then the MLP's and the attention input's, each scaled.
      const auto part = [&](int count, double bytes_share, double gemm_share, bool mlp) {
        if (count == 0 || bytes_share == 0) return;
        TpCollective p = c;
        p.count = count;
        p.mlp_count = mlp ? count : 0;
        p.attn_in_count = mlp ? 0 : count;
        p.bytes *= bytes_share;
        p.gemm_s *= gemm_share;
        out.push_back(p);
      };
      const int mlp = mlp_share == 1 ? 0 : c.mlp_count, attn_in = attention_input_share == 1 ? 0 : c.attn_in_count;
      if (c.count > mlp + attn_in) {
        TpCollective rest = c;
        rest.count -= mlp + attn_in;
        rest.mlp_count -= mlp;
        rest.attn_in_count -= attn_in;
        out.push_back(rest);
      }
      part(mlp, mlp_share, mlp_share, true);
      part(attn_in, attention_input_share, 1.0, false);
    }
    list = std::move(out);
  };
  scale(comm.forward);
  scale(comm.backward);
}

TpLayerComm tp_layer_comm(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp, Recompute recompute,
                          bool keep_gathered) {
  if (tokens < 1 || hidden < 1 || w <= 0 || tp < 1)
    throw std::invalid_argument("TP communication needs tokens, hidden, w and tp > 0");
  TpLayerComm out;
  if (tp == 1) return out;
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * w;
  // `mlp` of the `count` are the MLP's, `in` gather attention's input or reduce its gradient.
  const auto of = [bytes](Collective op, int count, int mlp, int in) {
    TpCollective c{op, count, bytes};
    c.mlp_count = mlp;
    c.attn_in_count = in;
    return c;
  };
  if (sp) {
    out.forward = {of(Collective::all_gather, 2, 1, 1), of(Collective::reduce_scatter, 2, 1, 0)};
    out.backward = {keep_gathered ? of(Collective::all_gather, 2, 1, 0) : of(Collective::all_gather, 4, 2, 1),
                    of(Collective::reduce_scatter, 2, 1, 1)};
  } else {
    out.forward = {of(Collective::all_reduce, 2, 1, 0)};
    out.backward = {of(Collective::all_reduce, 2, 1, 1)};
  }
  if (recompute == Recompute::full) out.backward.insert(out.backward.end(), out.forward.begin(), out.forward.end());
  return out;
}

double tp_overlap_exposed_s(const TpCollective& c, double comm_s) {
  const double g = c.gemm_s, x = comm_s, n = c.chunks, share = c.comm_sm_share;
  assert(g >= 0 && x >= 0 && c.chunks >= 1 && share >= 0 && share < 1);
  const auto bulk = [share](double gemm, double comm) {
    return comm >= gemm / (1 - share) ? comm : gemm + comm * share;
  };
  double total = x;
  switch (c.overlap) {
    case TpOverlap::none:
      return x;
    case TpOverlap::ring_exchange:
      total = c.chunks == 1 ? g + x : g / n + (n - 1) * std::max(g / n, x / (n - 1));
      break;
    case TpOverlap::bulk:
      total = bulk(g, x);
      break;
    case TpOverlap::pipeline:
      total = g / n + bulk((n - 1) * g / n, (n - 1) * x / n) + x / n;
      break;
  }
  return std::max(0.0, total - g);
}

TpLayerComm tp_layer_comm_overlapped(std::int64_t tokens, std::int64_t hidden, double w, int tp,
                                     const TpLayerGemmTimes& t, int sm_count, Recompute recompute) {
  if (tokens < 1 || hidden < 1 || w <= 0 || tp < 2)
    throw std::invalid_argument("overlapped TP communication needs tokens, hidden, w > 0 and tp >= 2");
  // TE v1.8 initialize_ub: num_sm 16 for pipeline and bulk, num_splits 4 for pipeline.
  constexpr int kCommSms = 16, kSplits = 4;
  if (sm_count <= kCommSms)
    throw std::invalid_argument("overlapped TP communication needs more than 16 SMs, got " + str(sm_count));
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * w;
  const double share = static_cast<double>(kCommSms) / sm_count;
  // `mlp`: 1 beside the MLP's GEMMs; `in`: 1 for attention's input (or its gradient).
  const auto ring = [&](Collective op, double gemm_s, int mlp, int in) {
    return TpCollective{op, 1, bytes, TpOverlap::ring_exchange, gemm_s, tp, 0.0, mlp, in};
  };
  const auto pipe = [&](double gemm_s, int mlp) {
    return TpCollective{Collective::reduce_scatter, 1, bytes, TpOverlap::pipeline, gemm_s, kSplits, share, mlp, 0};
  };
  const auto bulk = [&](Collective op, double gemm_s, int mlp, int in) {
    return TpCollective{op, 1, bytes, TpOverlap::bulk, gemm_s, 1, share, mlp, in};
  };
  TpLayerComm out;
  out.forward = {ring(Collective::all_gather, t.qkv_fprop, 0, 1), pipe(t.proj_fprop, 0),
                 ring(Collective::all_gather, t.fc1_fprop, 1, 0), pipe(t.fc2_fprop, 1)};
  out.backward = {
      ring(Collective::all_gather, t.fc2_dgrad, 1, 0),     bulk(Collective::all_gather, t.fc1_dgrad, 1, 0),
      bulk(Collective::reduce_scatter, t.fc1_wgrad, 1, 0), ring(Collective::all_gather, t.proj_dgrad, 0, 0),
      bulk(Collective::all_gather, t.qkv_dgrad, 0, 1),     bulk(Collective::reduce_scatter, t.qkv_wgrad, 0, 1)};
  if (recompute == Recompute::full) out.backward.insert(out.backward.end(), out.forward.begin(), out.forward.end());
  return out;
}

TpLayerComm tp_layer_comm_async(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp,
                                const TpLayerGemmTimes& t, double share, Recompute recompute) {
  if (tokens < 1 || hidden < 1 || w <= 0 || tp < 2 || !(share >= 0 && share < 1))
    throw std::invalid_argument(
        "asynchronous TP communication needs tokens, hidden, w > 0, tp >= 2 and an SM share "
        "in [0, 1)");
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * w;
  const auto beside = [&](Collective op, double gemm_s, int mlp, int in) {
    return TpCollective{op, 1, bytes, TpOverlap::bulk, gemm_s, 1, share, mlp, in};
  };
  TpLayerComm out = tp_layer_comm(tokens, hidden, w, tp, sp, Recompute::none);
  if (sp)
    out.backward = {
        // the output gradient's, before attention-out and MLP-down dgrad
        TpCollective{Collective::all_gather, 2, bytes, TpOverlap::none, 0.0, 1, 0.0, 1, 0},
        beside(Collective::all_gather, t.qkv_dgrad, 0, 1), beside(Collective::reduce_scatter, t.qkv_wgrad, 0, 1),
        beside(Collective::all_gather, t.fc1_dgrad, 1, 0), beside(Collective::reduce_scatter, t.fc1_wgrad, 1, 0)};
  else
    out.backward = {beside(Collective::all_reduce, t.qkv_wgrad, 0, 1),
                    beside(Collective::all_reduce, t.fc1_wgrad, 1, 0)};
  if (recompute == Recompute::full) out.backward.insert(out.backward.end(), out.forward.begin(), out.forward.end());
  return out;
}

TpLayerComm tp_embedding_head_comm(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp) {
  if (tokens < 1 || hidden < 1 || w <= 0 || tp < 1)
    throw std::invalid_argument("TP communication needs tokens, hidden, w and tp > 0");
  TpLayerComm out;
  if (tp == 1) return out;
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * w;
  const TpCollective loss{Collective::all_reduce, 3, static_cast<double>(tokens) * 4.0};
  if (sp) {
    out.forward = {{Collective::reduce_scatter, 1, bytes}, {Collective::all_gather, 1, bytes}, loss};
    out.backward = {{Collective::all_gather, 2, bytes}, {Collective::reduce_scatter, 1, bytes}};
  } else {
    out.forward = {{Collective::all_reduce, 1, bytes}, loss};
    out.backward = {{Collective::all_reduce, 1, bytes}};
  }
  return out;
}

StageParameters stage_parameters_per_gpu(const TransformerSpec& spec, int stage, int pp, int vpp, int tp) {
  if (tp < 1 || spec.heads % tp != 0 || spec.kv_heads % tp != 0 || spec.ffn_hidden % tp != 0)
    throw std::invalid_argument("tp " + str(tp) + " must be >= 1 and divide heads, kv_heads and ffn_hidden");
  const std::vector<int> layers = layers_per_stage(spec.layers, pp, vpp);
  if (stage < 0 || stage >= pp) throw std::invalid_argument("stage " + str(stage) + " outside [0, pp " + str(pp) + ")");
  const ParameterBreakdown b = parameter_breakdown(spec);
  const double h = static_cast<double>(spec.hidden), t = tp;
  const double attn = static_cast<double>(b.attention / spec.layers), mlp = static_cast<double>(b.mlp / spec.layers);
  const double layer_norms = static_cast<double>(b.per_layer) - attn - mlp;
  const double norm = spec.parallel_attn_mlp ? layer_norms : layer_norms / 2;  // one norm's parameters
  const double row_biases = spec.linear_bias ? 2 * h : 0;                      // attention out and MLP down
  StageParameters out;
  out.layers = layers[static_cast<std::size_t>(stage)] * ((attn + mlp - row_biases) / t + row_biases + layer_norms);
  const double word = static_cast<double>(vocab_rows_per_rank(spec.vocab, tp)) * h;
  if (stage == 0)
    out.embedding = word + static_cast<double>(spec.type_vocab) * h + static_cast<double>(b.positional) +
                    (spec.embedding_norm ? norm : 0);
  if (stage == pp - 1) {
    const bool tied_copy = spec.tied_embeddings && pp > 1;
    out.head = (spec.kind == ModelKind::decoder ? norm : 0) + (!spec.tied_embeddings || tied_copy ? word : 0) +
               static_cast<double>(b.other);
  }
  return out;
}

// ---------------------------------------------------------------------------------------

namespace {
/// b·(s/cp)·(kv_dim/t)·w: one rank's K (or V) chunk, bytes.
double kv_chunk_bytes(const TransformerSpec& spec, std::int64_t tokens, double w, int cp, int tp) {
  if (tokens < 1 || w <= 0 || cp < 1 || tp < 1)
    throw std::invalid_argument("CP communication needs tokens, w, cp and tp > 0");
  if (tokens % cp != 0) throw std::invalid_argument("cp " + str(cp) + " must divide the tokens " + str(tokens));
  if (spec.kv_heads % tp != 0)
    throw std::invalid_argument("tp " + str(tp) + " must divide the KV heads " + str(spec.kv_heads));
  return static_cast<double>(tokens / cp) * static_cast<double>(spec.kv_dim()) / tp * w;
}
}  // namespace

CpLayerComm cp_layer_comm(const TransformerSpec& spec, std::int64_t tokens, double w, int cp, int tp) {
  const double kv_chunk = kv_chunk_bytes(spec, tokens, w, cp, tp);
  CpLayerComm out;
  out.steps = cp - 1;
  out.forward_bytes_per_step = 2 * kv_chunk;
  out.backward_bytes_per_step = 4 * kv_chunk;
  return out;
}

double cp_ring_exposed_s(int steps, double step_s, double attention_s, int cp) {
  if (steps < 0 || cp < 1 || step_s < 0 || attention_s < 0)
    throw std::invalid_argument("ring exposure needs steps >= 0, cp >= 1 and times >= 0");
  return steps * std::max(0.0, step_s - attention_s / cp);
}

TpLayerComm cp_all_gather_comm(const TransformerSpec& spec, std::int64_t tokens, double w, int cp, int tp) {
  const double gathered = 2 * kv_chunk_bytes(spec, tokens, w, cp, tp) * cp;  // K and V, whole sequence
  TpLayerComm out;
  if (cp == 1) return out;
  out.forward = {{Collective::all_gather, 1, gathered}};
  out.backward = {{Collective::all_gather, 1, gathered}, {Collective::reduce_scatter, 1, gathered}};
  return out;
}

ParallelLayout expert_parallel_layout(const ParallelLayout& layout, int ep) {
  const int ranks = layout.tp * layout.cp * layout.dp;
  if (ep < 1 || ranks % ep != 0)
    throw std::invalid_argument("expert parallelism " + std::to_string(ep) + " must divide the " +
                                std::to_string(ranks) + " tensor x context x data-parallel ranks of a stage");
  ParallelLayout out;
  out.tp = ep;
  out.dp = ranks / ep;
  out.pp = layout.pp;
  return out;
}

ParallelLayout gradient_group_layout(const ParallelLayout& layout) {
  ParallelLayout out = layout;
  out.dp = layout.dp * layout.cp;
  out.cp = 1;
  return out;
}

// ---------------------------------------------------------------------------------------

std::vector<int> layers_per_chunk(std::int64_t layers, int pp, int vpp) {
  if (pp < 1 || vpp < 1) throw std::invalid_argument("pp and vpp must be >= 1");
  const std::int64_t n = static_cast<std::int64_t>(pp) * vpp;
  if (layers < n) throw std::invalid_argument("layers " + str(layers) + " fewer than the pp*vpp " + str(n) + " chunks");
  const std::int64_t q = layers / n, r = layers % n;
  std::vector<int> out(static_cast<std::size_t>(n), static_cast<int>(q));
  for (std::int64_t c = 1; c <= r; ++c) ++out[static_cast<std::size_t>(c)];
  return out;
}

std::vector<int> layers_per_stage(std::int64_t layers, int pp, int vpp) {
  const std::vector<int> chunks = layers_per_chunk(layers, pp, vpp);
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  for (std::size_t c = 0; c < chunks.size(); ++c) out[c % static_cast<std::size_t>(pp)] += chunks[c];
  return out;
}

std::string_view name(StageSplit s) {
  switch (s) {
    case StageSplit::even:
      return "even";
    case StageSplit::balanced:
      return "balanced";
  }
  return "?";
}

StageSplit parse_stage_split(std::string_view text) {
  if (text == "even") return StageSplit::even;
  if (text == "balanced") return StageSplit::balanced;
  throw std::invalid_argument("unknown pp_split \"" + std::string(text) + "\" (even, balanced)");
}

std::vector<std::string> stage_split_names() { return {"even", "balanced"}; }

std::vector<int> balanced_layers_per_stage(std::int64_t layers, int pp, double head_cost) {
  if (pp < 1 || head_cost < 0 || !std::isfinite(head_cost))
    throw std::invalid_argument("the balanced split needs pp >= 1 and a finite head cost >= 0");
  if (layers < pp) throw std::invalid_argument("layers " + str(layers) + " fewer than the pp " + str(pp) + " stages");
  const double total = static_cast<double>(layers) + head_cost;
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  int stage = 0;
  for (std::int64_t j = 1; j <= layers; ++j) {
    ++out[static_cast<std::size_t>(stage)];
    if (static_cast<double>(j) > total * (stage + 1) / pp && stage < pp - 1) ++stage;
  }
  // No stage without a layer but the last, which holds the LM head: an empty stage takes one
  // from the busier neighbour.
  for (int i = 0; i + 1 < pp; ++i) {
    if (out[static_cast<std::size_t>(i)] > 0) continue;
    int from = i;
    for (int d = 1; from == i; ++d) {
      if (i - d >= 0 && out[static_cast<std::size_t>(i - d)] > 1)
        from = i - d;
      else if (i + d < pp && out[static_cast<std::size_t>(i + d)] > 1)
        from = i + d;
    }
    --out[static_cast<std::size_t>(from)];
    ++out[static_cast<std::size_t>(i)];
  }
  return out;
}

double head_cost_in_layers(const TransformerSpec& spec) {
  const ParameterBreakdown b = parameter_breakdown(spec);
  const double per_layer = static_cast<double>(b.attention + b.mlp) / static_cast<double>(spec.layers);
  return static_cast<double>(spec.vocab) * static_cast<double>(spec.hidden) / per_layer;
}

std::vector<int> split_layers_per_chunk(const TransformerSpec& spec, int pp, int vpp, StageSplit split) {
  if (split == StageSplit::even) return layers_per_chunk(spec.layers, pp, vpp);
  if (vpp != 1) throw std::invalid_argument("pp_split balanced needs vpp 1 (one chunk per stage)");
  return balanced_layers_per_stage(spec.layers, pp, head_cost_in_layers(spec));
}

double pipeline_p2p_bytes(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp) {
  if (tokens < 1 || hidden < 1 || w <= 0 || tp < 1)
    throw std::invalid_argument("pipeline p2p needs tokens, hidden, w and tp > 0");
  const double bytes = static_cast<double>(tokens) * static_cast<double>(hidden) * w;
  return sp ? bytes / tp : bytes;
}

int pipeline_sends_per_microbatch(int stage, int pp, int vpp) {
  if (pp < 1 || vpp < 1 || stage < 0 || stage >= pp)
    throw std::invalid_argument("stage " + str(stage) + " outside [0, pp " + str(pp) + ") or vpp < 1");
  if (pp == 1) return 0;
  return stage < pp - 1 ? vpp : vpp - 1;
}

namespace {
void check_pipe(int pp, int m, int vpp) {
  if (pp < 1 || m < 1 || vpp < 1)
    throw std::invalid_argument("pipeline needs pp, micro-batches and vpp >= 1, got " + str(pp) + ", " + str(m) + ", " +
                                str(vpp));
}
}  // namespace

double bubble_fraction_1f1b(int pp, int m) {
  check_pipe(pp, m, 1);
  return static_cast<double>(pp - 1) / m;
}

double bubble_fraction_interleaved(int pp, int m, int vpp) {
  check_pipe(pp, m, vpp);
  return static_cast<double>(pp - 1) / (static_cast<double>(vpp) * m);
}

double bubble_fraction_zb_h1(int pp, int m, double t_f, double t_b, double t_w) {
  check_pipe(pp, m, 1);
  if (t_f <= 0 || t_b <= 0 || t_w < 0 || t_w > t_f + t_b)
    throw std::invalid_argument("ZB-H1 needs T_F, T_B > 0 and 0 <= T_W <= T_F + T_B");
  return (pp - 1) * (t_f + t_b - t_w) / (m * (t_f + t_b + t_w));
}

double bubble_fraction(PipelineScheduleKind schedule, int pp, int m, int vpp) {
  switch (schedule) {
    case PipelineScheduleKind::gpipe:
    case PipelineScheduleKind::one_f_one_b:
      return bubble_fraction_1f1b(pp, m);
    case PipelineScheduleKind::interleaved:
      return bubble_fraction_interleaved(pp, m, vpp);
    case PipelineScheduleKind::zb_h1:
      return bubble_fraction_zb_h1(pp, m);
  }
  return 0;
}

double in_flight_microbatches(PipelineScheduleKind schedule, int stage, int pp, int m, int vpp) {
  check_pipe(pp, m, vpp);
  if (stage < 0 || stage >= pp) throw std::invalid_argument("stage " + str(stage) + " outside [0, pp " + str(pp) + ")");
  switch (schedule) {
    case PipelineScheduleKind::gpipe:
      return m;
    case PipelineScheduleKind::one_f_one_b:
    case PipelineScheduleKind::zb_h1:
      return std::min(pp - stage, m);
    case PipelineScheduleKind::interleaved: {
      const std::int64_t chunks = 2LL * (pp - stage - 1) + static_cast<std::int64_t>(vpp - 1) * pp + 1;
      const std::int64_t total = static_cast<std::int64_t>(m) * vpp;
      return static_cast<double>(std::min(chunks, total)) / vpp;
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------

double korthikanti_activation_bytes_per_layer(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t heads,
                                              int tp, bool sp, Recompute recompute) {
  if (s < 1 || b < 1 || h < 1 || heads < 1 || tp < 1)
    throw std::invalid_argument("activation bytes need s, b, h, heads and tp >= 1");
  const double sbh = static_cast<double>(s) * static_cast<double>(b) * static_cast<double>(h);
  const double t = tp;
  if (recompute == Recompute::full) return 2 * sbh;
  const double linear = sp ? 34 / t : 10 + 24 / t;
  const double scores = recompute == Recompute::selective
                            ? 0.0
                            : 5.0 * static_cast<double>(heads) * static_cast<double>(s) / (static_cast<double>(h) * t);
  return sbh * (linear + scores);
}

}  // namespace stepcast
