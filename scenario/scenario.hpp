/// \file
/// A scenario: one training job on one piece of hardware, as data (JSON). It names a model
/// (catalog key or inline shape), the training setup, the data-parallel strategy, the
/// hardware (catalog box or cluster with GPU and node counts, or inline), the dataset size,
/// and optionally a price and measured figures to compare against.
#pragma once

#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/kernels.hpp"
#include "model/memory.hpp"
#include "model/offload.hpp"
#include "model/parallel.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"
#include "topologies/topology.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stepcast {

struct InStepFractions;  // model/compute.hpp

struct HardwareFile;

struct TrainingSpec {
  Precision precision = Precision::bf16_mixed;
  OptimizerKind optimizer = OptimizerKind::adam_mixed_16;
  std::int64_t micro_batch = 1;  ///< sequences per GPU per micro-step
  std::int64_t grad_accum = 1;   ///< micro-steps per optimizer step
  std::int64_t seq_len = 0;      ///< tokens per sequence
  Recompute recompute = Recompute::none;
  /// Under selective recompute, the modules recomputed ("recompute_modules"; default
  /// ["core_attn"], Megatron-Core's default and Korthikanti et al. 2022's selective recompute).
  RecomputeModules recompute_modules;
  bool recompute_modules_given = false;  ///< "recompute_modules" was written
  bool flash_attention = false;
  /// The flash-class kernel ("attention_kernel"); absent: default_flash_kernel() of the GPU.
  std::optional<AttentionKernel> attention_kernel;
  /// What runs the memory-bound work ("kernels": eager, compiled, fused); absent: eager,
  /// printed under Assumptions.
  std::optional<KernelProfile> kernel_profile;
  /// The loss runs as a fused kernel ("fused_loss"); false: PyTorch's eager cross-entropy,
  /// whatever the profile; absent: fused unless the profile is eager.
  std::optional<bool> fused_loss;
  /// fp32 copies of the logits alive at the unfused loss's peak ("loss_fp32_copies", 1 or 2):
  /// 2 where the row maximum is subtracted out of place (nanotron). Default 1.
  int loss_fp32_copies = 1;
  /// Extra forward passes of an eager cross-entropy over the logits per micro-batch
  /// ("metric_loss_passes"): training metrics computed on the logits (Composer's
  /// LanguageCrossEntropy and LanguagePerplexity: 2). Default 0.
  int metric_loss_passes = 0;
  /// CUDA_LAUNCH_BLOCKING=1 ("launch_blocking"): each kernel launch waits for the kernel, so
  /// the CPU's cost per op adds to the GPU's time. Default false (launches are asynchronous).
  bool launch_blocking = false;
  /// What CUDA graphs capture ("cuda_graphs": ["full_iteration"] or modules of each layer,
  /// "attn", "mlp", "moe_router", "moe_preprocess"). Default none (every op dispatched).
  CudaGraphs cuda_graphs;
  /// How 16-bit mixed precision keeps its parameters ("mixed_precision"): "master_weights"
  /// (false, the default: 16-bit parameters and an fp32 master copy in the optimizer, as
  /// Megatron, DeepSpeed, FSDP's param_dtype and nanotron run it) or "autocast" (true: fp32
  /// parameters with torch.autocast casting each GEMM's inputs, PyTorch AMP under DDP as
  /// Hugging Face's Trainer and Lightning run it; model/memory.hpp MemoryInputs::autocast,
  /// model/kernels.hpp layer_memory_work, autocast_cast_bytes).
  bool autocast = false;
  /// How successive micro-steps' gradients add up ("grad_accumulation": autograd, fused,
  /// bf16_optimizer; model/compute.hpp grad_accumulation_bytes). Default autograd,
  /// PyTorch's in-place add, printed under Assumptions when grad_accum > 1.
  GradAccumulation grad_accumulation = GradAccumulation::autograd;
  std::optional<LoraSpec> lora;
  /// GEMM and attention rates as they run inside a training step ("kernel_rates":
  /// "in_step", the default: model/catalog/in_step.json's fractions of the isolated
  /// benchmarks) or as the isolated benchmarks measured them ("isolated").
  bool in_step_rates = true;
  /// The in-step fractions used when in_step_rates is set: a file `stepcast fit in-step`
  /// wrote (`--in-step FILE`); null: model/catalog/in_step.json's.
  std::shared_ptr<const InStepFractions> in_step;
};

struct StrategySpec {
  /// The parallel layout: "name" (its dp_sharding), "tp", "sp", "pp", "vpp", "schedule",
  /// "cp", "ep". Megatron order: TP fastest, then CP, DP, PP; gradients reduce over the DP x CP
  /// ranks; layout.dp = gpus / (tp·cp·pp), set by the reader (and again by resolve).
  ParallelLayout layout;
  std::string name_given;                    ///< the name as written when it was a common alias ("fsdp"), else empty
  double bucket_bytes = 25.0 * 1024 * 1024;  ///< gradient bucket (PyTorch DDP bucket_cap_mb default 25 MiB)
  bool bucket_given = false;                 ///< false: the default above was assumed
  int prefetch_layers = 1;                   ///< ZeRO-3/FSDP layers gathered ahead (FSDP backward_prefetch: 1)
  std::string algorithm = "auto";            ///< collective algorithm (a registered name or "auto")
  /// Gradients are reduced in fp32 ("reduce_dtype": "fp32"), as FSDP's mixed precision
  /// with reduce_dtype=float32 does (Composer's DEFAULT mode); otherwise in the working
  /// dtype of the precision; under training.mixed_precision "autocast" always (the
  /// gradients of fp32 parameters are fp32).
  bool reduce_fp32 = false;
  bool reduce_dtype_given = false;  ///< "reduce_dtype" was written
  /// "tp_comm_overlap" (default false; Megatron-Core's --tp-comm-overlap, Transformer
  /// Engine's userbuffers): each layer's TP collectives run beside the GEMMs they feed or
  /// drain and cost only what those leave exposed (model/parallel.hpp
  /// tp_layer_comm_overlapped). Needs sequence parallelism.
  bool tp_comm_overlap = false;
  /// "tp_backward_overlap" (default false; what Megatron's own linear layers do without
  /// --tp-comm-overlap): the QKV and MLP-up backward's TP collectives run asynchronously
  /// beside their input- and weight-gradient GEMMs, the rest block (model/parallel.hpp
  /// tp_layer_comm_async). Needs tp >= 2; tp_comm_overlap already includes it.
  bool tp_backward_overlap = false;
  /// "sp_keep_gathered" (default false: Megatron's linear layers keep the 1/t shard of their
  /// input and re-gather it for the weight gradient): under sequence parallelism the QKV and
  /// MLP-up GEMMs keep their all-gathered input whole, as nanotron's column_linear without
  /// async communication does (autograd saves F.linear's gathered input): more activation
  /// memory (model/memory.hpp), two all-gathers fewer per layer backward (tp_layer_comm).
  bool sp_keep_gathered = false;
  /// "overlap_param_gather" (default false; Megatron-Core's --overlap-param-gather with its
  /// distributed optimizer): under zero1/zero2 the all-gather of the updated parameters
  /// runs beside the next step's forward, bucket by bucket in forward order, instead of
  /// after the optimizer step (DeepSpeed's way, the default).
  bool overlap_param_gather = false;
  /// "overlap_grad_reduce" (default false; Megatron-Core's --overlap-grad-reduce): under
  /// pipeline parallelism each stage reduces its gradients bucket by bucket during its last
  /// micro-batch's backward instead of after it (DeepSpeed's pipeline engine, the default).
  /// Needs pp >= 2: without a pipeline DDP and ZeRO reduce during the backward already.
  bool overlap_grad_reduce = false;
  /// Context parallelism's K/V exchange ("cp_comm": "ring", Megatron-LM's default, or
  /// "all_gather", Llama 3's).
  CpCommKind cp_comm = CpCommKind::ring;
  /// CPU offload ("offload": none, optimizer, parameters; model/offload.hpp) and ZeRO-Offload's
  /// one-step delayed parameter update ("delayed_update").
  OffloadKind offload = OffloadKind::none;
  bool delayed_update = false;
  /// Under fp8 training, FSDP / ZeRO-3 all-gather the linear layers' weights in fp8 (1 B
  /// instead of 2; torchao's float8 all-gather for FSDP2) ("fp8_all_gather").
  bool fp8_all_gather = false;
  /// How layers are split into stages ("pp_split": "even", the default, or "balanced":
  /// the LM head counted as its share of GEMM work, as nanotron splits; model/parallel.hpp).
  StageSplit pp_split = StageSplit::even;
  /// Under expert parallelism (layout.ep): "moe_imbalance" (>= 1, default 1: balanced
  /// routing, an assumption printed): the busiest EP rank's routed tokens over the mean; its expert
  /// GEMMs set the pace. "moe_capacity_factor" (>= 1, default 1: dropless): tokens an
  /// expert holds over its balanced share, which the expert activations scale with.
  double moe_imbalance = 1.0;
  double moe_capacity_factor = 1.0;
  /// "moe_shared_expert_overlap" (default false; Megatron-Core's --moe-shared-expert-overlap):
  /// the shared experts' GEMMs run beside the dispatch and combine all-to-alls, which then
  /// cost only what the shared experts do not hide. Needs shared experts and ep >= 2.
  bool moe_shared_expert_overlap = false;
  /// "moe_a2a_overlap" (default false; Megatron-Core's --overlap-moe-expert-parallel-comm
  /// with --delay-wgrad-compute): the combined 1F1B schedule runs one micro-batch's forward
  /// beside another's backward, layer by layer, so each pass's all-to-alls run beside the
  /// other pass's layer and cost what it leaves exposed. Needs ep >= 2, no full recompute, no
  /// moe_shared_expert_overlap, vpp >= 2 under a pipeline (transformer_config.py checks).
  bool moe_a2a_overlap = false;
  /// "moe_dispatcher" (default "alltoall": Megatron-Core's alltoall token dispatcher over
  /// NCCL; "hybridep", "deepep": its flex dispatcher's fused kernels): the CPU's work per MoE
  /// layer (model/moe.hpp moe_host_ops). The all-to-alls' bytes are costed alike.
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
};

/// Whether Megatron-Core runs the all-to-all overlap (moe_a2a_overlap) on layout `l` under
/// `recompute`: ep >= 2, no full recompute, the interleaved schedule (vpp >= 2) under a
/// pipeline (TransformerConfig's checks, core_v0.17.0). The shared-expert overlap excludes it.
inline bool moe_a2a_overlap_runs(const ParallelLayout& l, Recompute recompute) {
  return l.ep > 1 && recompute != Recompute::full && (l.pp == 1 || l.vpp >= 2);
}

/// Whole nodes that differ from the rest: slower GPUs (thermal throttling, an older part)
/// or slower links (a degraded NIC or NVLink). Simulated as their own rank class.
struct StragglerSpec {
  std::string name;            ///< "throttled node"
  int nodes = 1;               ///< how many nodes behave like this
  double compute_speed = 1.0;  ///< relative to the catalog GPU, (0, 10]
  double link_speed = 1.0;     ///< relative to the catalog links, (0, 10]
};

struct HardwareChoice {
  ClusterSpec cluster;                    ///< box + nodes + network
  int nodes = 1;                          ///< nodes used
  int gpus_per_node = 1;                  ///< GPUs used in each node
  std::vector<StragglerSpec> stragglers;  ///< nodes that differ (the others are alike)
  /// Spread of per-GPU speed among nominally identical GPUs (coefficient of variation); set:
  /// the step runs at the expected slowest of its GPUs (model/variability.hpp).
  std::optional<double> gpu_speed_cv;
  /// A hardware file written by `stepcast fit` (measured GEMM efficiency, memory bandwidth,
  /// collectives) that replaces the catalog's defaults for this GPU; path relative to the
  /// scenario file in JSON ("calibration").
  std::shared_ptr<const HardwareFile> calibration;
  std::string calibration_file;
  int gpus() const { return nodes * gpus_per_node; }
};

struct DatasetSpec {
  std::optional<double> tokens;   ///< tokens per epoch
  std::optional<double> samples;  ///< sequences per epoch
};

/// Figures measured on a real run of this scenario, kept beside the prediction.
struct MeasuredFigures {
  std::optional<double> time_per_epoch_s;
  std::optional<double> step_time_s;
  std::optional<double> tokens_per_s_per_gpu;
  std::string source;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;  ///< where it was read from
  TransformerSpec model;
  TrainingSpec training;
  StrategySpec strategy;
  HardwareChoice hardware;
  DatasetSpec dataset;
  std::optional<double> price_per_gpu_hour_usd;
  std::optional<MeasuredFigures> measured;
  std::vector<std::string> notes;  ///< choices the author made (why this batch, ...)
  /// The defaults the reader took for keys the file left out, one sentence each ("key:
  /// value (why)"); printed first under Assumptions.
  std::vector<std::string> defaults;
};

/// The collectives a data-parallel strategy issues in one step, each with the GPUs it spans,
/// as the lowerings emit them (simulator/lowering_*.cpp; a test holds the two together):
/// DDP and NO_SHARD all-reduce; ZeRO and FSDP all-gather and reduce-scatter; HYBRID_SHARD
/// inside the node, plus the all-reduce of each shard across nodes.
std::vector<std::pair<Collective, FabricScope>> collectives_issued(Strategy s);

/// Reads and validates a scenario file; every problem is an InputError naming the file and
/// the JSON path (`/training/micro_batch`), including unknown keys, unknown model/GPU/box
/// names, non-positive sizes, GPU counts that do not divide into nodes, and strategies the
/// hardware cannot run.
///
/// `options` are the command line's part of the scenario, read with the file so that the
/// scenario is final when the reader returns: a hardware file replacing the file's own
/// calibration, in-step fractions replacing model/catalog/in_step.json's (its default line
/// names the file), and another GPU count (with_gpus). Their problems are InputErrors too.
struct ReadOptions {
  std::string calibration_file;  ///< `--calibration`: a `stepcast fit` hardware file; empty: none
  std::string in_step_file;      ///< `--in-step`: `stepcast fit in-step` fractions; empty: the catalog's
  int gpus = 0;                  ///< `--gpus`: 0 keeps the file's count
};
Scenario load_scenario(const std::filesystem::path& path, const ReadOptions& options = {});
Scenario parse_scenario(const std::string& json_text, const std::string& file_name, const ReadOptions& options = {});
/// parse_scenario against another schema than scenario_schema() (a test of the schema's
/// one-source rule: an edited copy changes what the reader accepts).
class Schema;
Scenario parse_scenario(const std::string& json_text, const std::string& file_name, const ReadOptions& options,
                        const Schema& schema);

/// Where each value that check_scenario checks came from: the file (with ":line" for a
/// measured-run record) and the JSON pointer of each field, so that an error names the
/// input as the user wrote it. The defaults are a scenario file's own paths.
struct ScenarioSource {
  std::string file;
  std::string model = "/model";  ///< the inline model object, or the catalog name
  bool model_inline = true;      ///< false: model fields all point at `model`
  std::string micro_batch = "/training/micro_batch";
  std::string grad_accum = "/training/grad_accum";
  std::string seq_len = "/training/seq_len";
  std::string precision = "/training/precision";
  std::string lora = "/training/lora";
  std::string strategy = "/strategy";  ///< the strategy object (bucket_mb, prefetch_layers)
  std::string algorithm = "/strategy/algorithm";
  std::string gpus = "/hardware/gpus";
  std::string gpus_per_node = "/hardware/gpus";
  std::string nodes = "/hardware/gpus";  ///< nodes in use follow from the GPU count
  std::string stragglers = "/hardware/stragglers";
  std::string dataset = "/dataset";
  std::string price = "/price_per_gpu_hour_usd";

  /// The path of one field of the model (`/model/layers`), or the model's own path when it
  /// came from the catalog.
  std::string model_field(const std::string& key) const;
};

/// The one set of checks every scenario goes through, however it was built (a scenario
/// file, a measured-run record, `with_gpus`): positive counts within base/limits.hpp
/// (GPUs, nodes, GPUs per node, micro-batch, grad_accum, seq_len, layers, widths), the
/// model's shape (heads divide hidden, kv_heads divide heads), seq_len within a learned
/// position table, LoRA targets known and listed once, prefetch_layers within 0..layers, a
/// bounded number of gradient buckets per step, straggler groups of 1..nodes-1 nodes with
/// speeds in [0.01, 10], finite and bounded data set and price, tokens per step far below
/// 2^53, and a precision and algorithm the hardware can run. Throws InputError naming
/// `where.file`, the field's path and the bound.
void check_scenario(const Scenario& s, const ScenarioSource& where);

/// What the scenario's parallel layout is checked against (model/parallel.hpp
/// layout_violations): its GPUs, nodes, sequence, micro-batches per step and attention kernel.
LayoutContext layout_context(const Scenario& s);

/// The data-parallel degree of the scenario's layout: gpus / (tp·pp·cp), rounded down (whole
/// when the layout passes its rules).
int data_parallel_degree(const Scenario& s);

/// The same scenario on `gpus` GPUs: fills whole nodes of the cluster's box first
/// (gpus <= box size: one node). Several nodes on a scenario without a network take the
/// reader's default (the box's own NICs on one switch), recorded in `defaults`. Throws std::invalid_argument when the
/// count does not fit (not a multiple of the box size above one node, or more nodes than the cluster has when the
/// cluster came from the catalog with a fixed size).
Scenario with_gpus(const Scenario& s, int gpus);

/// The global batch of `s` in sequences: micro_batch x grad_accum x data-parallel ranks.
std::int64_t global_batch_sequences(const Scenario& s);

/// with_gpus at the global batch of `s` (strong scaling): each data-parallel replica's share,
/// global / dp sequences, runs as micro-steps of the largest micro-batch that divides it and is
/// no larger than the scenario's, grad_accum of them. Throws std::invalid_argument when the
/// data-parallel ranks on `gpus` do not divide the global batch, or as with_gpus.
Scenario with_gpus_at_global_batch(const Scenario& s, int gpus);

}  // namespace stepcast
