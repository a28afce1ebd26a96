/// \file
/// Memory per GPU for every data-parallel strategy: weights, gradients, optimizer states,
/// activations, communication buffers, CUDA context and allocator overhead, and the verdict
/// (fits, tight, out of memory) naming the largest terms.
#pragma once

#include "model/flops.hpp"
#include "model/offload.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast {

/// Optimizer state accounting.
enum class OptimizerKind {
  /// Adam, mixed precision: 2 (16-bit weights) + 2 (16-bit grads) + 12 (fp32 master,
  /// momentum, variance) = 16 B/param (ZeRO paper, Rajbhandari et al. 2020, Sec. 3.1, K=12).
  adam_mixed_16,
  /// DeepSpeed's implementation keeps fp32 gradients too: 18 B/param for ZeRO-3 and
  /// 4P + 16P/N for ZeRO-2 (DeepSpeed estimate_zero{2,3}_model_states_mem_needs).
  adam_deepspeed_18,
  /// Plain SGD with momentum, for completeness: weights + grads + 4 B momentum (fp32 master
  /// when mixed).
  sgd_momentum,
};

std::string_view name(OptimizerKind);
OptimizerKind parse_optimizer(std::string_view);  ///< "adam", "adam_deepspeed", "sgd"
std::vector<std::string> optimizer_names();

/// Default caching-allocator overhead (fraction of allocated bytes reserved but unusable):
/// a *parameter*, not a measured constant. PyTorch's CUDA caching allocator rounds requests
/// up (512 B multiples, 2 MiB segments for small blocks, 20 MiB for large) and cannot merge
/// split blocks across segments, so reserved > allocated; the ZeRO paper (Rajbhandari et al.
/// 2020, Sec. 3.2 / 6.3) reports OOM with "over 30% of memory still available" in extreme
/// long-sequence cases. 5% is an assumed typical value for steady-state training with fixed
/// shapes; calibrate it as max_memory_reserved / max_memory_allocated − 1 from measured runs.
inline constexpr double kAllocatorFragmentation = 0.05;

/// Verdict threshold: "tight" when the total exceeds this fraction of capacity.
inline constexpr double kTightFraction = 0.9;

struct MemoryInputs {
  const TransformerSpec* model = nullptr;
  std::int64_t micro_batch = 1;  ///< sequences per GPU per micro-step
  std::int64_t seq_len = 0;      ///< tokens per sequence
  Precision precision = Precision::bf16_mixed;
  OptimizerKind optimizer = OptimizerKind::adam_mixed_16;
  Recompute recompute = Recompute::none;
  /// Under selective recompute, what is recomputed (its outputs not kept); see
  /// activation_bytes_per_layer.
  RecomputeModules recompute_modules;
  bool flash_attention = true;     ///< no s x s score matrix kept (Dao et al. 2022)
  const LoraSpec* lora = nullptr;  ///< frozen base: no grads/optimizer for base weights
  Strategy strategy = Strategy::ddp;
  std::int64_t gpus = 1;  ///< data-parallel world size (GPUs / tp)
  /// Tensor-parallel degree (Megatron): weights, gradients, optimizer state, the layers'
  /// t-split activations and the vocab-parallel logits are 1/t per GPU; the h-wide
  /// activations (norm and block inputs, dropout masks: 4hw + 2h bytes per token (4hw without dropout),
  /// Korthikanti et al. 2022 Table 2's 10sbh) stay whole unless `sp` splits them too.
  int tp = 1;
  bool sp = false;
  /// Under `sp`, the QKV and MLP-up GEMMs keep their all-gathered input whole for the
  /// weight gradient (nanotron's column_linear without async communication) instead of the
  /// 1/t shard Megatron re-gathers (StrategySpec::sp_keep_gathered).
  bool sp_keep_gathered = false;
  /// Pipeline stages: the first stage's GPU holds 1/pp of the model's state and its
  /// layers' activations for `in_flight` micro-batches (model/parallel.hpp
  /// in_flight_microbatches: 1F1B keeps p on stage 0, GPipe m); the logits are counted as on
  /// the last stage, for one micro-batch. The largest of the stages, up to the uneven split.
  int pp = 1;
  double in_flight = 1;
  /// Under a pipeline, the layers each stage holds (its chunks' layers: model/parallel.hpp
  /// split_layers_per_chunk) and each stage's micro-batches in flight
  /// (in_flight_microbatches); empty: ceil(layers / pp) layers and `in_flight` on the stage
  /// reported. Each stage is costed with its own layers, the first with the embedding, the
  /// last with the final norm, the LM head (a copy of a tied embedding: Megatron-LM keeps the
  /// word embeddings on the last stage for the output layer) and the logits; the GPU reported
  /// is the stage with the most memory.
  std::vector<int> stage_layers;
  std::vector<double> stage_in_flight;
  /// Context-parallel degree: a GPU holds seq_len / cp tokens of each sequence, so its
  /// activations and logits are those of s/cp (Megatron-LM context parallelism); the model
  /// states shard over `gpus`, which counts the DP x CP ranks.
  int cp = 1;
  /// Expert parallelism of a MoE model (Megatron-Core's rule): the routed experts spread
  /// over `ep` ranks of the DP x CP group, so each GPU holds E/ep of every MoE layer's
  /// experts, and an expert is replicated over the gpus/ep ranks of its expert-data-parallel
  /// group, over which the strategy shards its gradients and optimizer states (ZeRO) as it
  /// shards the dense part over `gpus`. ep divides gpus.
  int ep = 1;
  /// Tokens an expert takes over its balanced share (the capacity factor, Lepikhin et al.
  /// 2020, GShard): the expert activations scale with it. 1.0: dropless with balanced
  /// routing (Megatron-Core's default, no capacity).
  double moe_capacity_factor = 1.0;
  /// CPU offload (model/offload.hpp): the optimizer states and fp32 gradients (and with
  /// `parameters` the 16-bit shards) move to the host of `gpus_per_host` GPUs, whose memory
  /// is `host_capacity_bytes` (0: unknown; then offload is refused).
  OffloadKind offload = OffloadKind::none;
  int gpus_per_host = 1;
  double host_capacity_bytes = 0;
  std::int64_t gpus_per_node = 1;  ///< HYBRID_SHARD shards within a node
  double bucket_bytes = 25e6;      ///< DDP/ZeRO gradient bucket (PyTorch DDP default 25 MB)
  int prefetch_layers = 1;         ///< ZeRO-3/FSDP layers gathered ahead of use
  double capacity_bytes = 0;       ///< GPU memory (bytes); must be > 0
  double cuda_context_bytes = 0;   ///< per-process CUDA context + workspace (bytes)
  /// PyTorch DDP's `gradient_as_bucket_view` (default False): when false, DDP's flat
  /// all-reduce buckets are a second copy of every gradient (PyTorch DDP docs: setting it
  /// True saves "the total gradients size"). Only used for Strategy::ddp.
  bool gradient_as_bucket_view = false;
  /// Gradients held in fp32, 4 B each, for the whole step: a main-gradient buffer the
  /// micro-steps accumulate into and the data-parallel reduction reads (Megatron-LM's
  /// --accumulate-allreduce-grads-in-fp32, nanotron's FP32GradientAccumulator,
  /// src/nanotron/optim/gradient_accumulator.py; FSDP's reduce_dtype float32 leaves the
  /// sharded gradients in fp32). The scenario's strategy.reduce_dtype "fp32".
  bool fp32_gradients = false;
  /// fp32 parameters under torch.autocast (the scenario's training.mixed_precision
  /// "autocast": PyTorch AMP under DDP, as Hugging Face's Trainer and Lightning run it): each
  /// parameter is its own fp32 master (4 B) and autocast's w-byte cast of it lives from the
  /// forward to the backward that uses it (torch.autocast caches the casts of leaf tensors
  /// for the forward, and the Linear saves its cast weight), so weights are 4·P + w·C (C the
  /// cast parameters, model/kernels.hpp autocast_casts) and Adam keeps its moments alone
  /// (K - 4); gradients and DDP's buckets are fp32 (the parameters' dtype; fp32_gradients
  /// must be set too); the residual stream is fp32 (the embedding's output and the norms run
  /// in fp32 under autocast), so each norm saves a 4-byte input.
  bool autocast = false;
  /// The gradients are created by the backward, none held when it starts: PyTorch
  /// autograd with zero_grad(set_to_none=True) (its default since 2.0) and one micro-step per
  /// optimizer step, so the peak is the larger of the loss's (activations and logits, no
  /// gradients) and the backward's end (the gradients; the activations, the logits and
  /// autocast's casts freed): the gradient term is what the gradients exceed those by, else 0.
  bool gradients_created_by_backward = false;
  /// The loss is one fused cross-entropy kernel (flash-attn's xentropy, Liger's; the scenario's
  /// training.fused_loss): it keeps a row's log-sum-exp, not an fp32 copy of the logits.
  bool fused_loss = false;
  /// fp32 copies of the logits alive at the unfused loss's peak (training.loss_fp32_copies):
  /// 1, the upcast whose softmax is taken in place (Megatron-LM's vocab-parallel cross-entropy);
  /// 2 where the row maximum is subtracted out of place (nanotron's sharded_cross_entropy);
  /// 3 for PyTorch's F.cross_entropy on upcast logits: log_softmax saves its fp32 output, and
  /// its backward writes the logits' fp32 gradient while the log-probabilities and their
  /// gradient (nll_loss's backward, dense) are alive (aten LogSoftmax.cpp, LossNLL.cpp).
  int loss_fp32_copies = 1;
  /// A fused SwiGLU kernel (the fused kernel profile): a gated MLP keeps 3 f-wide tensors per
  /// token, not 4 (layer activations, memory.cpp layer_bytes_per_token).
  bool fused_swiglu = false;
  /// Bytes per element of the GEMM inputs kept for the backward when Transformer Engine keeps
  /// their low-precision casts (fp8 or fp4 precision under the fused kernel profile: 1 or
  /// 0.5625, base/types.hpp gemm_operand_bytes; memory.cpp layer_bytes_per_token); 0: kept
  /// at the working width.
  double gemm_input_bytes = 0;
  /// Allocator overhead as a fraction of all allocator-managed bytes (everything but the
  /// CUDA context); see kAllocatorFragmentation for the default.
  double allocator_fragmentation = kAllocatorFragmentation;
};

struct MemoryTerm {
  std::string name;  ///< "weights", "gradients", "optimizer", "activations", ...
  double bytes = 0;
  std::string note;  ///< how it was counted, e.g. "16-bit, sharded 1/8"
};

enum class MemoryVerdict { fits, tight, oom };
std::string_view name(MemoryVerdict);

struct MemoryBreakdown {
  std::vector<MemoryTerm> terms;  ///< in a fixed order
  int stage = 0;                  ///< under a pipeline, the stage reported (the one with the most memory)
  /// The layers' activations counted: the stage's layers x its micro-batches in flight.
  double activation_layers = 0;
  double total_bytes = 0;
  /// Under a pipeline with its stages listed, every stage's total bytes, stage 0 first (the
  /// GPU of global rank 0, which frameworks such as nanotron log); else empty.
  std::vector<double> stage_total_bytes;
  double capacity_bytes = 0;
  MemoryVerdict verdict = MemoryVerdict::fits;  ///< tight when total > 90% of capacity
  std::vector<std::string> largest;             ///< names of the largest terms, largest first (up to 3)
  /// Host memory under CPU offload, per host (all its GPUs' partitions); empty without.
  std::vector<MemoryTerm> host_terms;
  double host_total_bytes = 0;
  double host_capacity_bytes = 0;
  MemoryVerdict host_verdict = MemoryVerdict::fits;
};

/// What runs out: "GPU", "host", "GPU and host", or "" when both fit.
std::string out_of_memory(const MemoryBreakdown& m);

/// The one verdict of a step's memory: the worse of the GPU's and the host's (fits < tight < oom).
MemoryVerdict overall_verdict(const MemoryBreakdown& m);

/// Whether the step fits: neither the GPU nor the host (under CPU offload) runs out. The one
/// definition predict, scale, compare and plan use.
bool fits(const MemoryBreakdown& m);

/// What the caching allocator holds at the step's peak (PyTorch's max_memory_reserved, what
/// frameworks log as peak memory): every term but the CUDA context, which lives outside it.
double allocator_bytes(const MemoryBreakdown& m);

/// allocator_bytes of pipeline stage `stage` (stage_total_bytes); the reported stage's without a
/// stage list.
double allocator_bytes(const MemoryBreakdown& m, int stage);

/// Parameter counts that the model states are proportional to (elements).
struct ParamCounts {
  double stored = 0;               ///< all parameters held (base + LoRA adapters)
  double trainable = 0;            ///< parameters with gradients and optimizer state
  double per_layer = 0;            ///< one transformer block, stored (FSDP/ZeRO-3 gather unit)
  double per_layer_trainable = 0;  ///< trainable parameters of one block
  /// DeepSpeed's `largest_layer_params`: the biggest single module's own parameters (in
  /// practice the embedding table or an untied LM head).
  double largest_module = 0;
};

/// Counts for a model, with LoRA (frozen base, trainable adapters) when `lora` is non-null.
ParamCounts param_counts(const TransformerSpec& spec, const LoraSpec* lora);

/// Parameters of the largest single module (HF-style modules: embedding, position table,
/// untied LM head, each of q/k/v/o, gate/up/down, pooler), as DeepSpeed's estimator takes
/// `largest_layer_params` = max over modules of sum(p.numel() for p in m.parameters(recurse=False)).
std::int64_t largest_module_params(const TransformerSpec& spec);

/// The group a strategy shards over: 1 for DDP and NO_SHARD, `gpus` for ZeRO and FSDP
/// FULL_SHARD/SHARD_GRAD_OP, min(gpus, gpus_per_node) for HYBRID_SHARD.
std::int64_t shard_degree(Strategy strategy, std::int64_t gpus, std::int64_t gpus_per_node);

/// Model states per GPU (bytes): the ZeRO paper's weights + gradients + optimizer, plus the
/// parameters gathered for use under ZeRO-3/FSDP FULL/HYBRID_SHARD.
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double gathered_params = 0;
  double total() const { return weights + gradients + optimizer + gathered_params; }
};

/// Model states for `counts` under the strategy, optimizer, precision, GPU count and
/// prefetch depth of `in` (`in.model` is not used, so callers may pass raw counts).
ModelStateBytes model_state_bytes(const ParamCounts& counts, const MemoryInputs& in);

/// fits / tight (total > kTightFraction · capacity) / oom (total > capacity).
MemoryVerdict memory_verdict(double total_bytes, double capacity_bytes);

/// Activation bytes of one transformer layer for a micro-batch (Korthikanti et al. 2022,
/// arXiv 2205.05198, Sec. 4.1, no tensor parallelism): s·b·h·(34 + 5·a·s/h) with 16-bit
/// activations, ffn = 4h and multi-head attention; memory.cpp generalises the 34 to any
/// ffn_hidden, kv_heads, gated MLP and parallel block. The 5·a·s/h score term vanishes with
/// flash attention (which keeps a 4·a·s·b fp32 logsumexp instead) and with selective
/// recompute; full recompute keeps only the 2·s·b·h layer input.
double activation_bytes_per_layer(const TransformerSpec& spec, std::int64_t micro_batch, std::int64_t seq_len,
                                  Recompute recompute, bool flash_attention);

/// The whole per-GPU breakdown. Terms, in this order: weights, gradients, optimizer,
/// gathered_params, activations, logits, comm_buffers, cuda_context, fragmentation.
/// Throws std::invalid_argument on a null model, non-positive sizes or capacity.
MemoryBreakdown memory_per_gpu(const MemoryInputs& in);

}  // namespace stepcast
