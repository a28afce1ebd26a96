/// \file
/// Mixture-of-experts layers: which layers route tokens to experts, their parameters (total
/// and active per token), FLOPs, the expert GEMMs one GPU runs under expert parallelism, and
/// the all-to-all bytes of dispatch and combine. Pure functions of the shapes; the
/// simulator decides where the all-to-alls run.
#pragma once

#include "model/flops.hpp"
#include "model/transformer.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

struct CommFabric;

/// (MoeSpec itself is in model/transformer.hpp: a model carries it.)

/// Layers with a MoE MLP: i >= first_dense_layers with (i - first_dense_layers) % moe_every == 0,
/// for i in [0, layers). Throws std::invalid_argument on counts below their minimum.
std::int64_t moe_layer_count(std::int64_t layers, const MoeSpec& moe);

/// Parameters of one expert: 3·h·f gated (gate, up, down), 2·h·f plain.
std::int64_t expert_parameters(std::int64_t hidden, std::int64_t ffn, bool gated);

/// Parameters of one MoE MLP: E routed experts + S shared experts + the h x E router.
std::int64_t moe_mlp_parameters(const TransformerSpec& spec, const MoeSpec& moe);
/// The part of it one token uses: k routed + S shared experts + the router.
std::int64_t moe_mlp_active_parameters(const TransformerSpec& spec, const MoeSpec& moe);

/// Whole-model counts: the dense count (parameter_count) with each MoE layer's dense MLP
/// replaced by its MoE MLP; active: the same with the MoE MLPs' active parts.
struct MoeParameters {
  std::int64_t total = 0;
  std::int64_t active = 0;
};
MoeParameters moe_parameters(const TransformerSpec& spec, const MoeSpec& moe);

/// Tokens one rank routes in a MoE layer from its `rows` (b·s/cp): under tensor parallelism
/// with sequence parallelism the layer's input is split along the sequence and each TP rank
/// dispatches its own rows/t tokens to whole experts (expert TP 1: Megatron-Core's MoE layer
/// under SP, token_dispatcher.py, and parallel folding, Liu et al. 2025, arXiv 2504.14960).
/// `tp` must divide `rows`.
std::int64_t moe_tokens_per_rank(std::int64_t rows, int tp);

/// One GPU's share of the routed expert work of one MoE layer for `tokens` tokens of its
/// micro-batch under expert parallelism of degree `ep` (experts spread evenly over the ep
/// ranks; ep divides the experts). With routing balanced, the rank computes tokens·k
/// token-expert pairs, tokens·k·ep/E per local expert; `imbalance` (>= 1: the busiest
/// rank's load over the mean) scales them. Each local expert runs its GEMMs on that many
/// rows (a grouped GEMM: one launch, each expert's tiles).
struct ExpertWork {
  std::int64_t local_experts = 0;  ///< E / ep
  double rows_per_expert = 0;      ///< tokens·k·ep/E · imbalance
  double flops_forward = 0;        ///< 2 · rows · (expert parameters) per local expert, summed
};
ExpertWork expert_work(const TransformerSpec& spec, const MoeSpec& moe, double tokens, int ep, double imbalance = 1.0);

/// Routed-expert parameters of the whole model: MoE layers x E x expert_parameters (0 for a
/// dense model): the part expert parallelism spreads over its ranks.
double routed_expert_parameters(const TransformerSpec& spec);

/// The fraction of a model's layers that are MoE layers: moe_layer_count / layers (0 for a
/// dense model).
double moe_layer_share(const TransformerSpec& spec);

/// One GEMM of a MoE MLP run as `groups` equal GEMMs in one launch (a grouped GEMM: each
/// local expert's tiles; cuBLAS/CUTLASS grouped GEMM as Megatron-Core's GroupedMLP runs it).
struct GroupedGemm {
  GemmShape shape;  ///< one group's (m x k)·(k x n); count_per_layer as in GemmShape
  std::int64_t groups = 1;
};

/// The forward GEMMs of one MoE MLP on one GPU for its `tokens` tokens: the router
/// (tokens x h)·(h x E); the local experts' up (gate and up when gated) and down GEMMs, E/ep
/// groups of ceil(tokens·k·ep/E · imbalance) rows (expert_work); the shared experts' up and
/// down GEMMs over all tokens, S·shared_ffn wide (the S experts side by side).
std::vector<GroupedGemm> moe_layer_gemms(const TransformerSpec& spec, const MoeSpec& moe, std::int64_t tokens, int ep,
                                         double imbalance = 1.0);

/// Bytes the token permutation of one MoE layer moves, forward, at `w` bytes per element:
/// dispatch gathers each token's k copies into expert order (reads and writes tokens·k·h
/// elements) and combine scatters them back (the same), 4·tokens·k·h·w; backward moves
/// their gradients the same way, the same bytes (Megatron-Core moe_utils permute/unpermute;
/// two memory-bound kernels each way).
double moe_permutation_bytes(const TransformerSpec& spec, const MoeSpec& moe, double tokens, double w);

/// Bytes one GPU sends in one all-to-all of a MoE layer (dispatch, and combine the same):
/// each of its `tokens` tokens goes to k experts, a share (ep - 1)/ep of them on other
/// ranks with routing balanced: tokens·k·h·w·(ep - 1)/ep. Forward: dispatch + combine;
/// backward: their gradients, the same bytes again (Lepikhin et al. 2020, GShard, Sec. 2.2;
/// Rajbhandari et al. 2022, DeepSpeed-MoE, Sec. 5).
double moe_all_to_all_bytes(const TransformerSpec& spec, const MoeSpec& moe, double tokens, double w, int ep);

/// Time of one all-to-all over `f` in which every rank sends `bytes_out` bytes, split evenly
/// over the other e - 1 ranks (NCCL runs it as grouped ncclSend/ncclRecv to every peer;
/// nccl-tests' alltoall busbw = algbw·(e - 1)/e). The ppn - 1 peers in the node are reached
/// over NVLink at the rank's intra ring rate; the e - ppn peers in other nodes over the
/// node's NICs, which the node's ppn ranks share (with PXN the bytes first cross NVLink to
/// the GPU on the destination's rail; the NIC load is the same):
///   t = latency_s + max(bytes_out·(ppn - 1)/(e - 1) / intra_GBps,
///                        bytes_out·(e - ppn)/(e - 1) / (inter_GBps / ppn))
/// One rank (e = 1) sends nothing: 0.
double all_to_all_time_s(double bytes_out, const CommFabric& f, double latency_s);

/// How a MoE layer's tokens reach their experts (Megatron-Core's moe_token_dispatcher_type
/// and flex backend): NCCL all-to-alls, or DeepEP's fused kernels (flex: HybridEP, DeepEP).
enum class MoeDispatcher { alltoall, hybridep, deepep };
std::string_view name(MoeDispatcher d);
std::vector<std::string> moe_dispatcher_names();
/// Throws std::invalid_argument naming the choices.
MoeDispatcher parse_moe_dispatcher(std::string_view s);

/// The CPU's work in one MoE MLP block (router, token dispatcher, grouped experts, combine)
/// per pass: ops Python dispatches one by one (each an eager op's CPU cost: Python, ATen
/// dispatcher, launch) and kernels a C++ loop launches per local expert (Transformer
/// Engine's grouped GEMM runs one cuBLAS GEMM per expert, with its input's quantization
/// under fp8; each the driver's launch cost). `captured_*`: the part that Transformer
/// Engine's graphs of the router and the dispatch preprocessing take (cuda_graph_scope
/// moe_router, moe_preprocess). Counted by reading Megatron-Core core_v0.17.0 with
/// Transformer Engine 2.14 (moe/router.py TopKRouter with router fusion, moe/token_dispatcher.py
/// MoEAlltoAllTokenDispatcher and _HybridEPManager, moe/experts.py TEGroupedMLP; a
/// Qwen3-style layer: no shared expert, aux loss, dropless, TP 1); not measured.
struct MoeHostOps {
  double python_forward = 0, python_backward = 0;
  double captured_forward = 0, captured_backward = 0;  ///< of python_*
  double per_expert_forward = 0, per_expert_backward = 0;
};
/// The counts for a dispatcher, fp8 (or fp4) GEMMs or 16-bit ones. DeepEP is taken as
/// HybridEP (the same flex dispatcher path).
MoeHostOps moe_host_ops(MoeDispatcher d, bool fp8);

/// One layer of one micro-batch's forward beside one layer of another's backward in
/// Megatron-Core's combined 1F1B schedule (--overlap-moe-expert-parallel-comm with
/// --delay-wgrad-compute; models/common/model_chunk_schedule_plan.py
/// TransformerLayerSchedulePlan.run @ core_v0.17.0), on two streams:
///   communication: combine_bwd | dispatch_fwd -> dispatch_bwd    | combine_fwd
///   compute:       attn_fwd    | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | attn_bwd
/// each op starting when its stream is free and its input is ready: dispatch_fwd after
/// attn_fwd, mlp_bwd after combine_bwd, dispatch_bwd after mlp_bwd (the input gradient; the
/// weight gradient mlp_bwd_dw is deferred), mlp_fwd after dispatch_fwd, combine_fwd after
/// mlp_fwd, attn_bwd after dispatch_bwd. attn_* are the layer's kernels outside the MoE MLP
/// block, mlp_* the block's.
struct CombinedLayerPair {
  double attn_fwd_s = 0, attn_bwd_s = 0;
  double mlp_fwd_s = 0, mlp_bwd_dgrad_s = 0, mlp_bwd_wgrad_s = 0;
  double dispatch_fwd_s = 0, combine_fwd_s = 0, dispatch_bwd_s = 0, combine_bwd_s = 0;
};

/// The pair's time: the later of the two streams' last ops (a max-plus recurrence over the
/// dependencies above); equal to the compute alone when the all-to-alls take no time.
double combined_layer_pair_s(const CombinedLayerPair& p);

}  // namespace stepcast
