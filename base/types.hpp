/// \file
/// The small vocabularies every module shares: numeric formats, GPU generations, NCCL's
/// link classes and collectives, training precisions, recompute modes and data-parallel strategies. Each has
/// a stable lower-case name (the one used in JSON files and in measured-run records) and a
/// parser that throws InputError-free std::invalid_argument listing the valid names; loaders
/// turn that into an InputError with the file and JSON path.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// Arithmetic formats of GEMM inputs.
enum class Dtype { fp32, tf32, fp16, bf16, fp8, fp4 };

/// GPU generations, as NCCL's tuning tables and datasheets group them.
/// GPU generations: NVIDIA's, then AMD's CDNA 3 (Instinct MI300X/MI325X, a contemporary of
/// Hopper; enumerators after blackwell so that `>= ampere` tests keep their meaning).
enum class GpuArch { volta, turing, ampere, ada, hopper, blackwell, cdna3 };

/// NCCL's three hardware-latency rows (tuning.cc): NVLink, PCIe and network.
enum class LinkClass { nvlink, pcie, network };

/// Training precision as the measured-run records name it.
/// fp8_mixed: fp8 GEMMs (per-tensor or MXFP8 scaling); fp4_mixed: NVFP4 GEMMs (4-bit E2M1
/// values, one E4M3 scale per 16; Transformer Engine's NVFP4BlockScaling), Blackwell only.
enum class Precision { fp32, fp16_mixed, bf16_mixed, fp8_mixed, fp4_mixed };

/// Activation recompute (checkpointing).
enum class Recompute { none, selective, full };

/// The modules selective recompute runs again in the backward, their outputs not kept
/// (Megatron-Core's TransformerConfig.recompute_modules; "core_attn" alone is its default and
/// Korthikanti et al. 2022's selective recompute).
struct RecomputeModules {
  bool core_attn = true;     ///< attention's core: no scores or flash state kept
  bool mla_up_proj = false;  ///< MLA's query and key-value up-projections: Q, K and V not kept
  bool layernorm = false;    ///< the two pre-norms: their outputs, the QKV and MLP-up inputs, not kept
  bool mlp = false;          ///< the dense MLP: its input kept, nothing inside it
  bool moe_act = false;      ///< the routed experts' activation: its output, the down projection's input, not kept
  /// torchtitan's op-level selective checkpointing (selective_ac_option "op"): a layer keeps
  /// its input, every other matmul's output (the 1st, 3rd, ...) and attention's, and
  /// recomputes everything else; alone, for a dense model without MLA.
  bool op_sac = false;
  bool operator==(const RecomputeModules&) const = default;
};

/// The module names, in the order above ("core_attn", "mla_up_proj", "layernorm", "mlp", "moe_act",
/// "op_sac").
std::vector<std::string> recompute_module_names();
/// Sets the module `name` in `m`; throws std::invalid_argument naming the valid ones.
void add_recompute_module(RecomputeModules& m, std::string_view name);
/// The modules set in `m`, comma-separated, in name order.
std::string recompute_modules_text(const RecomputeModules& m);
/// How a report names recompute: "selective (core_attn, layernorm)" where the modules are not
/// the default, else the mode's name.
std::string recompute_text(Recompute r, const RecomputeModules& m);

/// What CUDA graphs capture (Megatron-Core's cuda_graph_impl and cuda_graph_scope): the
/// whole forward and backward ("full_iteration"), or modules of each layer, captured by
/// Transformer Engine's make_graphed_callables forward and backward. A captured module's
/// kernels launch as one graph: one launch of CPU time per pass instead of one per op.
struct CudaGraphs {
  bool full_iteration = false;  ///< the whole step (cuda_graph_impl "full_iteration")
  bool attn = false;            ///< each layer's attention block (norm, QKV, attention, projection)
  bool mlp = false;             ///< each dense layer's MLP block
  bool moe_router = false;      ///< each MoE layer's router
  bool moe_preprocess = false;  ///< each MoE layer's dispatch preprocessing (split sizes)
  /// Each MoE layer's whole MLP block; Megatron-Core captures it under drop-and-pad only
  /// (dropless routing's token counts are read back on the CPU every layer).
  bool moe = false;
  bool any() const { return full_iteration || attn || mlp || moe_router || moe_preprocess || moe; }
  bool operator==(const CudaGraphs&) const = default;
};

/// The capture names, in the order above ("full_iteration", "attn", "mlp", "moe_router",
/// "moe_preprocess", "moe").
std::vector<std::string> cuda_graph_names();
/// Sets the capture `name` in `g`; throws std::invalid_argument naming the valid ones.
void add_cuda_graph(CudaGraphs& g, std::string_view name);
/// The captures set in `g`, comma-separated, in name order ("none" when none).
std::string cuda_graphs_text(const CudaGraphs& g);

/// NCCL collectives, named as in calibration files and reports.
/// all_to_all: every rank sends a distinct block to every other (expert-parallel dispatch and
/// combine); its bytes S are what one rank sends to the others.
enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, all_to_all };

/// Data-parallel strategies, named exactly as in measured-run records.
enum class Strategy {
  ddp,
  zero1,
  zero2,
  zero3,
  fsdp_full_shard,
  fsdp_shard_grad_op,
  fsdp_hybrid_shard,
  fsdp_no_shard,
};

std::string_view name(Dtype);
std::string_view name(GpuArch);
std::string_view name(LinkClass);
std::string_view name(Precision);
std::string_view name(Recompute);
std::string_view name(Strategy);
std::string_view name(Collective);

/// All names of each vocabulary, in declaration order (for --help, errors and choices).
std::vector<std::string> dtype_names();
std::vector<std::string> gpu_arch_names();
std::vector<std::string> link_class_names();
std::vector<std::string> precision_names();
std::vector<std::string> recompute_names();
std::vector<std::string> strategy_names();
std::vector<std::string> collective_names();

/// Parsers: throw std::invalid_argument naming the valid choices.
Dtype parse_dtype(std::string_view);
GpuArch parse_gpu_arch(std::string_view);
LinkClass parse_link_class(std::string_view);
Precision parse_precision(std::string_view);
Recompute parse_recompute(std::string_view);
Strategy parse_strategy(std::string_view);
/// The strategy a common name stands for, compared without case, '-', '_' or spaces:
/// "fsdp" and "fsdp2" (PyTorch FSDP's default ShardingStrategy.FULL_SHARD; FSDP2's
/// fully_shard), "hsdp" (HYBRID_SHARD), "zero-1" to "zero-3" (DeepSpeed's stages); none for
/// an unknown one. Callers try parse_strategy first: a canonical name is no alias.
std::optional<Strategy> strategy_alias(std::string_view);
Collective parse_collective(std::string_view);

/// The dtype of the GEMMs a precision runs (fp32 -> tf32 is *not* implied: fp32 stays fp32;
/// no scenario key turns TF32 on).
Dtype gemm_dtype(Precision);

/// Bytes per element of the 16-bit (or 32-bit for fp32) working copy of weights, gradients
/// and activations under a precision: 4 for fp32, 2 otherwise (fp8 and fp4 keep bf16 copies).
int working_bytes(Precision);

/// Bytes of one GEMM operand element of `d` as the GEMM reads it: 4 for fp32 and tf32, 2 for
/// fp16 and bf16, 1 for fp8, 0.5625 for fp4 (NVFP4: a 4-bit value and 1/16 of its block's
/// one-byte E4M3 scale; NVIDIA, "Introducing NVFP4", developer blog 2025-06).
double operand_bytes(Dtype d);
/// operand_bytes of the GEMMs a precision runs (gemm_dtype).
double gemm_operand_bytes(Precision);

/// Sharding facts of each strategy (ZeRO paper, Rajbhandari et al. 2020, Sec. 5; PyTorch
/// FSDP docs for ShardingStrategy).
bool is_fsdp(Strategy);            ///< a PyTorch FSDP mode (no gradient bucket: one flat tensor per unit)
bool shards_optimizer(Strategy);   ///< ZeRO-1 and above, every FSDP mode but NO_SHARD
bool shards_gradients(Strategy);   ///< ZeRO-2 and above, FSDP SHARD_GRAD_OP/FULL/HYBRID
bool shards_parameters(Strategy);  ///< ZeRO-3, FSDP FULL_SHARD and HYBRID_SHARD (in node)

}  // namespace stepcast
