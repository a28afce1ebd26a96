/// \file
/// The model-level foundation of 3D/4D parallelism: a parallel layout {dp, tp,
/// pp, cp, sp, vpp, schedule, dp_sharding} and its rules; Megatron's rank placement and the
/// shape of each group on the nodes; tensor (and sequence) parallel GEMM shapes and
/// collectives; context-parallel K/V exchange; pipeline stages, point-to-point bytes,
/// bubbles and in-flight micro-batches; per-layer activation memory under TP/SP. Pure
/// functions over value types; nothing here knows the simulator.
///
/// Symbols: b micro-batch (sequences), s sequence length (tokens), h hidden, a heads,
/// t = tp, p = pp, v = vpp, m micro-batches per step, w bytes per activation element.
#pragma once

#include "model/flops.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// Pipeline schedules.
enum class PipelineScheduleKind {
  gpipe,        ///< all forwards, then all backwards (Huang et al. 2019, arXiv 1811.06965)
  one_f_one_b,  ///< PipeDream-Flush 1F1B (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2.1)
  interleaved,  ///< interleaved 1F1B over v model chunks per stage (same paper, Sec. 2.2.2)
  zb_h1,        ///< zero-bubble ZB-H1: backward split into B and W (Qi et al. 2023, arXiv 2401.10241)
};
/// "gpipe", "1f1b", "interleaved", "zb-h1" (the scenario's spelling).
std::string_view name(PipelineScheduleKind);
PipelineScheduleKind parse_pipeline_schedule(std::string_view);  ///< throws std::invalid_argument
std::vector<std::string> pipeline_schedule_names();

/// Sharding inside the data-parallel group: exactly today's data-parallel strategies (ddp,
/// zero1..3, fsdp_*), so their names, parsers and shards_* facts are shared. Megatron's
/// distributed optimizer is zero1.
using DpSharding = Strategy;
inline DpSharding parse_dp_sharding(std::string_view s) { return parse_strategy(s); }

/// The four kinds of process group of a 4D layout (the expert layers' groups: expert_layout).
enum class GroupKind { tp, cp, dp, pp };
/// "tp", "cp", "dp", "pp".
std::string_view name(GroupKind);
GroupKind parse_group_kind(std::string_view);  ///< throws std::invalid_argument
std::vector<std::string> group_kind_names();

/// How a training run splits its GPUs: dp·tp·pp·cp GPUs, the one layout type of stepcast
/// (the scenario's strategy, the resolved job, the planner's points and the lowering's input
/// all hold one).
struct ParallelLayout {
  int dp = 1;       ///< data-parallel degree (gpus / (tp·pp·cp); resolve derives it)
  int tp = 1;       ///< tensor-parallel degree
  int pp = 1;       ///< pipeline stages
  int cp = 1;       ///< context-parallel degree (sequence split for attention)
  bool sp = false;  ///< Megatron sequence parallelism inside the TP group
  int vpp = 1;      ///< model chunks per pipeline stage (interleaved schedule only)
  /// Expert-parallel degree of a MoE model's expert layers: consecutive ranks of the TP x CP x
  /// DP ranks of a stage (Megatron-Core's parallel folding; expert_parallel_layout). 1: none.
  int ep = 1;
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
  DpSharding dp_sharding = DpSharding::ddp;
  /// dp·tp·pp·cp in 64 bits (degrees are validated as positive first).
  std::int64_t gpus() const;
  /// The degree of one group kind.
  int degree(GroupKind kind) const;
};

/// Today's flat data-parallel strategies as presets: tp = pp = cp = 1, dp = gpus.
ParallelLayout data_parallel_layout(DpSharding sharding, int gpus);

// ---- The rules of a parallel layout, written once ---------------------------------------
// The scenario checks (an error with the JSON path), the planner (a reject count), validate
// (a skip) and resolve (an invalid_argument) ask layout_violations; each caller words its
// own refusal.

/// A rule of a parallel layout, in the order layout_violations checks them.
enum class LayoutRule {
  degrees,             ///< every degree >= 1
  tp_placement,        ///< tp divides a node's GPUs or is whole nodes dividing the nodes (Megatron order)
  divides_gpus,        ///< tp·cp·pp divides the GPUs (whole data-parallel replicas)
  tp_model,            ///< tp divides the heads, the KV heads (query groups) and the MLP width
  sp_needs_tp,         ///< sequence parallelism needs tp >= 2
  sp_sequence,         ///< sequence parallelism: tp·cp divides seq_len
  cp_sequence,         ///< context parallelism: cp_sequence_chunks divides seq_len
  cp_attention,        ///< context parallelism runs on a flash-class attention kernel
  vpp_pipeline,        ///< model chunks (vpp >= 2) need a pipeline (pp >= 2)
  pipeline_layers,     ///< every stage's chunks hold a layer: pp·vpp <= layers
  pipeline_strategy,   ///< a pipeline runs ddp or zero1 within each stage
  interleaved_vpp,     ///< the interleaved schedule and vpp >= 2 go together
  interleaved_groups,  ///< the interleaved schedule runs micro-batches in groups of pp
  ep_model,            ///< expert parallelism needs a MoE model
  ep_experts,          ///< ep divides the experts
  ep_ranks,            ///< ep divides the TP x CP x DP ranks of a stage
  moe_sp,              ///< MoE under tensor parallelism needs sequence parallelism
  mla_tp,              ///< MLA under tensor parallelism needs sequence parallelism (modelled only with it)
};
/// One sentence: "tp does not divide the heads, KV heads and MLP width".
std::string_view describe(LayoutRule);

/// What a layout is checked against besides the model.
struct LayoutContext {
  std::int64_t gpus = 1;
  int gpus_per_node = 1;
  int nodes = 1;
  std::int64_t seq_len = 1;
  std::int64_t micro_batches = 1;  ///< per optimizer step (grad_accum)
  bool flash_attention = true;     ///< a flash-class attention kernel
};

/// Every rule `layout` breaks on `model` in `context`, in LayoutRule order; empty: a layout
/// stepcast can predict. layout.dp is not checked (resolve derives it from the GPUs). The
/// Megatron sources: column- and row-parallel splits (Shoeybi et al. 2019), the sequence
/// split of SP and of CP's 2·cp load-balanced chunks, rank order "tp-cp-ep-dp-pp"
/// (parallel_state.py), the interleaved schedule's groups of pp micro-batches; DeepSpeed's
/// PipelineEngine asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
/// (deepspeed/runtime/pipe/engine.py) and FSDP does not pipeline.
std::vector<LayoutRule> layout_violations(const ParallelLayout& layout, const TransformerSpec& model,
                                          const LayoutContext& context);

/// The chunks context parallelism cuts a sequence into: 2·cp for causal (decoder) attention,
/// the load-balanced split of Megatron-LM's context parallelism; cp otherwise.
std::int64_t cp_sequence_chunks(const TransformerSpec& spec, int cp);

// ---------------------------------------------------------------------------------------
// Rank placement

/// A rank's coordinate in each group kind.
struct RankCoords {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};

/// Distance between consecutive ranks of a group, in Megatron's order "tp-cp-ep-dp-pp"
/// (TP fastest; Megatron-LM megatron/core/parallel_state.py, RankGenerator, ep = 1):
/// tp 1, cp t, dp t·cp, pp t·cp·dp.
std::int64_t group_stride(const ParallelLayout& layout, GroupKind kind);

/// rank = tp + t·(cp + cp_deg·(dp + dp_deg·pp)), and back. Throws std::invalid_argument
/// for a coordinate or rank out of range.
std::int64_t rank_of(const ParallelLayout& layout, const RankCoords& c);
RankCoords rank_coords(const ParallelLayout& layout, std::int64_t rank);

/// Where one kind of group lies on the nodes, ranks filling nodes in order (node = rank /
/// gpus_per_node). When groups differ (a degree that does not divide the node), each
/// number is the worst over groups and nodes.
struct GroupPlacement {
  int ranks = 1;                  ///< members of one group (its degree)
  int ranks_per_node = 1;         ///< members of one group on one node
  int nodes_spanned = 1;          ///< nodes one group touches
  int groups_sharing_a_node = 1;  ///< groups of this kind with members on one node (NIC sharing)
};

/// The placement of `kind`'s groups; throws std::invalid_argument for gpus_per_node < 1 or
/// an invalid degree. Closed form, no walk over the ranks: a group is an arithmetic
/// progression (degree n, stride s = group_stride), the s groups of a block of s·n ranks
/// interleave, blocks repeat; with g GPUs per node, s >= g gives one member per node, n
/// nodes and min(g, GPUs) groups per node; s < g gives min(n, ceil(g/s)) members per node
/// and the span and sharing from the block boundaries' offsets in their nodes, which repeat
/// after g / gcd(s·n, g) blocks (cost O(g), whatever the GPUs). parallel_test.cpp checks it
/// against a walk over every rank.
GroupPlacement group_placement(const ParallelLayout& layout, GroupKind kind, int gpus_per_node);

// ---------------------------------------------------------------------------------------
// Tensor and sequence parallelism

/// The forward GEMMs one GPU runs for one layer under tensor parallelism (Megatron, Shoeybi
/// et al. 2019, arXiv 1909.08053, Sec. 3): column-parallel QKV and MLP-up split n by t,
/// row-parallel attention-out and MLP-down split k by t; the vocab-parallel LM head has
/// vocab_rows_per_rank(V, t) rows. `tokens` = the GEMM's m (b·s/cp: with SP the input is
/// all-gathered to the full sequence first). MLA (with SP): the up projections split the
/// heads (n by t), the down projections stay whole on the rank's own tokens/t (Megatron-Core's
/// multi_latent_attention.py). Throws std::invalid_argument when t does not divide heads,
/// kv_heads or ffn_hidden.
std::vector<GemmShape> tp_layer_gemms(const TransformerSpec& spec, std::int64_t tokens, int tp);

/// Rows of a vocab-parallel embedding or LM head on one TP rank: ceil(V_pad / t), with V
/// padded up to a multiple of divisible_by·t (Megatron-LM `--make-vocab-size-divisible-by`,
/// default 128, in _vocab_size_with_padding; pass 1 for no padding).
std::int64_t vocab_rows_per_rank(std::int64_t vocab, int tp, int divisible_by = 1);

/// How a TP collective runs beside the GEMM it feeds or drains under Megatron-Core's
/// --tp-comm-overlap (Transformer Engine's userbuffers; names as TE's initialize_ub).
enum class TpOverlap { none, ring_exchange, pipeline, bulk };

/// One kind of collective a layer issues, `count` times, each of `bytes` in the nccl-tests
/// convention (the whole b·s·h tensor: all-reduce buffer, all-gather output, reduce-scatter
/// input).
struct TpCollective {
  Collective op = Collective::all_reduce;
  int count = 0;
  double bytes = 0;
  TpOverlap overlap = TpOverlap::none;  ///< how it runs beside its GEMM (none: alone, blocking)
  double gemm_s = 0;                    ///< the GEMM it overlaps, s (overlap != none)
  int chunks = 1;                       ///< pieces the pair is cut into (overlap != none)
  double comm_sm_share = 0;             ///< share of the GPU's SMs the collective's kernel holds
  int mlp_count = 0;                    ///< how many of the `count` belong to the MLP
  int attn_in_count = 0;                ///< how many gather attention's input (or reduce its gradient)
};

/// Seconds a TP collective that takes `comm_s` alone adds to the GEMM it overlaps
/// (`gemm_s` alone), as Transformer Engine's userbuffers run them (TE v1.8
/// pytorch/module/base.py initialize_ub), with n = c.chunks, g = gemm_s, x = comm_s:
///  ring_exchange  the GEMM in n chunks, n - 1 peer-to-peer steps on the copy engines
///                 (use_ce), each beside one chunk: total = g/n + (n-1)·max(g/n, x/(n-1))
///  bulk           the whole collective beside an independent GEMM; its kernel holds a share
///                 s = c.comm_sm_share of the SMs (num_sm 16), so the GEMM runs at (1 - s)
///                 while both run: total = x >= g/(1-s) ? x : g + x·s
///  pipeline       the GEMM in n splits (num_splits 4), each split's reduce-scatter beside the
///                 next split: the first GEMM split and the last reduce-scatter split alone,
///                 the rest as bulk: total = g/n + bulk((n-1)g/n, (n-1)x/n) + x/n
///  none           x (the collective blocks the stream).
/// Returns total - g, >= 0.
double tp_overlap_exposed_s(const TpCollective& c, double comm_s);

/// A layer's TP collectives per micro-batch, forward and backward.
struct TpLayerComm {
  std::vector<TpCollective> forward;
  std::vector<TpCollective> backward;
  double forward_bytes() const;  ///< sum of count·bytes
  double backward_bytes() const;
};

/// Share of a model's layers whose MLP is split by tensor parallelism and so issues the MLP's
/// TP collectives: the dense layers, and the MoE layers with shared experts (Megatron-Core
/// splits a shared expert like a dense MLP); a MoE layer's routed experts are whole on each
/// rank (expert TP 1) and exchange tokens by all-to-all instead:
///   1 - φ + φ·[shared_experts > 0], φ = moe_layer_share.
double tp_mlp_layer_share(const TransformerSpec& spec);

/// Share of a layer's h-wide tensor that attention's input collectives move: 1, or for MLA
/// (q_lora_rank + kv_lora_rank + qk_rope_dim) / h: Megatron-Core's MLA runs its down
/// projections on the rank's own s/t tokens and all-gathers the compressed latents, not the
/// hidden states (multi_latent_attention.py, gather_from_sequence_parallel_region); without
/// a query latent (q_lora_rank 0) the query projection gathers the hidden states, h in place
/// of q_lora_rank, so the share exceeds 1.
double tp_attention_input_share(const TransformerSpec& spec);

/// Scales parts of a layer's TP collectives: the MLP's (TpCollective::mlp_count) to the share
/// of layers that issue them (tp_mlp_layer_share) and attention's input collectives
/// (attn_in_count) to tp_attention_input_share: bytes and the GEMM each overlaps times the
/// share (the mean layer's; the input share, > 0, scales bytes only), the MLP's part dropped
/// at 0. Unchanged at 1, 1.
void scale_tp_collectives(TpLayerComm& comm, double mlp_share, double attention_input_share = 1.0);

/// TP collectives of one layer per micro-batch, each of b·(s/cp)·h·w bytes (Shoeybi et al.
/// 2019, Sec. 3, Fig. 4; Korthikanti et al. 2022, arXiv 2205.05198, Sec. 4.2.2):
///  - without SP: forward 2 all-reduces (after attention-out and MLP-down); backward 2
///    all-reduces (the conjugate f operators before QKV and MLP-up);
///  - with SP: forward 2 all-gathers + 2 reduce-scatters; backward their conjugates (2
///    reduce-scatters + 2 all-gathers) plus 2 re-gathers of the sharded saved inputs for
///    the weight gradients: 4 all-gathers + 2 reduce-scatters; 2 all-gathers when the
///    GEMMs keep their gathered inputs (`keep_gathered`, nanotron's column_linear);
///  - full recompute repeats the forward's collectives in backward.
/// Empty for t = 1. `tokens` = b·s/cp.
TpLayerComm tp_layer_comm(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp,
                          Recompute recompute = Recompute::none, bool keep_gathered = false);

/// One layer's GEMM times on one GPU, s, that TP collectives overlap: forward (fprop),
/// input gradient (dgrad) and weight gradient (wgrad) of the QKV, attention-out, MLP-up
/// and MLP-down projections (the column/row-parallel shapes of tp_layer_gemms).
struct TpLayerGemmTimes {
  double qkv_fprop = 0, qkv_dgrad = 0, qkv_wgrad = 0;
  double proj_fprop = 0, proj_dgrad = 0;
  double fc1_fprop = 0, fc1_dgrad = 0, fc1_wgrad = 0;
  double fc2_fprop = 0, fc2_dgrad = 0;
};

/// The TP collectives of one layer per micro-batch under --tp-comm-overlap, which needs
/// sequence parallelism (Megatron-Core r0.8 arguments.py asserts it), each paired with the
/// GEMM Transformer Engine v1.8 overlaps it with (initialize_ub's default methods):
///  forward   all-gather -> QKV fprop and -> MLP-up fprop (ring_exchange, tp chunks);
///            attention-out and MLP-down fprop -> reduce-scatter (pipeline, 4 splits, 16 SMs)
///  backward  the output gradient's all-gather -> attention-out and MLP-down dgrad
///            (ring_exchange); the saved input's re-gather beside QKV and MLP-up dgrad, and
///            their dgrad's reduce-scatter beside their wgrad (bulk, 16 SMs)
///  full recompute repeats the forward's in backward.
/// Same bytes and counts as tp_layer_comm with sp; `sm_count` > 16 the GPU's SMs.
TpLayerComm tp_layer_comm_overlapped(std::int64_t tokens, std::int64_t hidden, double w, int tp,
                                     const TpLayerGemmTimes& gemms, int sm_count,
                                     Recompute recompute = Recompute::none);

/// The TP collectives of one layer per micro-batch as Megatron's own linear layers run them
/// without --tp-comm-overlap (LinearWithGradAccumulationAndAsyncCommunication,
/// megatron/core/tensor_parallel/layers.py): the column-parallel projections' (QKV, MLP-up)
/// backward launches its collective asynchronously beside a GEMM that does not wait for it:
///  - with SP: the re-gather of the saved sharded input beside the input-gradient (dgrad)
///    GEMM, then the input gradient's reduce-scatter beside the weight-gradient (wgrad) GEMM;
///  - without SP: the input gradient's all-reduce beside the wgrad GEMM.
/// Each such pair runs as TpOverlap::bulk, NCCL's channels holding `comm_sm_share` of the SMs
/// while both run. The forward's collectives and the row-parallel projections' backward one
/// (the output gradient's all-gather under SP) block the stream, as in tp_layer_comm, whose
/// bytes and counts these are; full recompute repeats the forward's.
TpLayerComm tp_layer_comm_async(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp,
                                const TpLayerGemmTimes& gemms, double comm_sm_share,
                                Recompute recompute = Recompute::none);

/// TP collectives of the vocab-parallel embedding, LM head and loss per micro-batch
/// (Shoeybi et al. 2019, Sec. 3, "input embedding" and the fused parallel cross entropy;
/// Korthikanti et al. 2022, Sec. 4.2.2 for SP), `tokens` = b·s/cp, t > 1:
///  - embedding: forward one all-reduce of b·s·h·w, none backward; with SP a reduce-scatter
///    forward and its conjugate all-gather backward;
///  - LM head input: backward one all-reduce of b·s·h·w; with SP an all-gather forward and
///    backward a reduce-scatter plus the re-gather of the saved sharded input;
///  - vocab-parallel cross entropy: forward 3 all-reduces of b·s fp32 values (the logit
///    maximum, the target logit and the sum of exponentials).
/// Empty for t = 1.
TpLayerComm tp_embedding_head_comm(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp);

/// Parameters one GPU of a pipeline stage holds (elements) under tensor parallelism, what its
/// gradients and optimizer states (and so its DP traffic) are proportional to. Megatron's
/// split (Shoeybi et al. 2019, Sec. 3): weight matrices, column-parallel biases (Q, K, V,
/// MLP up/gate) and the vocab-parallel word embedding / LM head are divided by t; norms,
/// row-parallel biases (attention out, MLP down), position and token-type tables, and the
/// pooler are replicated. The first stage holds the embeddings, the last the final norm,
/// the LM head (or, with tied embeddings and p > 1, a copy of the word embedding whose
/// gradient Megatron all-reduces with the first stage's) and the pooler.
struct StageParameters {
  double layers = 0;     ///< the stage's transformer blocks
  double embedding = 0;  ///< word (+ position, type, embedding-norm) tables (first stage)
  double head = 0;       ///< final norm, LM head or tied copy, pooler (last stage)
  double total() const { return layers + embedding + head; }
};
StageParameters stage_parameters_per_gpu(const TransformerSpec& spec, int stage, int pp, int vpp, int tp);

// ---------------------------------------------------------------------------------------
// Context parallelism

/// How the context-parallel ranks of a layer exchange K and V.
enum class CpCommKind {
  ring,        ///< Megatron-LM context parallelism: Transformer Engine's p2p ring (Liu et al. 2023,
               ///< Ring Attention, arXiv 2310.01889), overlapped with the attention chunks
  all_gather,  ///< Llama 3's variant: all-gather K/V, then attention of the local queries
               ///< (Llama Team 2024, arXiv 2407.21783, Sec. 3.3.2), exposed
};
/// "ring", "all_gather".
std::string_view name(CpCommKind);
CpCommKind parse_cp_comm(std::string_view);  ///< throws std::invalid_argument
std::vector<std::string> cp_comm_names();

/// Ring-attention K/V exchange of one layer per micro-batch on one GPU (Liu et al. 2023,
/// Ring Attention, arXiv 2310.01889; Megatron-LM context parallelism via Transformer
/// Engine's p2p ring): cp - 1 steps, each passing the local K and V chunk to the next rank,
///   forward per step  2·b·(s/cp)·(kv_dim/t)·w bytes,
///   backward per step 4·b·(s/cp)·(kv_dim/t)·w bytes (K and V again, plus dK and dV).
/// Under tensor parallelism a rank holds kv_heads/t heads, and exchanges only those.
struct CpLayerComm {
  int steps = 0;
  double forward_bytes_per_step = 0;
  double backward_bytes_per_step = 0;
  double forward_bytes() const { return steps * forward_bytes_per_step; }
  double backward_bytes() const { return steps * backward_bytes_per_step; }
};
/// `tokens` = b·s (the full sequence; divided by cp here). Throws when cp does not divide it
/// or t does not divide the KV heads.
CpLayerComm cp_layer_comm(const TransformerSpec& spec, std::int64_t tokens, double w, int cp, int tp = 1);

/// The part of a ring exchange the attention does not hide: step i's transfer runs beside
/// the attention of chunk i (the first chunk is local), so with a causal load-balanced
/// split (each rank holds chunks j and 2·cp - 1 - j; Megatron-LM's context-parallel data
/// split) every chunk takes attention_s / cp and
///   exposed = steps · max(0, step_s - attention_s / cp),   step_s = latency + bytes / rate.
/// `attention_s` is the attention of the rank's queries against the whole sequence.
double cp_ring_exposed_s(int steps, double step_s, double attention_s, int cp);

/// Llama 3's all-gather variant per layer and micro-batch on one GPU, in the nccl-tests
/// convention (the gathered output): forward one all-gather of K and V, 2·b·s·(kv_dim/t)·w
/// bytes; backward the same all-gather again (K and V are not kept whole) and one
/// reduce-scatter of dK and dV of the same size. Empty for cp = 1.
TpLayerComm cp_all_gather_comm(const TransformerSpec& spec, std::int64_t tokens, double w, int cp, int tp = 1);

/// The data-parallel gradient group of a layout with context parallelism: Megatron reduces
/// gradients (and shards the distributed optimizer) over the DP x CP ranks of one TP rank and
/// stage (parallel_state's data-parallel group "with context parallel"). Under Megatron's
/// order those are the ranks of a layout with dp·cp data-parallel ranks and cp = 1.
ParallelLayout gradient_group_layout(const ParallelLayout& layout);

// ---------------------------------------------------------------------------------------
// Expert parallelism

/// The expert layers' layout of `layout` under expert parallelism of degree `ep`
/// (Megatron-Core's expert rank generator, order "tp-ep-dp-pp" with expert TP 1, and its
/// parallel folding: the expert grid EP x expert-DP spans the attention's TP x CP x DP ranks
/// of a stage, Liu et al. 2025, arXiv 2504.14960): the tp·cp·dp ranks of a stage
/// regrouped into EP groups of `ep` consecutive ranks, the fastest dimension (returned as
/// `tp`, so the group placement of GroupKind::tp is the EP group's: inside a node when ep <=
/// GPUs per node), and the expert-data-parallel groups of tp·cp·dp/ep ranks over which an
/// expert's gradients reduce (returned as `dp`); pp kept. Experts are not split by TP
/// (expert TP 1, Megatron-Bridge's MoE presets). Throws std::invalid_argument when ep does
/// not divide tp·cp·dp.
ParallelLayout expert_parallel_layout(const ParallelLayout& layout, int ep);

// ---------------------------------------------------------------------------------------
// Pipeline parallelism

/// Layers of each model chunk, chunk c = k·p + i being the k-th chunk of stage i (Megatron's
/// virtual pipeline order). With n = p·v chunks, q = L / n and r = L mod n, every chunk gets
/// q layers and chunks 1..r one more each: the first chunk, which also holds the embedding
/// and keeps the most micro-batches in flight, never gets an extra layer; the last (LM
/// head) gets one only when r = n - 1. stepcast's rule, not Megatron's (which demands
/// divisibility or explicit first/last stage counts). Throws when L < p·v.
std::vector<int> layers_per_chunk(std::int64_t layers, int pp, int vpp = 1);
/// Layers of each physical stage: the sum of its v chunks.
std::vector<int> layers_per_stage(std::int64_t layers, int pp, int vpp = 1);

/// How layers are split into pipeline stages ("pp_split" in a scenario's strategy):
enum class StageSplit {
  even,      ///< layers_per_chunk above: equal layer counts, embedding and LM head ignored
  balanced,  ///< balanced_layers_per_stage below (nanotron's cost-balanced split)
};
/// "even", "balanced".
std::string_view name(StageSplit);
StageSplit parse_stage_split(std::string_view);  ///< throws std::invalid_argument
std::vector<std::string> stage_split_names();

/// Layers of each of p stages when the LM head is counted as `head_cost` layers of work and
/// the split balances cumulative cost: blocks in order (L layers of cost 1, then the head),
/// block j goes to the current stage i, and the stage moves on once the cumulative cost
/// exceeds (i + 1)/p of the total (nanotron's build_model, models/base.py, with each block's
/// cost from get_block_compute_costs: a decoder layer 4·h·heads·d + 3·f·h, the LM head
/// V·h). The last stage may hold the LM head alone (Llama-3.1-8B's 32 layers over 32 stages:
/// stage 0 takes 2); any other stage the rule leaves without a layer takes one from its busier
/// neighbour. Throws when L < p.
std::vector<int> balanced_layers_per_stage(std::int64_t layers, int pp, double head_cost);

/// The LM head's cost in decoder layers for the balanced split: V·h over one layer's
/// linear weights (attention's q, k, v, o and the MLP's), i.e. GEMM FLOPs per token.
double head_cost_in_layers(const TransformerSpec& spec);

/// Layers of each chunk under `split` (balanced needs vpp = 1; throws otherwise).
std::vector<int> split_layers_per_chunk(const TransformerSpec& spec, int pp, int vpp, StageSplit split);

/// Bytes one GPU sends to the next stage per micro-batch and chunk boundary (the activation
/// forward; the same again as its gradient backward): b·(s/cp)·h·w, divided by t under SP
/// (the activation is already split along the sequence over the TP ranks; Korthikanti et
/// al. 2022, Sec. 4.2.2). Without SP every TP rank sends the whole replicated tensor, as
/// Megatron-core's p2p_communication does (the scatter/gather optimization of Narayanan et
/// al. 2021, Sec. 4.1, is not modelled). `tokens` = b·s/cp.
double pipeline_p2p_bytes(std::int64_t tokens, std::int64_t hidden, double w, int tp, bool sp);

/// Forward sends of stage i per micro-batch: v chunk boundaries leave every stage but the
/// last, whose last chunk ends the model: v for i < p - 1, v - 1 for i = p - 1.
int pipeline_sends_per_microbatch(int stage, int pp, int vpp = 1);

/// Bubble fractions, as bubble time over ideal compute time (Narayanan et al. 2021, arXiv
/// 2104.04473, Sec. 2.2): GPipe and 1F1B (p - 1)/m.
double bubble_fraction_1f1b(int pp, int microbatches);
/// Interleaved 1F1B: (p - 1)/(v·m) (Narayanan et al. 2021, Sec. 2.2.2).
double bubble_fraction_interleaved(int pp, int microbatches, int vpp);
/// ZB-H1: (p - 1)·(T_F + T_B - T_W) / (m·(T_F + T_B + T_W)), B the input gradient and W
/// the weight gradient; with T_F = T_B = T_W, (p - 1)/(3m) (Qi et al. 2023, arXiv
/// 2401.10241, Sec. 3.1 and Table 1).
double bubble_fraction_zb_h1(int pp, int microbatches, double t_f = 1, double t_b = 1, double t_w = 1);
/// The schedule's bubble with equal F, B, W times.
double bubble_fraction(PipelineScheduleKind schedule, int pp, int microbatches, int vpp = 1);

/// Peak micro-batches whose activations stage i keeps, in units of one micro-batch through
/// all of the stage's layers:
///  - GPipe: m;
///  - 1F1B and ZB-H1: min(p - i, m) (Narayanan et al. 2021, Sec. 2.2.1; ZB-H1 keeps 1F1B's
///    peak, Qi et al. 2023, Sec. 3.1);
///  - interleaved: min(2·(p - i - 1) + (v - 1)·p + 1, m·v) chunks over v, the warm-up of
///    Megatron-core's forward_backward_pipelining_with_interleaving plus one; stage 0 with
///    m >= p gives p·(1 + (p - 1)/(p·v)) (Korthikanti et al. 2022, Sec. 4.2.3).
double in_flight_microbatches(PipelineScheduleKind schedule, int stage, int pp, int microbatches, int vpp = 1);

// ---------------------------------------------------------------------------------------
// Activation memory under TP/SP

/// Activation bytes of one layer for one micro-batch under tensor parallelism, Korthikanti
/// et al. 2022, arXiv 2205.05198, Table 2 (16-bit activations, ffn = 4h, multi-head
/// attention, the score matrix stored):
///   no SP, no recompute      s·b·h·(10 + 24/t + 5·a·s/(h·t))
///   SP, no recompute         s·b·h·(34/t + 5·a·s/(h·t))
///   selective recompute      the same without the 5·a·s/(h·t) term
///   full recompute           2·s·b·h
/// `s` is the sequence on this GPU (s/cp under context parallelism).
double korthikanti_activation_bytes_per_layer(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t heads,
                                              int tp, bool sp, Recompute recompute = Recompute::none);

}  // namespace stepcast
