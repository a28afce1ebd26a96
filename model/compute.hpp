/// \file
/// Compute time of a micro-step on one GPU as the sum of its kernels (model/kernels.hpp),
/// the device rates it runs at (from the catalogs, with their sources), and the optimizer
/// step as a memory-bound pass.
#pragma once

#include "model/flops.hpp"
#include "model/kernels.hpp"
#include "model/moe.hpp"
#include "topologies/gpu.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stepcast {

/// A saturating efficiency curve for GEMMs, eff(F) = max_fraction · F / (F + half_flops)
/// with F the FLOPs of one call: what `stepcast fit` fits to a calibration's cuBLAS sweep.
/// The compute model takes max_fraction · peak as the GPU's GEMM ceiling; its own tile and
/// wave model (gemm_time_s) gives the small sizes.
struct GemmEfficiency {
  double max_fraction = 0.7;
  double half_flops = 1e9;
  std::string source;
};

/// eff(F) = max_fraction · F / (F + half_flops)
double gemm_efficiency(const GemmEfficiency& e, double gemm_flops);

/// Fraction of datasheet memory bandwidth that streaming kernels reach (documented default).
double default_memory_efficiency(GpuArch arch);

/// The GEMM ceiling of `gpu` for `dtype`, TFLOP/s, and where it comes from: the catalog's
/// measured best achievable matmul (gemm_ceiling_tflops); for fp16 on a GPU whose fp16 and
/// bf16 peaks are equal, the bf16 measurement; otherwise the dtype's peak times the mean
/// measured fraction of peak (16-bit: 81.4%, the mean of the six bf16 rows of the MAMF
/// table in kernel-benchmarks; fp8: 73.5%, the mean of its three fp8 rows; fp4:
/// kFp4CeilingFraction; fp32 CUDA-core SGEMM: 85%, a guess).
std::pair<double, std::string> gemm_ceiling(const GpuSpec& gpu, Dtype dtype);

/// NVFP4's GEMM ceiling as a fraction of the dense FP4 peak: B200's one measured NVFP4 GEMM
/// (its catalog ceiling, 4,453.2 of 9,000 TFLOP/s; topologies/catalog/gpus.json).
inline constexpr double kFp4CeilingFraction = 4453.2 / 9000.0;

/// The published attention-kernel tables (model/catalog/attention_kernels.json), loaded
/// once: every curve with its GPU and kernel.
struct AttentionTableRow {
  std::string gpu;
  AttentionKernel kernel = AttentionKernel::flash2;
  AttentionCurve curve;
};
const std::vector<AttentionTableRow>& attention_table();

/// The curves of `kernel` on `gpu`: the GPU's own rows when the table has them; else the
/// rows of the tabled GPU of the nearest generation with that kernel, scaled by the ratio of
/// the two GPUs' 16-bit GEMM ceilings (stated in the source); for a kernel with no table at
/// all (triton, mem_efficient), FlashAttention-2's, stated in the source. Empty curves for
/// `unfused`.
AttentionRates attention_rates(const GpuSpec& gpu, AttentionKernel kernel);

/// The catalog's rates for `gpu` training with GEMMs in `dtype` and attention by `kernel`:
/// GEMM ceiling (gemm_ceiling), datasheet memory bandwidth at default_memory_efficiency,
/// the launch cost and the attention curves.
DeviceRates catalog_device_rates(const GpuSpec& gpu, Dtype dtype, AttentionKernel kernel);

/// The fraction of an isolated benchmark's rate a kernel keeps inside a training step
/// (model/catalog/in_step.json): GEMMs against the best achievable matmul, attention against
/// the published kernel tables. Inside a step the GPU runs at the clock its power limit
/// sustains, beside NCCL kernels that take SMs and HBM bandwidth, on the step's own shapes.
/// Fitted on one published in-step decomposition (its source in `fitted_on`), or on one
/// machine's training probe by `stepcast fit in-step` (load_in_step_fractions); memory-bound
/// kernels and launches are not scaled.
///
/// A GPU generation with no in-step decomposition of its own may carry a GEMM fraction fitted
/// on end-to-end runs of that generation (GenerationGemmFit, `stepcast fit generation`),
/// leave one source out: with it, the fraction fitted without each source.
struct GenerationGemmFit {
  GpuArch arch = GpuArch::ampere;
  double gemm = 1;  ///< in (0, 1]: fitted on every source of `without`; what scenarios use
  /// (source label "owner/repo · path", the fraction fitted on the other sources' runs):
  /// validate predicts that source's records of this generation with it.
  std::vector<std::pair<std::string, double>> without;
  std::string source;  ///< one line: what it was fitted on, and how
};

struct InStepFractions {
  double gemm = 1;       ///< in (0, 1]
  double attention = 1;  ///< in (0, 1]
  /// The GPU generation `gemm` was measured on (in_step.json "arch"), when stated: then it is
  /// that generation's own fraction beside the `generations` fits (gemm_fraction).
  std::optional<GpuArch> arch;
  /// "owner/repo · path" of each source the fractions were fitted on (validate's
  /// leave-one-source-out predicts those sources' records with isolated rates).
  std::vector<std::string> fitted_on;
  std::string source;                          ///< one line: the file and what it was fitted on
  std::vector<GenerationGemmFit> generations;  ///< at most one per arch; its GEMM fraction replaces `gemm`
};

/// The GEMM fraction of a GPU of `arch`: its generation's own, i.e. a `generations` fit or
/// f.gemm when f.arch is `arch`; a generation without one takes the fraction of the nearest
/// generation that has one, in catalog order (volta, turing, ampere, ada, hopper, blackwell,
/// cdna3; the older on a tie), so that two GPUs of neighbouring generations are not
/// compared at fractions measured on generations further away; f.gemm when f states no
/// arch and no generation is fitted.
double gemm_fraction(const InStepFractions& f, GpuArch arch);

/// Which generation's fraction gemm_fraction takes for `arch` (nullopt: f.gemm, no arch).
std::optional<GpuArch> gemm_fraction_from(const InStepFractions& f, GpuArch arch);

/// `f` as a record of `source` must see it, leave one source out: each generation's GEMM
/// fraction replaced by the one fitted without that source (unchanged where the fit never
/// used the source).
InStepFractions without_source(InStepFractions f, const std::string& source);

/// model/catalog/in_step.json, read once. Throws InputError (naming the file and key) when a
/// fraction is outside (0, 1].
const InStepFractions& in_step_fractions();

/// The fractions of an in_step.json-shaped file (the catalog's, or one `stepcast fit in-step`
/// wrote from a probe run), its sources saying `shown_as`. Throws InputError (file and JSON
/// path) for a fraction outside (0, 1], a missing or unknown key.
InStepFractions load_in_step_fractions(const std::filesystem::path& file, const std::string& shown_as);

/// `d` with its GEMM ceilings scaled by gemm_fraction(f, d.arch) and attention rates by
/// f.attention (memory-bound rates and launches unchanged), each scaled source saying so.
DeviceRates in_step_rates(DeviceRates d, const InStepFractions& f);

/// CPU cost of one kernel launch: 5 µs, the middle of the 4-6 µs per launch through the
/// CUDA driver and runtime (kernel-benchmarks.md Sec. 3).
inline constexpr double kLaunchOverhead_s = 5e-6;

/// CPU cost of one op dispatched by eager PyTorch (Python, dispatcher, autograd and the
/// launch), forward and backward, s. From the launch-bound case of ml-engineering
/// (training/performance/README.md L966-986: Llama-3.2-1B, bf16, 1 x 512 tokens, B200):
/// eager forward 8.1 ms and forward+backward 48.8 ms, against 1.9 / 8.1 ms under CUDA
/// graphs, so the eager step is CPU-bound. Over this model's op count for that step
/// (forward 16 layers x 34 + 4 = 548 ops, backward 16 x 71 + 5 = 1,141): 8.1 ms / 548 =
/// 14.8 µs forward, (48.8 - 8.1) ms / 1,141 = 35.7 µs backward. torch.compile'd code
/// launches from generated wrappers at the driver's cost (kLaunchOverhead_s).
inline constexpr double kEagerForwardOp_s = 14.8e-6;
inline constexpr double kEagerBackwardOp_s = 35.7e-6;

/// Rate of eager GEMMs whose rows are not 16-byte aligned on Hopper, as a fraction of the
/// dense 16-bit peak. Fitted on stepcast's H200 probe records (calibrate/data/h200-x1), one
/// value: eager minus torch.compile'd GEMM time (Inductor pads the shape) of gpt2 (micro-batch
/// 8 x 1024: 21.65 - 9.07 ms) and gpt2-xl (4 x 1024: 67.49 - 54.64 ms) is the extra time of
/// the three LM-head GEMMs over a vocabulary of 50,257; at the compiled runs' GEMM rates (669
/// and 700 TFLOP/s) their 1.90 and 1.98 TFLOP ran at 123 and 126 TFLOP/s eager, 0.126 of the
/// H200's 989.4. Other generations have no measurement and keep the aligned model.
inline constexpr double kMisalignedGemmFractionHopper = 0.126;

/// Which kernels a micro-step runs: the attention kernel, the profile of the memory-bound
/// work, and whether attention is causal (decoders) or not (encoders).
struct KernelChoice {
  AttentionKernel attention = AttentionKernel::flash2;
  KernelProfile profile = KernelProfile::eager;
  bool causal = true;
  /// The loss as one fused kernel each way; else PyTorch's eager cross-entropy, whatever the
  /// profile (a model compiled without its loss: calibrate/probe/train_probe.py).
  bool fused_loss = false;
  /// CUDA_LAUNCH_BLOCKING=1: every launch returns when its kernel has finished, so the CPU's
  /// cost per op adds to the GPU's time instead of running ahead of it.
  bool launch_blocking = false;
  int metric_loss_passes = 0;  ///< extra eager cross-entropy forwards over the logits
  /// torch.autocast over fp32 parameters (training.mixed_precision "autocast"): the residual
  /// stream in fp32 (layer_memory_work) and each micro-step's casts of the GEMM weights to
  /// 16 bits and of their gradients back (autocast_cast_bytes).
  bool autocast = false;
  /// Tensor-parallel degree (Megatron): each rank runs the GEMMs of tp_layer_gemms, heads/t
  /// of attention and a vocab-parallel loss; the h-wide memory-bound work is replicated, or
  /// split by `sp` (sequence parallelism).
  int tp = 1;
  bool sp = false;
  /// Context-parallel degree (Megatron-LM CP): each rank holds s/cp tokens of every sequence,
  /// so GEMMs, memory-bound work and the LM head see b·s/cp rows, and it computes 1/cp of the
  /// attention of the whole sequence (causal load-balanced chunks) in kernels of s/cp
  /// queries. Needs a flash-class attention kernel.
  int cp = 1;
  /// Expert-parallel degree of a MoE model: each rank runs E/ep experts on tokens·k·ep/E
  /// rows each, times `moe_imbalance` (>= 1, the busiest rank's load over the mean).
  int ep = 1;
  double moe_imbalance = 1.0;
  /// How the MoE layers dispatch tokens: the CPU's work per MoE MLP block (moe_host_ops).
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// What CUDA graphs capture: a captured module costs the CPU one launch per pass.
  CudaGraphs graphs = {};
};

/// Time of one micro-step on one GPU, seconds.
/// Compute time split by kind of kernel, seconds; the parts add up to the compute time.
struct KernelTimes {
  double gemm_s = 0;       ///< GEMMs (LoRA adapters included)
  double attention_s = 0;  ///< attention kernels (unfused: their GEMMs and softmax passes)
  double memory_s = 0;     ///< memory-bound work: norms, rotary, activations, residuals, loss
  double launch_s = 0;     ///< what launch-bound layers add beyond their kernels' GPU time
  double total_s() const { return gemm_s + attention_s + memory_s + launch_s; }
};

struct MicroStepTimes {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  /// The LM-head GEMM's share of forward_s and backward_s (the rest is spread evenly over
  /// the layers), for simulators that play the step layer by layer; a caller may fold
  /// other per-micro-step work of the root unit into it (the gradient adds).
  double head_forward_s = 0;
  double head_backward_s = 0;
  /// One layer's attention kernels, forward and backward (what a context-parallel ring
  /// exchange hides behind).
  double layer_attention_forward_s = 0;
  double layer_attention_backward_s = 0;
  /// The MoE MLP blocks' kernels (router, expert and shared-expert GEMMs, token permutation)
  /// on the mean layer (the MoE layers' share), forward and backward at full speed; 0 for a
  /// dense model. What the combined 1F1B schedule runs beside the all-to-alls.
  double layer_moe_mlp_forward_s = 0;
  double layer_moe_mlp_backward_s = 0;
  /// forward + backward + recompute, split by kind of kernel.
  KernelTimes kernels;
};

/// The GEMMs of one layer and the LM head ("qkv", ..., "lm_head") that micro_step_times runs
/// at DeviceRates::misaligned_gemm_tflops: eager kernels, on a GPU whose misaligned rate is
/// known, of a shape whose rows are not 16-byte aligned (gemm_rows_aligned) on one rank.
std::vector<std::string> misaligned_gemms(const TransformerSpec& spec, Precision precision, const KernelChoice& kc,
                                          const DeviceRates& d);

/// Forward/backward/recompute time of one micro-batch (`micro_batch` sequences of `seq_len`)
/// as the sum of its kernels (model/kernels.hpp), layer by layer:
///   GEMMs     each of layer_gemms() forward; backward its input-gradient GEMM (m x k from
///             m x n · n x k) and weight-gradient GEMM (n x k from n x m · m x k), or under
///             LoRA the input gradient only; LoRA's thin adapter GEMMs forward and both
///             backward; each shape through gemm_time_s (fp8 operands under fp8 training),
///             or, eager with rows not 16-byte aligned (gemm_rows_aligned) on a GPU whose
///             misaligned rate is known, misaligned_gemm_time_s
///   attention the flash-class kernel's published rate at the sequence and head size, or,
///             unfused, the score and context batched GEMMs and the score matrix's
///             softmax passes (eager: scale+mask and softmax, each reading and writing it)
///   memory    layer_memory_work and, on the LM head, loss_memory_work, over achieved
///             memory bandwidth
///   launches  a layer takes max(GPU time, ops x CPU cost per op): the CPU runs ahead of
///             the GPU within a layer, so launches only matter when kernels are short.
///             Under launch_blocking (CUDA_LAUNCH_BLOCKING=1) it takes GPU time + ops x CPU
///             cost per op: each launch waits for its kernel, so the GPU idles while the
///             CPU dispatches the next op (NVIDIA CUDA Programming Guide, "Asynchronous
///             Concurrent Execution": the variable makes kernel launches synchronous).
///             The cost per op is eager dispatch (DeviceRates::eager_forward_op_s and
///             eager_backward_op_s: kEagerForwardOp_s, kEagerBackwardOp_s unless calibrated)
///             for the eager and fused profiles, the driver's launch for compiled code.
///             A MoE layer adds its MLP block's CPU work (moe_host_ops for the dispatcher:
///             Python ops at the op cost, each local expert's launches at the driver's) in
///             place of its GEMM and permutation launches; a block CUDA graphs capture
///             (KernelChoice::graphs) costs one launch, a full-iteration graph nothing.
/// Recompute: full, one more forward of every layer; selective, attention's forward.
/// MoE (spec.moe): in the share of layers that are MoE layers the dense MLP GEMMs give way
/// to the grouped expert, router and shared-expert GEMMs of moe_layer_gemms (E/ep local
/// experts, rows scaled by kernels.moe_imbalance), and the token permutation adds
/// moe_permutation_bytes each way (two kernels). Not modelled with tp > 1 or LoRA (throws).
MicroStepTimes micro_step_times(const TransformerSpec& spec, std::int64_t micro_batch, std::int64_t seq_len,
                                Precision precision, const FlopsOptions& opts, const KernelChoice& kernels,
                                const DeviceRates& device);

/// Bytes an Adam step moves per parameter of the local shard. PyTorch's AdamW
/// (torch/optim/adamw.py, the foreach and fused paths alike) reads param, grad, exp_avg and
/// exp_avg_sq and updates param, exp_avg and exp_avg_sq in place; under mixed precision the
/// param it steps is the fp32 master and the 16-bit working weight is written afterwards
/// (Megatron-LM's copy of main params to model params, DeepSpeed's bf16 optimizer):
///   read  fp32 master 4 + m 4 + v 4 + 16-bit gradient 2 = 14
///   write fp32 master 4 + m 4 + v 4 + 16-bit weight   2 = 14
///   = 28 B per parameter. fp32 gradients (adam_deepspeed_18): the gradient read is 4, 30 B.
///   fp32 training: a 4-byte gradient and no 16-bit copy, 16 + 12 = 28 B.
/// SGD with momentum: master and momentum read and written (16), gradient read, 16-bit copy
/// written: 20 B under mixed precision.
double optimizer_bytes_per_param(Precision precision, bool fp32_gradients, bool sgd);

/// Optimizer step over `local_params` parameters as a memory-bound pass.
double optimizer_time_s(double local_params, double bytes_per_param, const DeviceRates& device);

/// How the gradients of an optimizer step's micro-steps add up (training.grad_accumulation).
enum class GradAccumulation {
  /// PyTorch autograd (AccumulateGrad, torch/csrc/autograd/functions/accumulate_grad.h):
  /// from the second micro-step on, each new gradient is added in place to the stored one.
  autograd,
  /// The weight-gradient GEMM accumulates into the stored gradient (Megatron-LM's
  /// --gradient-accumulation-fusion, on by default since Feb 2022, commit 83b1e42f30):
  /// no pass of its own.
  fused,
  /// DeepSpeed's BF16_Optimizer: after every micro-step's backward each bf16 gradient is
  /// cast to fp32 and added to an fp32 gradient (deepspeed/runtime/bf16_optimizer.py
  /// `_update_hp_grad`, called from pipe/engine.py after each backward pass).
  bf16_optimizer,
};
std::string_view name(GradAccumulation);
/// "autograd, fused, bf16_optimizer"
std::vector<std::string> grad_accumulation_names();
GradAccumulation parse_grad_accumulation(std::string_view);  ///< throws std::invalid_argument

/// Memory traffic of adding up gradients, bytes per micro-step (the mean over the step's m
/// micro-steps), for `grad_bytes` bytes of local gradients in their own dtype:
///   autograd        read stored + read new + write stored on micro-steps 2..m:
///                   3 · grad_bytes · (m - 1) / m
///   fused           0
///   bf16_optimizer  every micro-step, per 2-byte gradient: read 2, write the fp32 cast 4,
///                   read it 4 and the fp32 sum 4, write the sum 4 = 18 B: 9 · grad_bytes
double grad_accumulation_bytes(GradAccumulation mode, double grad_bytes, std::int64_t micro_steps);

}  // namespace stepcast
