/// \file
/// A measured-run record as a scenario (through check_scenario, the checks every scenario
/// goes through, with the record's file, line and JSON paths), and the prediction of the
/// record's metric. A record is skipped only with an explicit reason that stepcast cannot
/// represent it; a bad record is an InputError; a prediction that is not finite is a bug.
#include "validate/validation.hpp"

#include "validate/record_defaults.hpp"

#include "model/moe.hpp"

#include "base/catalog_store.hpp"
#include "base/json_input.hpp"
#include "topologies/hardware_file.hpp"
#include "topologies/topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

namespace stepcast {

// ---- A record as a scenario ----------------------------------------------------------

namespace {

struct Skip {
  std::string why;
};

/// The catalog box for a record's GPU: the first one with the record's intra-node fabric,
/// or, when the record does not state it, the first one holding the GPU (for a GPU sold
/// both ways, such as the TITAN RTX pair, the PCIe one: no bridge was named).
const BoxSpec& box_for(const MeasuredRun& r, const std::string& gpu, std::vector<std::string>& assumed) {
  std::optional<IntraFabric> fabric;
  if (r.intra_node) {
    if (*r.intra_node == "nvswitch")
      fabric = IntraFabric::nvswitch;
    else if (*r.intra_node == "pcie")
      fabric = IntraFabric::pcie;
    else
      fabric = IntraFabric::nvlink_mesh;  // nvlink-mesh, nvlink-bridge
  } else if (box_with_gpu(gpu, IntraFabric::pcie) && box_with_gpu(gpu, IntraFabric::nvlink_mesh)) {
    fabric = IntraFabric::pcie;
  }
  const BoxSpec* box = box_with_gpu(gpu, fabric);
  if (!box) throw Skip{"no catalog box holds the " + gpu + (r.intra_node ? " over " + *r.intra_node : "")};
  if (!r.intra_node) assumed.push_back("intra-node fabric of the " + box->name + " (not stated)");
  return *box;
}

/// More NICs than any node holds (8 per HGX board, one per GPU); beyond it a per-node rate
/// is no whole number of catalog NICs (and the count stays far inside an int).
constexpr double kMaxNicsPerNode = 1024;

/// The NIC link kind and count for a stated fabric and per-node rate: the fastest catalog
/// link of that family (by name prefix) whose line rate divides the rate into whole NICs.
/// The link-name prefix of a record's inter-node fabric ("efa" -> "efa-").
const std::string& fabric_family(const std::string& fabric) {
  static const std::map<std::string, std::string> kFamily = {
      {"infiniband", "ib-"}, {"roce", "roce-"}, {"efa", "efa-"}, {"ethernet-tcp", "eth-"}, {"omnipath", "opa-"}};
  const auto family = kFamily.find(fabric);
  if (family == kFamily.end()) throw Skip{"inter-node fabric \"" + fabric + "\" is not in the link catalog"};
  return family->second;
}

/// The NICs of a stated fabric without a stated rate: the record's box when its standard NIC
/// is of that family, else the catalog box of the same GPU that ships with that fabric
/// (an H100 over EFA: the aws-p5's 32 x efa-100g).
std::pair<std::string, int> stated_fabric_nics(const std::string& fabric, const BoxSpec& box,
                                               std::vector<std::string>& assumed) {
  const std::string& family = fabric_family(fabric);
  const BoxSpec* with = box.nic.rfind(family, 0) == 0 ? &box : nullptr;
  for (const BoxSpec& b : box_catalog())
    if (!with && b.gpu == box.gpu && b.nic.rfind(family, 0) == 0) with = &b;
  if (!with)
    throw Skip{"inter-node fabric " + fabric + " stated without a rate, and no catalog box of the " + box.gpu +
               " has it"};
  assumed.push_back(fmt::format("the {}'s network, {} x {} per node (the record names {} but not its rate)", with->name,
                                with->nics, with->nic, fabric));
  return {with->nic, with->nics};
}

std::pair<std::string, int> nics_for(const std::string& fabric, double gbps) {
  const std::string& family = fabric_family(fabric);
  const LinkSpec* best = nullptr;
  int count = 0;
  for (const LinkSpec& l : link_catalog()) {
    if (l.name.rfind(family, 0) != 0) continue;
    const double n = gbps / (l.line_rate_GBps * 8.0);  // GB/s -> Gb/s
    if (!(n >= 1 && n <= kMaxNicsPerNode) || std::abs(n - std::round(n)) > 1e-9) continue;
    if (!best || l.line_rate_GBps > best->line_rate_GBps) {
      best = &l;
      count = static_cast<int>(std::round(n));
    }
  }
  if (!best) throw Skip{fmt::format("{} Gb/s per node of {} is no whole number of catalog NICs", gbps, fabric)};
  return {best->name, count};
}

Strategy strategy_for(const MeasuredRun& r, std::vector<std::string>& assumed) {
  if (r.data_parallel == "dp_allreduce_other") {
    assumed.push_back("replicated data parallelism modelled as DDP (bucketed all-reduce)");
    return Strategy::ddp;
  }
  if (r.data_parallel == "unknown") throw Skip{"data-parallel strategy not stated"};
  try {
    return parse_strategy(r.data_parallel);
  } catch (const std::exception&) {
    throw Skip{"strategy " + r.data_parallel + " not modelled"};
  }
}

/// The parameter count of `m` with a learned position table of `rows` rows.
std::optional<std::int64_t> parameter_count_with_table(TransformerSpec m, std::int64_t rows) {
  m.max_positions = rows;
  return parameter_count(m);
}

/// The record's measurement was taken on the shape it states: where a stated dimension
/// differs from the catalog model its name resolves to (nanoGPT pads GPT-2's vocabulary to
/// 50,304), the record's value replaces the catalog's, and the difference is an assumption.
void apply_stated_shape(const MeasuredRun& r, TransformerSpec& m, std::vector<std::string>& assumed) {
  const auto take = [&](const std::optional<std::int64_t>& stated, std::int64_t& field, const char* what) {
    if (!stated || *stated == field) return;
    assumed.push_back(
        fmt::format("{} {} as the record states (the catalog's {} has {})", what, *stated, m.name, field));
    field = *stated;
  };
  take(r.layers, m.layers, "layers");
  take(r.hidden, m.hidden, "hidden");
  take(r.heads, m.heads, "attention heads");
  take(r.kv_heads, m.kv_heads, "key/value heads");
  take(r.ffn_hidden, m.ffn_hidden, "MLP width");
  take(r.vocab, m.vocab, "vocabulary");
  if ((m.head_width == 0 && m.hidden % m.heads != 0) || m.heads % m.kv_heads != 0)
    throw Skip{fmt::format("the record's shape (hidden {}, {} heads, {} key/value heads) has no whole head width",
                           m.hidden, m.heads, m.kv_heads)};
}

/// A record of a model outside the catalog takes the architecture (positions, norm, biases,
/// gated or parallel block, tied embeddings) of the catalog model that stands for its `arch`,
/// whose entry cites its config: BLOOM (ALiBi, the embedding LayerNorm), Falcon (parallel
/// attention and MLP), MPT, OPT, GPT-2 and Llama. False for an arch with none (gpt-neox, bert,
/// t5, other), which keeps the plain decoder below.
bool take_reference_architecture(const std::string& arch, TransformerSpec& m, std::vector<std::string>& assumed) {
  static const std::vector<std::pair<std::string, std::string>> kReference = {
      {"bloom", "bloom-176b"}, {"falcon", "falcon-7b"}, {"mpt", "mpt-7b"},
      {"opt", "opt-175b"},     {"gpt2", "gpt2"},        {"llama", "llama-3-8b"}};
  const auto it = std::find_if(kReference.begin(), kReference.end(), [&](const auto& e) { return e.first == arch; });
  const TransformerSpec* ref = it == kReference.end() ? nullptr : find_model(it->second);
  if (ref == nullptr) return false;
  m.gated_mlp = ref->gated_mlp;
  m.tied_embeddings = ref->tied_embeddings;
  m.positional = ref->positional;
  m.norm = ref->norm;
  m.embedding_norm = ref->embedding_norm;
  m.linear_bias = ref->linear_bias;
  m.qkv_bias = ref->qkv_bias;
  m.parallel_attn_mlp = ref->parallel_attn_mlp;
  m.dropout = ref->dropout;
  assumed.push_back(fmt::format("the architecture of the catalog's {} (arch {}): {} positions, {}{}{}{}{}{}{}",
                                ref->name, arch, name(ref->positional), name(ref->norm),
                                ref->embedding_norm ? ", a norm after the embeddings" : "",
                                ref->linear_bias ? ", linear biases" : "", ref->gated_mlp ? ", gated MLP" : "",
                                ref->parallel_attn_mlp ? ", parallel attention and MLP" : "",
                                ref->tied_embeddings ? ", tied embeddings" : ", untied embeddings",
                                ref->dropout > 0 ? fmt::format(", dropout {:g}", ref->dropout) : ", no dropout"));
  return true;
}

bool has_extra(const MeasuredRun& r, const char* extra);

/// Whether a record's model shares its input embedding with its LM head, read from the
/// parameter count it states: where the count of one choice is within 1% of it and the other's
/// is not, that choice (the Ultra-Scale Playbook's 1.34B and 3.57B are Llama-3.2 shapes with
/// tied embeddings, its 8.86B and 80B Llama-3.1 shapes with untied ones). Otherwise the
/// reference architecture's choice stands.
void take_tying_from_parameter_count(const MeasuredRun& r, TransformerSpec& m, std::vector<std::string>& assumed) {
  if (!r.params || *r.params <= 0) return;
  const auto near = [&](const TransformerSpec& x) {
    return std::abs(static_cast<double>(parameter_count(x) - *r.params)) <= 0.01 * static_cast<double>(*r.params);
  };
  TransformerSpec other = m;
  other.tied_embeddings = !m.tied_embeddings;
  if (near(m) || !near(other)) return;
  m.tied_embeddings = other.tied_embeddings;
  assumed.push_back(fmt::format("{} embeddings: the record's {:.3g} parameters are this shape's count with them {}",
                                m.tied_embeddings ? "tied" : "untied", static_cast<double>(*r.params),
                                m.tied_embeddings ? "tied" : "untied"));
}

/// The catalog model a record names: its name, or the name before a parenthesised variant
/// ("Qwen3-30B-A3B (tokendrop)", "DeepSeek-V3 (w/ MTP)": a run setting, not another shape).
const TransformerSpec* catalog_model_named(const MeasuredRun& r, std::vector<std::string>& assumed) {
  if (const TransformerSpec* found = find_model(r.model_name)) return found;
  const std::size_t paren = r.model_name.find(" (");
  if (paren == std::string::npos) return nullptr;
  const TransformerSpec* found = find_model(r.model_name.substr(0, paren));
  if (found)
    assumed.push_back(fmt::format("model \"{}\" read as the catalog's {} (the parenthesis names a run setting)",
                                  r.model_name, found->name));
  return found;
}

TransformerSpec model_for(const MeasuredRun& r, std::vector<std::string>& assumed) {
  if (const TransformerSpec* found = catalog_model_named(r, assumed)) {
    TransformerSpec m = *found;
    apply_stated_shape(r, m, assumed);
    if (m.positional == Positional::learned && r.seq_len && *r.seq_len > m.max_positions &&
        r.params == parameter_count_with_table(m, *r.seq_len)) {
      assumed.push_back(
          fmt::format("a learned position table of {} rows, sized to the run's sequence (the record's "
                      "parameter count; the catalog's {} has {})",
                      *r.seq_len, m.name, m.max_positions));
      m.max_positions = *r.seq_len;
    }
    return m;
  }
  // A record's shape fields describe a dense model: a mixture of experts needs the catalog's.
  if (has_extra(r, "moe"))
    throw Skip{"MoE model " + r.model_name +
               " is not in the catalog (a record cannot state experts and routing; "
               "predicted as dense it would be wrong)"};
  if (!r.layers || !r.hidden || !r.heads || !r.vocab || !r.seq_len)
    throw Skip{"model " + r.model_name + " is not in the catalog and its shape is incomplete"};
  if (*r.hidden % *r.heads != 0)
    throw Skip{fmt::format("cannot represent a head dimension other than hidden / heads (hidden {}, {} heads)",
                           *r.hidden, *r.heads)};
  TransformerSpec m;
  m.name = r.model_name;
  m.layers = *r.layers;
  m.hidden = *r.hidden;
  m.heads = *r.heads;
  m.kv_heads = r.kv_heads.value_or(*r.heads);
  if (!r.kv_heads) assumed.push_back("multi-head attention (kv_heads not stated)");
  m.ffn_hidden = r.ffn_hidden.value_or(4 * *r.hidden);
  if (!r.ffn_hidden) assumed.push_back("MLP width 4 x hidden (not stated)");
  m.vocab = *r.vocab;
  m.seq_len = *r.seq_len;
  // Without a reference: TransformerSpec's plain decoder (RoPE, LayerNorm, tied embeddings).
  if (!take_reference_architecture(r.arch, m, assumed) && r.arch == "bert") {
    m.linear_bias = true;
    if (const TransformerSpec* bert = find_model("bert-large")) m.dropout = bert->dropout;
  }
  if (m.positional == Positional::learned) m.max_positions = *r.seq_len;
  take_tying_from_parameter_count(r, m, assumed);
  assumed.push_back("model shape from the record (not in the catalog)");
  return m;
}

bool has_extra(const MeasuredRun& r, const char* extra) {
  return std::find(r.extras.begin(), r.extras.end(), extra) != r.extras.end();
}

/// The degree N of the record's extra `<prefix>N` (context_parallel_16, virtual_pipeline_4),
/// or 1 when it has none; a degree that is not a whole number from 2 to 65,536 is a skip.
int extra_degree(const MeasuredRun& r, std::string_view prefix) {
  for (const std::string& e : r.extras) {
    if (e.size() <= prefix.size() || e.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = e.substr(prefix.size());
    const bool whole =
        digits.size() <= 5 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int n = whole ? std::stoi(digits) : 0;
    if (n < 2 || n > 65536) throw Skip{"extra \"" + e + "\": expected a degree from 2 to 65,536"};
    return n;
  }
  return 1;
}

/// The record's precision: as stated, or fp4_mixed for a record whose only word on it is the
/// extra nvfp4 (the record format's precision names no 4-bit recipe).
std::optional<std::string> record_precision(const MeasuredRun& r) {
  if (!r.precision && has_extra(r, "nvfp4")) return std::string(name(Precision::fp4_mixed));
  return r.precision;
}

/// What stepcast cannot represent, as explicit skips, before anything is built.
void check_representable(const MeasuredRun& r) {
  if (!r.tp || !r.pp) throw Skip{"tensor/pipeline parallel degrees not stated"};
  if (!r.offload) throw Skip{"CPU offload not stated"};
  if (*r.offload != "none" && *r.offload != "optimizer_cpu" && *r.offload != "param_optimizer_cpu")
    throw Skip{"CPU offload (" + *r.offload + ") is not modelled"};
  const std::optional<std::string> precision = record_precision(r);
  if (!precision) throw Skip{"precision not stated"};
  if (*precision == "bf16_pure") throw Skip{"precision bf16_pure (no fp32 master weights) is not modelled"};
  if (!r.checkpointing) throw Skip{"activation checkpointing not stated"};
  if (!r.gpus) throw Skip{"GPU count not stated"};
  if (!r.micro_batch) throw Skip{"micro-batch not stated"};
  for (const std::string& e : r.extras)
    if (e == "cpu_offload_activations") throw Skip{"extra \"" + e + "\" is not modelled"};
  if (has_extra(r, "pp_schedule_interleaved_1f1b") && extra_degree(r, "virtual_pipeline_") == 1)
    throw Skip{"interleaved pipeline schedule without its model chunks per stage (extra virtual_pipeline_<n>)"};
}

/// The record's extras that change nothing in its prediction, listed as one assumption so
/// that none is taken silently: those outside what build() reads (flash_attention,
/// fsdp_mp_default and its opposite fsdp_mp_pure, torch_compile, float8 and
/// transformer_engine_fp8 under fp8 training, float8_allgather, tp_comm_overlap, async_tp,
/// overlap_param_gather, liger_kernel, deepspeed_transformer_kernels, bf16_optimizer, the
/// CUDA-graph, MoE dispatcher and all-to-all overlap extras (runtime_extras_for), moe (the
/// model's experts, checked against the catalog's),
/// lora_r*, context_parallel_*, virtual_pipeline_* and pp_schedule_interleaved_1f1b;
/// cpu_offload_activations is a skip).
void unmodelled_extras(const MeasuredRun& r, std::vector<std::string>& assumed) {
  static const std::set<std::string, std::less<>> read{"flash_attention",
                                                       "fsdp_mp_default",
                                                       "fsdp_mp_pure",
                                                       "torch_compile",
                                                       "float8_allgather",
                                                       "tp_comm_overlap",
                                                       "async_tp",
                                                       "overlap_param_gather",
                                                       "overlap_grad_reduce",
                                                       "liger_kernel",
                                                       "deepspeed_transformer_kernels",
                                                       "bf16_optimizer",
                                                       "cuda_graphs",
                                                       "cuda_graphs_full_iteration",
                                                       "hybridep",
                                                       "deepep",
                                                       "moe_a2a_overlap",
                                                       "overlap_moe_expert_parallel_comm",
                                                       "moe"};
  const bool fp8 = r.precision && *r.precision == "fp8_mixed";
  const bool fp4 = record_precision(r) == name(Precision::fp4_mixed);
  std::string left;
  for (const std::string& e : r.extras) {
    if (read.count(e) || e.rfind("lora_r", 0) == 0 || e.rfind("context_parallel_", 0) == 0 ||
        e.rfind("attention_kernel_", 0) == 0 || (e.rfind("expert_parallel_", 0) == 0) ||
        e.rfind("virtual_pipeline_", 0) == 0 || e == "pp_schedule_interleaved_1f1b")
      continue;
    if ((fp8 && (e == "float8" || e == "transformer_engine_fp8")) || (fp4 && e == "nvfp4")) continue;
    left += (left.empty() ? "" : ", ") + e;
  }
  if (!left.empty()) assumed.push_back("extras not modelled, predicted without them: " + left);
}

/// The catalog entry a GPU name stands for: the entry of that key, else the only entry whose
/// key is the name and a suffix ("gb200" -> "gb200-186gb", "b300" -> "b300-sxm-288gb"); empty
/// when none or several match.
std::string catalog_gpu_named(const std::string& name) {
  if (const GpuSpec* exact = find_gpu(name)) return exact->name;
  const std::string prefix = catalog_store::lower(name) + "-";  // catalog keys are found case-insensitively
  std::string only;
  for (const GpuSpec& g : gpu_catalog()) {
    if (catalog_store::lower(g.name).rfind(prefix, 0) != 0) continue;
    if (!only.empty()) return {};
    only = g.name;
  }
  return only;
}

/// The catalog key of the record's GPU ("other:<name> ..." where the name picks one entry).
std::string gpu_for(const MeasuredRun& r) {
  std::string gpu = r.gpu;
  if (gpu.rfind("other:", 0) == 0) {
    const std::string rest = gpu.substr(6);
    const std::string key = catalog_gpu_named(rest.substr(0, rest.find(' ')));
    if (key.empty()) throw Skip{"GPU \"" + rest + "\" is not precise enough for the catalog"};
    gpu = key;
  }
  if (!find_gpu(gpu)) throw Skip{"GPU " + gpu + " is not in the catalog"};
  return gpu;
}

/// Precision, batch, accumulation (stated, or global batch / (micro-batch x data-parallel
/// replicas) when that divides), sequence length and recompute. The counts were read within their bounds, so
/// the products here stay far inside int64.
TrainingSpec training_for(const MeasuredRun& r, const TransformerSpec& model) {
  TrainingSpec t;
  t.precision = parse_precision(*record_precision(r));  // the reader allows only the format's names
  t.optimizer = OptimizerKind::adam_mixed_16;
  t.micro_batch = *r.micro_batch;
  const std::int64_t cp = extra_degree(r, "context_parallel_");
  const std::int64_t gpus = *r.gpus / (*r.tp * *r.pp * cp);  // data-parallel replicas (whole: skip_broken_layout)
  if (r.grad_accum) {
    t.grad_accum = *r.grad_accum;
  } else if (r.global_batch && *r.global_batch % (t.micro_batch * gpus) == 0) {
    t.grad_accum = *r.global_batch / (t.micro_batch * gpus);
  } else {
    throw Skip{"gradient accumulation not stated"};
  }
  t.seq_len = r.seq_len.value_or(model.seq_len);
  t.recompute = parse_recompute(*r.checkpointing);
  if (r.recompute_modules) t.recompute_modules = *r.recompute_modules;
  t.flash_attention = std::find(r.extras.begin(), r.extras.end(), "flash_attention") != r.extras.end();
  return t;
}

bool framework_is(const MeasuredRun& r, const char* needle) {
  return r.framework && r.framework->find(needle) != std::string::npos;
}

/// llm-foundry's benchmark table (scripts/train/benchmarking/README.md) ran its own Triton
/// FlashAttention (submit_benchmarks.py default attn_impl 'triton', sweep.sh @ b2a43a147 never
/// overrides it), except the "Large Scale" table's 1b/3b/7b/70b rows, which ran flash-attn
/// 2.4.2 (sweep.py @ 5e85bd62d, lines 42-81).
AttentionKernel foundry_attention(const MeasuredRun& r) {
  if (r.locator.find("Large Scale") == std::string::npos) return AttentionKernel::triton;
  for (const char* m : {"13b", "30b"})
    if (r.model_name.find(m) != std::string::npos) return AttentionKernel::triton;
  return AttentionKernel::flash2;
}

bool names_any(const std::string& text, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return text.find(n) != std::string::npos; });
}

/// The attention kernel Transformer Engine picks when both of its fused backends can run:
/// from sm90 on it drops FlashAttention "to give FusedAttention preference on Hopper+ for
/// performance reasons", so cuDNN's fused attention runs (NVIDIA/TransformerEngine
/// transformer_engine/pytorch/attention/dot_product_attention/utils.py @ a0b36d0c,
/// get_attention_backend); before Hopper, FlashAttention-2.
void transformer_engine_attention(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (!s.training.flash_attention) return;
  const GpuArch arch = find_gpu(gpu_for(r))->arch;  // gpu_for throws Skip for a GPU not in the catalog
  if (arch != GpuArch::hopper && arch != GpuArch::blackwell) return;
  s.training.attention_kernel = AttentionKernel::cudnn;
  assumed.push_back(
      "attention cudnn: Transformer Engine prefers its cuDNN fused attention over FlashAttention from sm90 on "
      "(transformer_engine/pytorch/attention/dot_product_attention/utils.py @ a0b36d0c, get_attention_backend)");
}

/// The FlashAttention generation a record's notes name for its GPU (ml-engineering's
/// "FA3 (H200) / FA4-beta (B200)": its benchmark picks HF's attn_implementation by compute
/// capability). FlashAttention-3 on Hopper runs the flash3 curves. FlashAttention-4 has no
/// published forward-and-backward table in model/catalog/attention_kernels.json yet, so a
/// Blackwell record naming it cannot be represented (FA2's rates would be several times slower).
void attention_named_in_notes(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (!s.training.flash_attention) return;
  const GpuArch arch = find_gpu(gpu_for(r))->arch;  // gpu_for throws Skip for a GPU not in the catalog
  if (arch == GpuArch::hopper && names_any(r.notes, {"FA3", "FlashAttention-3", "flash-attn-3"})) {
    s.training.attention_kernel = AttentionKernel::flash3;
    assumed.push_back("FlashAttention-3 attention (named in the record's notes for its Hopper GPU)");
  } else if (arch == GpuArch::blackwell && names_any(r.notes, {"FA4", "FlashAttention-4", "flash-attn-4"})) {
    throw Skip{"FlashAttention-4 (named in the record's notes) has no kernel table in the catalog"};
  }
}

/// The fused attention kernel a record names (extra "attention_kernel_<name>", one of
/// model/kernels.hpp's names: the training probe reads it off the kernels it profiled).
/// An unknown name, or a kernel its GPU cannot run, skips the record with the reason.
void attention_named_in_extras(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  static constexpr std::string_view prefix = "attention_kernel_";
  for (const std::string& e : r.extras) {
    if (e.rfind(prefix, 0) != 0) continue;
    const std::string kernel_name = e.substr(prefix.size());
    AttentionKernel kernel{};
    try {
      kernel = parse_attention_kernel(kernel_name);
    } catch (const std::invalid_argument&) {
      throw Skip{"extra " + e + " names no attention kernel stepcast knows"};
    }
    if (!attention_kernel_runs_on(kernel, find_gpu(gpu_for(r))->arch))
      throw Skip{"extra " + e + " names a kernel its GPU cannot run"};
    s.training.flash_attention = true;
    s.training.attention_kernel = kernel;
    assumed.push_back(fmt::format("{} attention (the record's extras)", name(kernel)));
  }
}

/// BigScience's tr11 runs at 320 GPUs or more ran with CUDA_LAUNCH_BLOCKING=1: its
/// chronicles-prequel.md ("dealing with JZ hanging on the large model") measured 320 GPUs
/// with asynchronous launches as "always hangs" and adopted the variable as the workaround,
/// and tr11-176B-ml.slurm exports it. Smaller runs there (the "Best TFLOPs" tables, before
/// the workaround) launch asynchronously.
void launch_blocking_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (r.source.rfind("bigscience-workshop/bigscience · train/tr11-176B-ml/", 0) != 0 || !r.gpus || *r.gpus < 320)
    return;
  s.training.launch_blocking = true;
  assumed.push_back(
      "CUDA_LAUNCH_BLOCKING=1 (BigScience tr11 at 320 GPUs or more: asynchronous launches \"always "
      "hang\" there, chronicles-prequel.md; tr11-176B-ml.slurm exports it)");
}

/// How a record's micro-steps add up and reduce their gradients: DeepSpeed's BF16_Optimizer
/// where the record names it (extras "bf16_optimizer"): fp32 accumulation, and the data-
/// parallel reduction over those fp32 buffers (DeepSpeed v0.6.5 runtime/pipe/engine.py
/// _bf16_reduce_grads all-reduces optimizer.get_grads_for_reduction(), which bf16_optimizer.py
/// returns as fp32_groups_gradients_flat); else PyTorch autograd's in-place add, the scenario
/// default. Megatron-LM's gradient-accumulation fusion (Feb 2022) is not assumed: the
/// Megatron-LM records here date from 2021.
void grad_accumulation_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (!has_extra(r, "bf16_optimizer")) return;
  s.training.grad_accumulation = GradAccumulation::bf16_optimizer;
  s.strategy.reduce_fp32 = true;
  assumed.push_back(
      "gradients added up by DeepSpeed's BF16_Optimizer (the record's extras): each micro-step's "
      "bf16 gradients cast to fp32 and added, 18 B per parameter, and reduced across data-parallel "
      "ranks in fp32 (its pipeline engine reduces the optimizer's fp32 gradient buffers)");
}

/// torchtitan's selective checkpointing as its December 2024 benchmarks ran it (commit
/// 9dec370): the op-level policy its Llama 3 configs name (train_configs/llama3_8b.toml:
/// selective_ac_option 'op'). Its loss: pytorch_loss_for.
void torchtitan_for(Scenario& s, std::vector<std::string>& assumed) {
  TrainingSpec& t = s.training;
  if (t.recompute == Recompute::selective) {
    t.recompute_modules = RecomputeModules{false};
    t.recompute_modules.op_sac = true;
    assumed.push_back(
        "selective checkpointing as torchtitan's op-level policy (train_configs/llama3_8b.toml @ 9dec370: "
        "selective_ac_option 'op'; parallelize_llama.py keeps every other matmul's output and attention's)");
  }
}

/// The kernels a record's framework runs, each listed as an assumption:
///  - composer/llm-foundry: eager PyTorch ops (no torch.compile in its benchmark scripts),
///    flash-attn's fused cross-entropy (modeling_mpt.py loss_fn 'fused_crossentropy'), and
///    two eager cross-entropy forwards for the training metrics Composer computes after every
///    micro-batch (LanguageCrossEntropy, LanguagePerplexity); gradients reduced in fp32 under
///    Composer's FSDP mixed precision DEFAULT (mosaic_fsdp_utils.get_mixed_precision).
///  - liger_kernel, deepspeed_transformer_kernels or Megatron: fused kernels.
///  - torch_compile: compiled.
///  - otherwise eager PyTorch.
void kernels_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  TrainingSpec& t = s.training;
  if (framework_is(r, "llm-foundry")) {
    t.kernel_profile = KernelProfile::eager;
    t.fused_loss = true;
    t.metric_loss_passes = 2;
    if (t.flash_attention) t.attention_kernel = foundry_attention(r);
    assumed.push_back(
        fmt::format("llm-foundry kernels: eager ops, {} attention, fused cross-entropy, 2 metric "
                    "cross-entropy passes per micro-batch",
                    t.attention_kernel ? name(*t.attention_kernel) : "unfused"));
  } else if (has_extra(r, "liger_kernel") || has_extra(r, "deepspeed_transformer_kernels") ||
             framework_is(r, "megatron") || framework_is(r, "nemo")) {
    t.kernel_profile = KernelProfile::fused;
    assumed.push_back("fused kernels (the record's framework or extras)");
    // Megatron-Core (NeMo 2024 on, Megatron-Bridge) runs Transformer Engine's layers, whose
    // attention is fused unless a config asks otherwise; Megatron-LM's 2021 records predate it.
    const bool megatron_core =
        framework_is(r, "megatron-core") || framework_is(r, "megatron-bridge") || framework_is(r, "nemo");
    if (megatron_core && !t.flash_attention) {
      t.flash_attention = true;
      assumed.push_back(
          "fused attention, not stated: Megatron-Core lets Transformer Engine pick its fused attention "
          "(TransformerConfig.attention_backend = AttnBackend.auto, megatron/core/transformer/"
          "transformer_config.py)");
    }
    if (megatron_core && !t.attention_kernel) transformer_engine_attention(r, s, assumed);
  } else if (has_extra(r, "torch_compile")) {
    t.kernel_profile = KernelProfile::compiled;
    assumed.push_back("torch.compile kernels (the record's extras)");
  } else {
    t.kernel_profile = KernelProfile::eager;
    assumed.push_back("eager PyTorch kernels (no fused kernels named by the record)");
  }
  attention_named_in_notes(r, s, assumed);
  attention_named_in_extras(r, s, assumed);
  launch_blocking_for(r, s, assumed);
  grad_accumulation_for(r, s, assumed);
  if (framework_is(r, "nanotron")) {
    s.strategy.reduce_fp32 = true;
    assumed.push_back(
        "gradients accumulated and reduced in fp32 (bench_cluster's nanotron template sets "
        "accumulate_grad_in_fp32: nanotron's FP32GradientAccumulator keeps an fp32 gradient buffer for every "
        "parameter, src/nanotron/optim/gradient_accumulator.py)");
    s.training.loss_fp32_copies = 2;
    assumed.push_back(
        "two fp32 copies of the logits at the loss (nanotron's sharded_cross_entropy casts the LM head's "
        "output to fp32 and subtracts the row maximum out of place, src/nanotron/parallel/tensor_parallel/"
        "functional.py @ a27e8fe8, the bench_cluster branch)");
  }
  if (framework_is(r, "torchtitan")) torchtitan_for(s, assumed);
  if (framework_is(r, "nanotron") && s.strategy.layout.pp > 1) {
    s.strategy.pp_split = StageSplit::balanced;
    assumed.push_back(
        "pipeline stages split by cost with the LM head counted (nanotron's build_model balances "
        "get_block_compute_costs)");
  }
  if (has_extra(r, "fsdp_mp_default")) {
    s.strategy.reduce_fp32 = true;
    assumed.push_back("gradients reduced in fp32 (FSDP mixed precision DEFAULT)");
  }
}

/// An NVFP4 record's recipe, stated as an assumption (its precision is fp4_mixed already).
void nvfp4_for(const Scenario& s, std::vector<std::string>& assumed) {
  if (s.training.precision == Precision::fp4_mixed)
    assumed.push_back(
        "precision fp4_mixed (the record's nvfp4): every linear layer's forward, input- and weight-gradient GEMMs "
        "in NVFP4, attention in bf16 (Transformer Engine's NVFP4BlockScaling, transformer_engine/common/recipe/"
        "__init__.py @ d0067d0d; Megatron-Bridge's bf16_with_nvfp4_mixed keeps no layer in bf16 unless its recipe "
        "says so, src/megatron/bridge/training/mixed_precision.py @ 21b02e0c)");
}

/// The stepcast probe's DDP runs (framework "pytorch-ddp") train fp32 parameters under
/// torch.autocast (calibrate/probe/train_probe.py); its LoRA runs load the frozen base in 16
/// bits, so they keep master_weights. Called once LoRA is known.
void mixed_precision_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (!framework_is(r, "pytorch-ddp") || s.strategy.layout.dp_sharding != Strategy::ddp || s.training.lora ||
      (s.training.precision != Precision::bf16_mixed && s.training.precision != Precision::fp16_mixed))
    return;
  s.training.autocast = true;
  s.strategy.reduce_fp32 = true;
  assumed.push_back(
      "mixed precision by torch.autocast over fp32 parameters (PyTorch AMP: the stepcast probe's DDP runs, "
      "calibrate/probe/train_probe.py)");
}

/// PyTorch's F.cross_entropy on the upcast logits, eager even when the model is compiled, whose
/// backward holds three fp32 copies of the logits: the stepcast probe's loss (calibrate/probe/
/// train_probe.py) and torchtitan's (train.py loss_fn @ 9dec370: "compiling loss function causes
/// CUDA errors").
void pytorch_loss_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  const bool probe = framework_is(r, "pytorch-ddp");
  if (!probe && !framework_is(r, "torchtitan")) return;
  s.training.loss_fp32_copies = 3;
  s.training.fused_loss = false;
  assumed.push_back(
      fmt::format("the loss eager, outside torch.compile, with three fp32 copies of the logits at its backward ({}: "
                  "F.cross_entropy on logits.float(): log-probabilities, their gradient and the logits' gradient)",
                  probe ? "the probe's" : "torchtitan train.py loss_fn @ 9dec370"));
}

/// The record's layout refused by a rule of model/parallel.hpp layout_violations, as a skip
/// with its reason: a record is measured data, not a scenario someone can fix.
/// Megatron-Core's all-to-all overlap where it runs for the layout (ep > 1, no full recompute,
/// interleaved under a pipeline, not beside the shared-expert overlap); false, said so, where not.
bool take_moe_a2a_overlap(Scenario& s, const std::string& from, std::vector<std::string>& assumed) {
  if (!moe_a2a_overlap_runs(s.strategy.layout, s.training.recompute) || s.strategy.moe_shared_expert_overlap) {
    assumed.push_back("the all-to-all overlap does not apply to this layout; " + from);
    return false;
  }
  s.strategy.moe_a2a_overlap = true;
  assumed.push_back("expert-parallel all-to-alls beside another micro-batch's layers, " + from +
                    " (moe_a2a_overlap: overlap_moe_expert_parallel_comm, delay_wgrad_compute)");
  return true;
}

/// A Megatron-Bridge record's CUDA graphs and MoE all-to-all overlap from its release's recipe
/// (record_defaults.hpp recipe_runtime): "full_iteration" captures the step; Transformer
/// Engine's or Megatron-Core's module graphs capture the scope's modules (null under "local":
/// its default, the whole layer, which a MoE layer allows under drop-and-pad only); scope
/// names stepcast does not model (mamba) are named and left out. The all-to-all overlap where
/// Megatron-Core runs it for the record's layout (moe_a2a_overlap_runs).
void recipe_runtime_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  const RecipeRuntime* rt = recipe_runtime(r.id);
  if (!rt) return;
  CudaGraphs g;
  std::vector<std::string> left_out;
  if (rt->cuda_graph_impl == "full_iteration") {
    g.full_iteration = true;
  } else if (rt->cuda_graph_impl != "none") {
    const bool dense_mlp = moe_layer_share(s.model) < 1.0;
    const std::vector<std::string> scope =
        rt->cuda_graph_scope ? *rt->cuda_graph_scope : std::vector<std::string>{"attn", "mlp", "moe"};
    for (const std::string& m : scope) {
      if (m == "attn")
        g.attn = true;
      else if (m == "mlp" && dense_mlp)
        g.mlp = true;
      else if (m == "moe" && s.model.moe && rt->moe_token_drop)
        g.moe = true;
      else if ((m == "moe_router" || m == "moe_preprocess") && s.model.moe)
        add_cuda_graph(g, m);
      else if (m != "mlp" && m != "moe")
        left_out.push_back(m);
    }
  }
  s.training.cuda_graphs = g;
  std::string line = fmt::format("CUDA graphs {}: not stated; {} (cuda_graph_impl {})", cuda_graphs_text(g),
                                 rt->source(), rt->cuda_graph_impl);
  if (!left_out.empty()) line += fmt::format("; scope {} not modelled, launched op by op", fmt::join(left_out, ", "));
  assumed.push_back(line);
  if (!s.model.moe) return;
  if (rt->moe_dispatcher == "flex" && rt->moe_flex_backend)
    s.strategy.moe_dispatcher = parse_moe_dispatcher(*rt->moe_flex_backend);
  assumed.push_back(fmt::format("MoE dispatcher {}: not stated; {}", name(s.strategy.moe_dispatcher), rt->source()));
  if (rt->moe_a2a_overlap) take_moe_a2a_overlap(s, "not stated; " + rt->source(), assumed);
}

/// CUDA graphs, the MoE dispatcher and the all-to-all overlap a record states in its extras:
/// cuda_graphs_full_iteration (the whole step), cuda_graphs (Transformer Engine's per-layer
/// graphs: attention and the dense MLP, a MoE layer's router and dispatch preprocessing),
/// hybridep or deepep, moe_a2a_overlap (or overlap_moe_expert_parallel_comm).
void runtime_extras_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (has_extra(r, "cuda_graphs_full_iteration")) {
    s.training.cuda_graphs = CudaGraphs{true};
    assumed.push_back("CUDA graphs full_iteration (the record's cuda_graphs_full_iteration)");
  } else if (has_extra(r, "cuda_graphs")) {
    CudaGraphs g;
    g.attn = true;
    g.mlp = moe_layer_share(s.model) < 1.0;
    g.moe_router = g.moe_preprocess = s.model.moe.has_value();
    s.training.cuda_graphs = g;
    assumed.push_back(fmt::format("CUDA graphs {} (the record's cuda_graphs: Transformer Engine's per-layer graphs)",
                                  cuda_graphs_text(g)));
  }
  if (!s.model.moe) return;
  for (const char* d : {"hybridep", "deepep"})
    if (has_extra(r, d)) {
      s.strategy.moe_dispatcher = parse_moe_dispatcher(d);
      assumed.push_back(fmt::format("MoE dispatcher {} (the record's {})", d, d));
    }
  if (!s.strategy.moe_a2a_overlap &&
      (has_extra(r, "moe_a2a_overlap") || has_extra(r, "overlap_moe_expert_parallel_comm")))
    take_moe_a2a_overlap(s, "the record's extras", assumed);
}

/// The TP collectives' overlap: the record's async_tp or tp_comm_overlap, else a Megatron-Bridge
/// record's recipe (or, without one, the performance recipes' rule), else Megatron's own
/// linear layers' asynchronous backward collectives.
void tensor_parallel_overlap_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  if (has_extra(r, "async_tp") && !has_extra(r, "tp_comm_overlap")) {
    if (!s.strategy.layout.sp) throw Skip{"extra \"async_tp\" without sequence parallelism is not modelled"};
    s.strategy.tp_comm_overlap = true;
    assumed.push_back(
        "async_tp as TP collectives beside their GEMMs: PyTorch's micro-pipelined TP cuts each all-gather "
        "before a GEMM and reduce-scatter after one into a ring of chunks beside the chunk GEMMs, as "
        "Transformer Engine's userbuffers do (modelled as tp_comm_overlap)");
  }
  if (has_extra(r, "tp_comm_overlap")) {
    if (!s.strategy.layout.sp) throw Skip{"extra \"tp_comm_overlap\" without sequence parallelism is not modelled"};
    s.strategy.tp_comm_overlap = true;
    assumed.push_back(
        "TP collectives beside their GEMMs (the record's tp_comm_overlap: Megatron-Core's "
        "--tp-comm-overlap)");
  }
  const RecipeRuntime* rt = recipe_runtime(r.id);
  if (s.strategy.layout.sp && !s.strategy.tp_comm_overlap && rt && rt->layout_matches && rt->tp_comm_overlap) {
    s.strategy.tp_comm_overlap = *rt->tp_comm_overlap;
    assumed.push_back(fmt::format("TP collectives {}, not stated; {} (tp_comm_overlap {})",
                                  *rt->tp_comm_overlap ? "beside their GEMMs" : "without Transformer Engine's overlap",
                                  rt->source(), *rt->tp_comm_overlap));
  } else if (s.strategy.layout.sp && !s.strategy.tp_comm_overlap && framework_is(r, "megatron-bridge") &&
             !has_extra(r, "nvfp4")) {
    s.strategy.tp_comm_overlap = true;
    assumed.push_back(
        "TP collectives beside their GEMMs, not stated: Megatron-Bridge's performance recipes turn on "
        "tp_comm_overlap wherever tp > 1, except under NVFP4 (scripts/performance/configs/llama/"
        "llama3_llm_pretrain.py @ 2a0d46e2: CommOverlapConfig(tp_comm_overlap=bool(tp > 1)))");
  }
  if (s.strategy.layout.sp && !s.strategy.tp_comm_overlap && (framework_is(r, "megatron") || framework_is(r, "nemo"))) {
    s.strategy.tp_backward_overlap = true;
    assumed.push_back(
        "the QKV and MLP-up backward's TP collectives beside their input- and weight-gradient GEMMs "
        "(Megatron's linear layers with sequence parallelism, LinearWithGradAccumulationAndAsync"
        "Communication)");
  }
}

void skip_broken_layout(const MeasuredRun& r, const Scenario& s, const LayoutContext& context) {
  const ParallelLayout& l = s.strategy.layout;
  const std::vector<LayoutRule> broken = layout_violations(l, s.model, context);
  if (broken.empty()) return;
  const TransformerSpec& m = s.model;
  switch (broken.front()) {
    case LayoutRule::divides_gpus:
      throw Skip{fmt::format("TP {} x PP {} x CP {} does not divide the {} GPUs", l.tp, l.pp, l.cp, context.gpus)};
    case LayoutRule::tp_model:
      throw Skip{
          fmt::format("TP {} does not divide the model's {} heads, {} KV heads and MLP width {} (Megatron's "
                      "split)",
                      l.tp, m.heads, m.kv_heads, m.ffn_hidden)};
    case LayoutRule::sp_sequence:
    case LayoutRule::cp_sequence:
      throw Skip{
          fmt::format("context parallelism {} does not split the {}-token sequence into 2 x cp chunks (and "
                      "tp x cp shards under sequence parallelism)",
                      l.cp, context.seq_len)};
    case LayoutRule::cp_attention:
      throw Skip{"context parallelism without a flash-class attention kernel is not modelled"};
    case LayoutRule::vpp_pipeline:
      throw Skip{"virtual pipeline stages without pipeline parallelism"};
    case LayoutRule::pipeline_layers:
      throw Skip{l.vpp > 1 ? fmt::format("{} stages x {} model chunks exceed the {} layers", l.pp, l.vpp, m.layers)
                           : fmt::format("PP {} exceeds the {} layers", l.pp, m.layers)};
    case LayoutRule::pipeline_strategy:
      throw Skip{fmt::format("{} with pipeline parallelism (PP {}) is not modelled", r.data_parallel, l.pp)};
    case LayoutRule::interleaved_groups:
      throw Skip{
          fmt::format("the interleaved schedule as modelled runs micro-batches in groups of pp = {}; the "
                      "record's {} micro-batches are not",
                      l.pp, context.micro_batches)};
    default:
      throw Skip{std::string(describe(broken.front()))};
  }
}

/// Context parallelism (extra context_parallel_<n>: its exchange) and the interleaved
/// schedule's model chunks per pipeline stage (virtual_pipeline_<n>, with or without
/// pp_schedule_interleaved_1f1b): what the layout rules do not cover and the assumptions.
void parallel_extras_for(const MeasuredRun& r, Scenario& s, std::vector<std::string>& assumed) {
  const int cp = s.strategy.layout.cp;
  if (cp > 1) {
    if (s.training.lora) throw Skip{"LoRA with context parallelism is not modelled"};
    const bool pytorch = framework_is(r, "torchtitan");  // PyTorch's context_parallel
    if (pytorch) s.strategy.cp_comm = CpCommKind::all_gather;
    assumed.push_back(fmt::format(
        "context parallelism {} (the record's context_parallel_{}), K and V {}; not stated)", cp, cp,
        pytorch ? "all-gathered (PyTorch's context_parallel default, _ContextParallelOptions.rotate_method ALL_GATHER "
                  "in torch/distributed/tensor/experimental/_attention.py"
                : "passed around a ring (Megatron-Core's and Transformer Engine's default exchange"));
  }
  const int vpp = s.strategy.layout.vpp;
  if (vpp == 1) return;
  if (s.strategy.pp_split == StageSplit::balanced)
    throw Skip{"the interleaved schedule with cost-balanced stages is not modelled"};
  assumed.push_back(
      fmt::format("pipeline schedule interleaved 1F1B, {} model chunks per stage (the record's "
                  "virtual_pipeline_{})",
                  vpp, vpp));
}

/// The catalog box of the record's GPU, the nodes the GPUs fill, and the network between
/// them (stated, or the box's standard NICs).
HardwareChoice hardware_for(const MeasuredRun& r, const std::string& gpu, std::vector<std::string>& assumed) {
  const BoxSpec& box = box_for(r, gpu, assumed);
  const std::int64_t gpus = *r.gpus;
  std::int64_t ppn = r.gpus_per_node.value_or(std::min<std::int64_t>(gpus, box.gpus));
  if (ppn > box.gpus) throw Skip{fmt::format("{} GPUs per node exceed the {}'s {}", ppn, box.name, box.gpus)};
  if (gpus % ppn != 0) throw Skip{"GPUs do not divide into nodes"};
  // A rack-scale NVLink domain (GB200/GB300 NVL72: 18 compute trays of 4 GPUs on one switch
  // plane) is one box: a record's "node" there is a compute tray, and a job of no more GPUs
  // than the rack has runs inside its one NVLink domain.
  constexpr int kBoardGpus = 16;  // more than an HGX board or a DGX-2 holds: a rack
  bool rack_domain = false;       // a job over several racks, a segment of each
  if (box.fabric == IntraFabric::nvswitch && box.gpus > kBoardGpus && ppn < box.gpus && box.gpus % ppn == 0 &&
      gpus > ppn && gpus <= box.gpus) {
    assumed.push_back(
        fmt::format("the record's {} GPUs per node are compute trays of the {}: its {} GPUs share the "
                    "rack's one NVLink domain",
                    ppn, box.name, gpus));
    ppn = gpus;
  } else if (box.fabric == IntraFabric::nvswitch && box.gpus > kBoardGpus && gpus > box.gpus) {
    if (!framework_is(r, "megatron-bridge") || box.gpus % ppn != 0)
      throw Skip{
          fmt::format("{} GPUs span several {} racks, and the record does not say how many GPUs of each rack "
                      "(NVLink domain) the job used",
                      gpus, box.name)};
    // Megatron-Bridge's Slurm launcher asks for a segment of trays per NVLink domain: all of
    // them up to a rack's, else the largest divisor of the tray count that fits in one rack.
    const std::int64_t trays = gpus / ppn;
    const std::int64_t rack_trays = box.gpus / ppn;
    std::int64_t segment = std::min(trays, rack_trays);
    while (trays % segment != 0) --segment;
    assumed.push_back(
        fmt::format("{} GPUs over {} NVLink domains of {} GPUs ({} compute trays each): Megatron-Bridge's "
                    "launcher sets Slurm's --segment to the largest divisor of the tray count up to a rack's 18 "
                    "(scripts/performance/utils/executors.py @ 067f987d, slurm_executor), not stated",
                    gpus, trays / segment, segment * ppn, segment));
    ppn *= segment;
    rack_domain = true;
  }
  const std::int64_t nodes = gpus / ppn;
  if (nodes > 1 && ppn != box.gpus && !rack_domain)
    throw Skip{fmt::format("{} of the {}'s {} GPUs per node over several nodes", ppn, box.name, box.gpus)};
  HardwareChoice h;
  h.cluster.name = box.name;
  h.cluster.box = box.name;
  h.cluster.nodes = static_cast<int>(nodes);  // <= limits::kMaxGpus: read within bounds
  h.nodes = static_cast<int>(nodes);
  h.gpus_per_node = static_cast<int>(ppn);
  if (nodes > 1) {
    NetworkSpec net;
    if (r.inter_fabric && r.inter_gbps_per_node) {
      const auto [kind, count] = nics_for(*r.inter_fabric, *r.inter_gbps_per_node);
      net.nic = kind;
      net.nics_per_node = count;
    } else if (r.inter_fabric) {
      const auto [kind, count] = stated_fabric_nics(*r.inter_fabric, box, assumed);
      net.nic = kind;
      net.nics_per_node = count;
    } else {
      if (box.nic.empty()) throw Skip{"inter-node network not stated and the box has no standard NIC"};
      net.nic = box.nic;
      net.nics_per_node = box.nics;
      if (rack_domain) net.nics_per_node = static_cast<int>(ppn * box.nics / box.gpus);  // the used trays' NICs
      assumed.push_back(fmt::format("the {}'s standard network, {} x {} per {} (not stated)", box.name,
                                    net.nics_per_node, box.nic, rack_domain ? "NVLink domain" : "node"));
    }
    net.topology = NetworkTopology::rail_fat_tree;
    h.cluster.network = net;
  }
  return h;
}

/// The record's CPU offload: optimizer_cpu is ZeRO-Offload's optimizer on the host,
/// param_optimizer_cpu the parameters too (DeepSpeed offload_param, FSDP CPUOffload). The
/// record format states no host, so with `assume_host` (the default) it is taken from the box
/// catalog and printed as an assumption (a box without one: an explicit skip). No delayed parameter update (DeepSpeed's
/// default).
void offload_for(const MeasuredRun& r, Scenario& s, bool assume_host, std::vector<std::string>& assumed) {
  if (*r.offload == "none") return;
  s.strategy.offload = *r.offload == "optimizer_cpu" ? OffloadKind::optimizer : OffloadKind::parameters;
  if (!offload_supported(s.strategy.offload, s.strategy.layout.dp_sharding))
    throw Skip{
        fmt::format("CPU offload ({}) with {} is not modelled", *r.offload, name(s.strategy.layout.dp_sharding))};
  if (!assume_host)
    throw Skip{
        "CPU offload: the record does not state its host (CPUs, memory bandwidth), which sets the offload's "
        "cost (validate without --no-assume-host takes the catalog box's)"};
  const BoxSpec* box = find_box(s.hardware.cluster.box);
  if (!box || !box->host) throw Skip{"CPU offload on a box whose host (CPU, memory) is not in the catalog"};
  assumed.push_back(
      fmt::format("CPU offload of the {} on the {}'s host ({}; not stated, the catalog box's), no "
                  "delayed parameter update",
                  name(s.strategy.offload), box->name, box->host->cpu));
}

/// Where each checked value of the record's scenario came from in the record.
ScenarioSource source_of(const MeasuredRun& r) {
  ScenarioSource w;
  w.file = fmt::format("{}:{}", r.file, r.line);
  w.model = "/model";
  w.micro_batch = "/batch/micro_batch";
  w.grad_accum = r.grad_accum ? "/batch/grad_accum" : "/batch/global_batch";
  w.seq_len = "/model/seq_len";
  w.precision = "/strategy/precision";
  w.strategy = "/strategy";
  w.gpus = "/hardware/gpus";
  w.gpus_per_node = r.gpus_per_node ? "/hardware/gpus_per_node" : "/hardware/gpus";
  w.nodes = w.gpus_per_node;
  return w;
}

Scenario build(MeasuredRun r, std::vector<std::string>& assumed, const std::shared_ptr<const HardwareFile>& calibration,
               const std::string& calibration_file, bool assume_host) {
  apply_framework_defaults(r, assumed);
  check_representable(r);
  Scenario s;
  s.name = r.id;
  s.description = r.model_name;
  s.file = r.file;
  s.model = model_for(r, assumed);
  const std::string gpu = gpu_for(r);
  if (r.gpu.rfind("other:", 0) == 0)
    assumed.push_back(
        fmt::format("GPU \"{}\" read as the catalog's {} (its only entry of that name)", r.gpu.substr(6), gpu));
  ParallelLayout& layout = s.strategy.layout;
  layout.dp_sharding = strategy_for(r, assumed);
  layout.tp = static_cast<int>(*r.tp);  // <= kMaxGpus (read within bounds)
  layout.sp = r.sp.value_or(false) && *r.tp > 1;
  layout.pp = static_cast<int>(*r.pp);
  layout.cp = extra_degree(r, "context_parallel_");
  layout.vpp = extra_degree(r, "virtual_pipeline_");
  if (layout.vpp > 1) layout.schedule = PipelineScheduleKind::interleaved;
  if (s.model.moe) {
    layout.ep = extra_degree(r, "expert_parallel_");
    if (layout.ep > 1)
      assumed.push_back(fmt::format("expert parallelism {} (the record's expert_parallel_{})", layout.ep, layout.ep));
  } else if (has_extra(r, "moe")) {
    throw Skip{"the record says MoE (extra moe) but its catalog model " + s.model.name + " is dense"};
  }
  // The rules the record alone can break, before its batch is divided over the replicas.
  LayoutContext stated;
  stated.gpus = *r.gpus;
  stated.gpus_per_node = 0;  // the node is placed later; the full check below sees it
  stated.seq_len = r.seq_len.value_or(s.model.seq_len);
  stated.micro_batches = 0;
  skip_broken_layout(r, s, stated);
  s.training = training_for(r, s.model);
  if (layout.pp > 1 && layout.vpp == 1)
    assumed.push_back("pipeline schedule 1F1B (PipeDream-Flush, Megatron's and DeepSpeed's default; not stated)");
  kernels_for(r, s, assumed);
  std::optional<LoraSpec> lora;  // the probe's LoRA runs (validate/categories.hpp)
  try {
    lora = lora_from_extras(r.extras);
  } catch (const std::invalid_argument& e) {
    throw Skip{e.what()};
  }
  if (lora) {
    s.training.lora = lora;
    assumed.push_back(fmt::format("LoRA rank {} (the record's extras)", lora->rank));
  }
  parallel_extras_for(r, s, assumed);  // after LoRA, which context parallelism refuses
  recipe_runtime_for(r, s, assumed);
  runtime_extras_for(r, s, assumed);
  mixed_precision_for(r, s, assumed);  // after LoRA, whose base is 16-bit
  nvfp4_for(s, assumed);
  pytorch_loss_for(r, s, assumed);
  s.hardware = hardware_for(r, gpu, assumed);
  offload_for(r, s, assume_host, assumed);
  if (has_extra(r, "float8_allgather")) {
    if (s.training.precision != Precision::fp8_mixed || !shards_parameters(s.strategy.layout.dp_sharding))
      throw Skip{"extra \"float8_allgather\" without fp8 training and sharded parameters is not modelled"};
    s.strategy.fp8_all_gather = true;
    assumed.push_back("linear weights all-gathered in fp8 (the record's float8_allgather)");
  }
  unmodelled_extras(r, assumed);
  if (has_extra(r, "overlap_grad_reduce") && s.strategy.layout.pp > 1) {  // without PP: what stepcast does already
    s.strategy.overlap_grad_reduce = true;
    assumed.push_back(
        "each pipeline stage reduces its gradients during its last backward (the record's "
        "overlap_grad_reduce: Megatron-Core's --overlap-grad-reduce)");
  }
  tensor_parallel_overlap_for(r, s, assumed);
  if (has_extra(r, "overlap_param_gather")) {
    if (s.strategy.layout.dp_sharding != Strategy::zero1 && s.strategy.layout.dp_sharding != Strategy::zero2)
      throw Skip{"extra \"overlap_param_gather\" without a ZeRO-1/2 (distributed) optimizer is not modelled"};
    s.strategy.overlap_param_gather = true;
    assumed.push_back(
        "the updated parameters all-gathered beside the next forward (the record's "
        "overlap_param_gather: Megatron-Core's --overlap-param-gather)");
  }
  if (calibration && calibration->gpu == gpu) {
    s.hardware.calibration = calibration;
    s.hardware.calibration_file = calibration_file;
    assumed.push_back("calibration " + calibration_file);
  }
  s.dataset.tokens = 1e9;  // unused: no record metric here depends on the data set size
  skip_broken_layout(r, s, layout_context(s));
  s.strategy.layout.dp = data_parallel_degree(s);
  check_scenario(s, source_of(r));  // the checks every scenario file goes through
  return s;
}

double predicted_metric(const MeasuredRun& r, const Prediction& p) {
  if (r.metric == "tokens_per_s_per_gpu") return p.tokens_per_s_per_gpu;
  if (r.metric == "step_time_s") return p.step_time_s;
  if (r.metric == "samples_per_s_global") return p.samples_per_s;
  if (r.metric == "mfu") return p.mfu;
  if (r.metric == "tflops_per_gpu") {
    // Megatron, DeepSpeed and BigScience count the recomputed forward (hardware FLOPs);
    // llm-foundry counts model FLOPs (12Lhs attention, no causal halving); ml-engineering
    // counts causal attention FLOPs with recompute excluded. The record's definition says
    // which.
    const auto says = [&](const char* what) { return r.definition.find(what) != std::string::npos; };
    const bool hardware =
        says("recompute") && !says("no recompute") && !says("without recompute") && !says("recompute excluded");
    const double flops = hardware                   ? p.hardware_flops_per_step
                         : says("causal attention") ? p.causal_model_flops_per_step
                                                    : p.model_flops_per_step;
    return flops / p.step_time_s / p.gpus / 1e12;
  }
  throw Skip{"metric " + r.metric + " needs figures a record does not give (data set size, overheads)"};
}

}  // namespace

RunScenario scenario_for(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration,
                         const std::string& calibration_file, bool assume_host) {
  RunScenario out;
  if (run.collective) {
    out.skip_reason = "a collective measurement, not a training run";
    return out;
  }
  try {
    out.scenario = build(run, out.assumptions, calibration, calibration_file, assume_host);
  } catch (const Skip& s) {
    out.skip_reason = s.why;
  }
  return out;
}

void set_prediction(ValidationRow& row, const MeasuredRun& run, double predicted) {
  const double error_pct = 100.0 * (predicted - run.value) / run.value;
  if (!std::isfinite(predicted) || !std::isfinite(error_pct))
    throw std::logic_error(
        fmt::format("{}:{}: record {}: the predicted {} is {} (error {}%), not a finite number; "
                    "this is a bug in stepcast, please report it with this record",
                    run.file, run.line, run.id, run.metric, predicted, error_pct));
  row.predicted = predicted;
  row.error_pct = error_pct;
  row.status = "ok";
}

ValidationRow validate_run(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration,
                           const std::string& calibration_file, bool assume_host,
                           const std::shared_ptr<const InStepFractions>& in_step) {
  if (run.collective) return validate_collective(run);
  ValidationRow row;
  row.id = run.id;
  row.source = run.source;
  row.trust = run.trust;
  row.strategy = run.data_parallel;
  row.gpu = run.gpu;
  row.metric = run.metric;
  row.measured = run.value;
  row.gpus = run.gpus.value_or(0);
  row.link_gbps = run.inter_gbps_per_node.value_or(0);
  row.micro_batch = run.micro_batch.value_or(0);
  row.tp = run.tp.value_or(0);
  row.pp = run.pp.value_or(0);
  row.global_batch = run.global_batch.value_or(0);
  row.model = run.model_name;
  row.seq_len = run.seq_len.value_or(0);
  row.precision = record_precision(run).value_or("");
  RunScenario rs = scenario_for(run, calibration, calibration_file, assume_host);
  row.assumptions = rs.assumptions;
  if (!rs.scenario) {
    row.status = "skipped: " + rs.skip_reason;
    return row;
  }
  row.cp = rs.scenario->strategy.layout.cp;
  row.vpp = rs.scenario->strategy.layout.vpp;
  const TrainingSpec& t = rs.scenario->training;
  row.attention = !t.flash_attention   ? "unfused"
                  : t.attention_kernel ? std::string(name(*t.attention_kernel))
                                       : "flash";
  // Leave one source out: a record of a source the in-step fractions were fitted on is
  // predicted with the isolated benchmarks' rates. The fit-free prediction always is.
  // A generation's GEMM fraction fitted on end-to-end runs is the one fitted without this
  // record's source.
  Scenario& sc = *rs.scenario;
  const InStepFractions& fractions = in_step ? *in_step : in_step_fractions();
  sc.training.in_step = fractions.generations.empty()
                            ? in_step
                            : std::make_shared<const InStepFractions>(without_source(fractions, run.source));
  const auto& fitted_on = fractions.fitted_on;
  const bool own_source = std::find(fitted_on.begin(), fitted_on.end(), run.source) != fitted_on.end();
  sc.training.in_step_rates = !own_source;
  if (own_source)
    row.assumptions.push_back(
        "isolated kernel rates: the in-step fractions were fitted on this record's source "
        "(leave one source out)");
  // Only an explicit reason skips a record; any other exception while predicting is a
  // failure and propagates.
  const Prediction p = predict(sc);
  double predicted = 0;
  try {
    predicted = predicted_metric(run, p);
  } catch (const Skip& s) {
    row.status = "skipped: " + s.why;
    return row;
  }
  set_prediction(row, run, predicted);
  row.memory_verdict = overall_verdict(p.memory);
  if (run.memory_measured_bytes) {
    row.memory_measured_bytes = run.memory_measured_bytes;
    // nanotron logs the memory of global rank 0 (log_memory's rank=0, src/nanotron/logging.py
    // @ a27e8fe8, the bench_cluster branch): the first pipeline stage.
    const bool rank0 = framework_is(run, "nanotron") && !p.memory.stage_total_bytes.empty();
    row.memory_predicted_bytes = rank0 ? allocator_bytes(p.memory, 0) : allocator_bytes(p.memory);
    if (rank0)
      row.assumptions.push_back(
          "peak memory of the first pipeline stage: nanotron logs global rank 0's (log_memory, "
          "src/nanotron/logging.py @ a27e8fe8, the bench_cluster branch)");
    row.memory_error_pct =
        100.0 * (*row.memory_predicted_bytes - *run.memory_measured_bytes) / *run.memory_measured_bytes;
  }
  sc.training.in_step_rates = false;
  const double fit_free = own_source ? predicted : predicted_metric(run, predict(sc));
  row.predicted_fit_free = fit_free;
  row.error_pct_fit_free = 100.0 * (fit_free - run.value) / run.value;
  const KernelTimes& k = p.compute_by_kernel;
  row.breakdown = ValidationRow::Breakdown{p.step_time_s, p.compute_busy_s, p.comm_busy_s, p.comm_exposed_s, k.gemm_s,
                                           k.attention_s, k.memory_s,       k.launch_s,    p.optimizer_s};
  if (run.categories) row.categories = compare_categories(*run.categories, p);
  return row;
}

std::vector<ValidationRow> validate_runs(const std::vector<MeasuredRun>& runs,
                                         const std::shared_ptr<const HardwareFile>& calibration,
                                         const std::string& calibration_file, unsigned threads,
                                         const std::function<void(std::size_t, std::size_t)>& progress,
                                         bool assume_host, const std::shared_ptr<const InStepFractions>& in_step) {
  const std::size_t n = runs.size();
  std::vector<ValidationRow> rows(n);
  std::vector<std::exception_ptr> failures(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex progress_lock;
  std::size_t done = 0;
  auto work = [&] {
    for (std::size_t i = next++; i < n && !failed; i = next++) {
      try {
        rows[i] = validate_run(runs[i], calibration, calibration_file, assume_host, in_step);
      } catch (...) {
        failures[i] = std::current_exception();
        failed = true;  // records after it need not run; records before it still finish
      }
      if (progress) {
        const std::lock_guard<std::mutex> lock(progress_lock);
        progress(++done, n);
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, n)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (std::size_t i = 0; i < n; ++i)
    if (failures[i]) std::rethrow_exception(failures[i]);
  return rows;
}

}  // namespace stepcast
