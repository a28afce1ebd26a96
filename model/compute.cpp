#include "model/compute.hpp"

#include "model/moe.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/flops.hpp"
#include "model/memory.hpp"
#include "model/parallel.hpp"
#include "model/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <string>

namespace stepcast {

double gemm_efficiency(const GemmEfficiency& e, double gemm_flops) {
  assert(gemm_flops >= 0);
  return e.max_fraction * gemm_flops / (gemm_flops + e.half_flops);
}

double default_memory_efficiency(GpuArch arch) {
  // Large device-to-device copies reach ~80-90% of HBM datasheet bandwidth (e.g. A100
  // 1.3-1.4 of 1.56 TB/s, H100 ~2.6-3.0 of 3.35 TB/s in the CUDA bandwidthTest sample).
  return arch == GpuArch::hopper || arch == GpuArch::blackwell ? 0.85 : 0.82;
}

std::pair<double, std::string> gemm_ceiling(const GpuSpec& gpu, Dtype dtype) {
  const double peak = gpu.peak(dtype);
  if (auto it = gpu.gemm_ceiling_tflops.find(dtype); it != gpu.gemm_ceiling_tflops.end())
    return {it->second, gpu.gemm_ceiling_source};
  if (dtype == Dtype::fp16 && gpu.supports(Dtype::bf16) && gpu.peak(Dtype::bf16) == peak) {
    if (auto it = gpu.gemm_ceiling_tflops.find(Dtype::bf16); it != gpu.gemm_ceiling_tflops.end())
      return {it->second, "the bf16 measurement (equal fp16 and bf16 peaks): " + gpu.gemm_ceiling_source};
  }
  const double fraction = dtype == Dtype::fp4    ? kFp4CeilingFraction
                          : dtype == Dtype::fp8  ? 0.735
                          : dtype == Dtype::fp32 ? 0.85
                                                 : 0.814;
  return {fraction * peak, fmt::format("{:.1f}% of the {} peak: the mean measured fraction of peak (no "
                                       "measurement of this GPU; model/compute.hpp gemm_ceiling)",
                                       100 * fraction, name(dtype))};
}

namespace {

AttentionPass parse_pass(JsonObject& o) {
  const std::string p = o.string("pass");
  if (p == "forward") return AttentionPass::forward;
  if (p == "backward") return AttentionPass::backward;
  throw o.error("pass", "expected \"forward\" or \"backward\", got \"" + p + "\"");
}

AttentionTableRow parse_attention_row(JsonObject& o) {
  AttentionTableRow row;
  row.gpu = o.string("gpu");
  try {
    row.kernel = parse_attention_kernel(o.string("kernel"));
  } catch (const std::invalid_argument& e) {
    throw o.error("kernel", e.what());
  }
  row.curve.head_dim = o.int32("head_dim", 16, 512);
  row.curve.causal = o.boolean("causal");
  row.curve.pass = parse_pass(o);
  JsonObject points = o.object("tflops_by_seq");
  for (const std::string& key : points.keys()) {
    char* end = nullptr;
    const double seq = std::strtod(key.c_str(), &end);
    if (end == key.c_str() || *end != '\0' || !(seq >= 1) || seq > limits::kMaxSeqLen)
      throw points.error(key, "expected a sequence length as the key");
    row.curve.tflops_by_seq.emplace_back(seq, points.number(key, limits::kMinPeakTflops, limits::kMaxPeakTflops));
  }
  points.finish();
  if (row.curve.tflops_by_seq.empty()) throw o.error("tflops_by_seq", "expected at least one point");
  std::sort(row.curve.tflops_by_seq.begin(), row.curve.tflops_by_seq.end());
  row.curve.source = o.string("source");
  if (row.curve.source.empty()) throw o.error("source", "expected where the numbers come from");
  o.ignore("how_read");
  o.finish();
  return row;
}

std::vector<AttentionTableRow> load_attention_table() {
  const JsonDoc doc = JsonDoc::load(data_dir() / "model" / "catalog" / "attention_kernels.json");
  JsonObject root(doc.root(), doc.file(), "");
  root.ignore("about");
  JsonArray list = root.array("rows");
  root.finish();
  std::vector<AttentionTableRow> rows;
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonObject o = list.object(i);
    rows.push_back(parse_attention_row(o));
  }
  return rows;
}

int generation(GpuArch a) {
  switch (a) {
    case GpuArch::volta:
      return 0;
    case GpuArch::turing:
      return 1;
    case GpuArch::ampere:
      return 2;
    case GpuArch::ada:
      return 3;
    case GpuArch::hopper:
      return 4;
    case GpuArch::blackwell:
      return 5;
    case GpuArch::cdna3:
      return 4;  // no AMD row in the table: Hopper's generation (guess)
  }
  return 0;
}

/// The tabled GPU for `kernel` nearest to `gpu` in generation (ties: the newer one); with
/// `pass`, only GPUs with rows of that pass.
const GpuSpec* nearest_tabled(const GpuSpec& gpu, AttentionKernel kernel,
                              std::optional<AttentionPass> pass = std::nullopt) {
  const GpuSpec* best = nullptr;
  for (const AttentionTableRow& r : attention_table()) {
    if (r.kernel != kernel || (pass && r.curve.pass != *pass)) continue;
    const GpuSpec* g = find_gpu(r.gpu);
    if (!g) continue;
    const int d = std::abs(generation(g->arch) - generation(gpu.arch));
    const int best_d = best ? std::abs(generation(best->arch) - generation(gpu.arch)) : 1 << 20;
    if (d < best_d || (d == best_d && generation(g->arch) > generation(best->arch))) best = g;
  }
  return best;
}

double ceiling16(const GpuSpec& g) {
  return gemm_ceiling(g, g.supports(Dtype::bf16) ? Dtype::bf16 : Dtype::fp16).first;
}

/// A table that gives a kernel's forward pass on `tabled` and not its backward: the backward
/// curves of the nearest generation that has them, scaled by the ratio of 16-bit GEMM
/// ceilings (as a GPU without rows borrows both passes); the source says so.
void borrow_backward(AttentionRates& out, const GpuSpec& tabled) {
  const GpuSpec* from = nearest_tabled(tabled, out.kernel, AttentionPass::backward);
  if (!from)
    throw std::invalid_argument("attention kernel " + std::string(name(out.kernel)) +
                                " has no backward rows in model/catalog/attention_kernels.json");
  for (const AttentionTableRow& r : attention_table())
    if (r.kernel == out.kernel && r.gpu == from->name && r.curve.pass == AttentionPass::backward)
      out.curves.push_back(r.curve);
  const double ratio = ceiling16(tabled) / ceiling16(*from);
  out.backward_scale *= ratio;
  out.source +=
      fmt::format("; backward not published on {}: {}'s backward scaled by the 16-bit GEMM ceiling ratio {:.2f}",
                  tabled.name, from->name, ratio);
}

}  // namespace

const std::vector<AttentionTableRow>& attention_table() {
  static const std::vector<AttentionTableRow> rows = load_attention_table();
  return rows;
}

AttentionRates attention_rates(const GpuSpec& gpu, AttentionKernel kernel) {
  AttentionRates out;
  out.kernel = kernel;
  if (kernel == AttentionKernel::unfused) {
    out.source = "unfused attention: batched GEMMs and softmax passes";
    return out;
  }
  const GpuSpec* tabled = nullptr;
  for (const AttentionTableRow& r : attention_table())
    if (r.kernel == kernel && r.gpu == gpu.name) tabled = &gpu;
  if (!tabled) tabled = nearest_tabled(gpu, kernel);
  if (!tabled && kernel == AttentionKernel::triton) {
    // FlashAttention-2 "is around 1.3-1.5x faster than FlashAttention in Triton in the
    // forward pass and around 2x faster in the backward pass" (Dao 2023, arXiv 2307.08691,
    // Sec. 4.1, A100): FlashAttention-2's curves / 1.4 forward, / 2 backward.
    AttentionRates fa2 = attention_rates(gpu, AttentionKernel::flash2);
    fa2.kernel = kernel;
    fa2.scale /= 1.4;
    fa2.backward_scale = 1.4 / 2.0;
    fa2.source =
        "FlashAttention-2's rates / 1.4 forward and / 2 backward (FlashAttention-2 paper, Sec. 4.1, on "
        "FlashAttention in Triton): " +
        fa2.source;
    return fa2;
  }
  if (!tabled && kernel != AttentionKernel::flash2) {
    // No published table for this kernel: FlashAttention-2's rates, said so.
    AttentionRates fa2 = attention_rates(gpu, AttentionKernel::flash2);
    fa2.kernel = kernel;
    fa2.source =
        fmt::format("no published table for {}; taken at FlashAttention-2's rates: {}", name(kernel), fa2.source);
    return fa2;
  }
  if (!tabled)
    throw std::invalid_argument("no published table for attention kernel " + std::string(name(kernel)) +
                                " (model/catalog/attention_kernels.json); name another kernel");
  bool has_backward = false;
  for (const AttentionTableRow& r : attention_table())
    if (r.kernel == kernel && r.gpu == tabled->name) {
      out.curves.push_back(r.curve);
      has_backward = has_backward || r.curve.pass == AttentionPass::backward;
    }
  if (tabled == &gpu) {
    out.source = fmt::format("{} on {}: {}", name(kernel), gpu.name, out.curves.front().source);
  } else {
    out.scale = ceiling16(gpu) / ceiling16(*tabled);
    out.source = fmt::format("{} measured on {}, scaled by the 16-bit GEMM ceiling ratio {:.2f} to {}: {}",
                             name(kernel), tabled->name, out.scale, gpu.name, out.curves.front().source);
  }
  if (!has_backward) borrow_backward(out, *tabled);
  return out;
}

namespace {

InStepFractions load_in_step() {
  return load_in_step_fractions(data_dir() / "model" / "catalog" / "in_step.json", "model/catalog/in_step.json");
}

/// One entry of in_step.json's "generations": {"arch", "gemm_fraction", "without": [{"source"
/// (validate's label, "owner/repo · path"), "gemm_fraction", "records"}], "records", "grid",
/// "method"}.
GenerationGemmFit generation_fit(JsonObject o, const std::string& shown_as) {
  GenerationGemmFit g;
  const std::string arch = o.choice("arch", gpu_arch_names());
  g.arch = parse_gpu_arch(arch);
  g.gemm = o.positive("gemm_fraction", 1.0);
  JsonArray without = o.array("without");
  for (std::size_t i = 0; i < without.size(); ++i) {
    JsonObject w = without.object(i);
    const std::string label = w.string("source");
    g.without.emplace_back(label, w.positive("gemm_fraction", 1.0));
    w.ignore("records");
    w.finish();
  }
  o.ignore("method");
  o.ignore("grid");
  o.ignore("records");
  o.finish();
  g.source =
      fmt::format("{}, {} GEMM fraction fitted on the end-to-end runs of {} sources", shown_as, arch, g.without.size());
  return g;
}

}  // namespace

InStepFractions load_in_step_fractions(const std::filesystem::path& file, const std::string& shown_as) {
  const JsonDoc doc = JsonDoc::load(file);
  JsonObject root(doc.root(), doc.file(), "");
  root.ignore("about");
  root.ignore("method");
  root.ignore("runs");  // per-run ratios of a `stepcast fit in-step` file, for the reader
  InStepFractions f;
  f.gemm = root.positive("gemm_fraction", 1.0);  // (0, 1]
  if (root.has("arch")) f.arch = parse_gpu_arch(root.choice("arch", gpu_arch_names()));
  f.attention = root.positive("attention_fraction", 1.0);  // (0, 1]
  JsonArray from = root.array("fitted_on");
  for (std::size_t i = 0; i < from.size(); ++i) {
    JsonObject o = from.object(i);
    const std::string repo = o.string("repo");
    const std::string path = o.string("path");
    o.ignore("commit");
    o.ignore("locator");
    o.ignore("machine");  // provenance of a probe fit (`stepcast fit in-step`)
    o.ignore("probe_file");
    o.finish();
    f.fitted_on.push_back(repo + " · " + path);
  }
  if (std::optional<JsonArray> gens = root.optional_array("generations"))
    for (std::size_t i = 0; i < gens->size(); ++i) {
      GenerationGemmFit g = generation_fit(gens->object(i), shown_as);
      for (const GenerationGemmFit& other : f.generations)
        if (other.arch == g.arch)
          throw gens->object(i).error(
              "arch", "one entry per GPU generation (" + std::string(name(g.arch)) + " is given twice)");
      f.generations.push_back(std::move(g));
    }
  root.finish();
  f.source = shown_as + ", fitted on ";
  for (std::size_t i = 0; i < f.fitted_on.size(); ++i) f.source += (i ? "; " : "") + f.fitted_on[i];
  return f;
}

std::optional<GpuArch> gemm_fraction_from(const InStepFractions& f, GpuArch arch) {
  std::vector<GpuArch> own;
  for (const GenerationGemmFit& g : f.generations) own.push_back(g.arch);
  if (f.arch) own.push_back(*f.arch);
  std::optional<GpuArch> best;
  const auto distance = [&](GpuArch a) { return std::abs(static_cast<int>(a) - static_cast<int>(arch)); };
  for (GpuArch a : own)
    if (!best || distance(a) < distance(*best) || (distance(a) == distance(*best) && a < *best)) best = a;
  return best;
}

namespace {

/// The generation fit gemm_fraction takes for `arch`; null: f.gemm.
const GenerationGemmFit* fit_for(const InStepFractions& f, GpuArch arch) {
  const std::optional<GpuArch> from = gemm_fraction_from(f, arch);
  for (const GenerationGemmFit& g : f.generations)
    if (from && g.arch == *from) return &g;
  return nullptr;
}

}  // namespace

double gemm_fraction(const InStepFractions& f, GpuArch arch) {
  const GenerationGemmFit* g = fit_for(f, arch);
  return g ? g->gemm : f.gemm;
}

InStepFractions without_source(InStepFractions f, const std::string& source) {
  for (GenerationGemmFit& g : f.generations)
    for (const auto& [label, fraction] : g.without)
      if (label == source) {
        g.gemm = fraction;
        g.source += "; fitted without " + source + " (leave one source out)";
      }
  return f;
}

const InStepFractions& in_step_fractions() {
  static const InStepFractions f = load_in_step();
  return f;
}

DeviceRates in_step_rates(DeviceRates d, const InStepFractions& f) {
  const GenerationGemmFit* fit = fit_for(f, d.arch);
  const double gemm = fit ? fit->gemm : f.gemm;
  d.gemm_ceiling_tflops *= gemm;
  d.attention_gemm_ceiling_tflops *= gemm;
  std::string gemm_from = fit ? fit->source : f.source;
  const std::optional<GpuArch> from = gemm_fraction_from(f, d.arch);
  if (from && *from != d.arch)
    gemm_from = fmt::format("{}; {} has no fraction of its own and takes {}'s, the nearest generation with one",
                            gemm_from, name(d.arch), name(*from));
  d.gemm_source = fmt::format("{} x {:.3f} in-step ({})", d.gemm_source, gemm, gemm_from);
  d.attention.scale *= f.attention;
  if (d.attention.kernel != AttentionKernel::unfused)
    d.attention.source = fmt::format("{} x {:.3f} in-step ({})", d.attention.source, f.attention, f.source);
  return d;
}

DeviceRates catalog_device_rates(const GpuSpec& gpu, Dtype dtype, AttentionKernel kernel) {
  DeviceRates d;
  d.arch = gpu.arch;
  d.sm_count = gpu.sm_count;
  d.peak_tflops = gpu.peak(dtype);
  std::tie(d.gemm_ceiling_tflops, d.gemm_source) = gemm_ceiling(gpu, dtype);
  d.attention_gemm_ceiling_tflops = dtype == Dtype::fp8 || dtype == Dtype::fp4 ? ceiling16(gpu) : d.gemm_ceiling_tflops;
  d.memory_bw_GBps = gpu.memory_bw_GBps;
  d.memory_efficiency = default_memory_efficiency(gpu.arch);
  d.memory_source = "datasheet bandwidth at the documented streaming efficiency (model/compute.cpp)";
  d.launch_s = kLaunchOverhead_s;
  d.eager_forward_op_s = kEagerForwardOp_s;
  d.eager_backward_op_s = kEagerBackwardOp_s;
  d.launch_source = "kLaunchOverhead_s, kEagerForwardOp_s, kEagerBackwardOp_s (model/compute.hpp)";
  d.attention = attention_rates(gpu, kernel);
  if (gpu.arch == GpuArch::hopper) {
    d.misaligned_gemm_tflops = kMisalignedGemmFractionHopper * gpu.peak(Dtype::bf16);
    d.misaligned_gemm_source = "kMisalignedGemmFractionHopper (model/compute.hpp) of the 16-bit dense peak";
  }
  return d;
}

namespace {

/// Forward and backward time of one layer's GEMMs (and LoRA adapters), and their count.
struct GemmTimes {
  double forward_s = 0, backward_s = 0;
  double head_forward_s = 0, head_backward_s = 0;
  double kernels_forward = 0, kernels_backward = 0;  ///< per layer
  double recompute_forward_s = 0;  ///< per layer: the forward GEMMs selective recompute's modules run again
  double moe_forward_s = 0, moe_backward_s = 0;  ///< per layer: the MoE MLP's GEMMs (in forward_s, backward_s)
  double moe_kernels_forward = 0, moe_kernels_backward = 0;  ///< their launches (in kernels_*)
};

/// Adds the MoE layers' MLP GEMMs (model/moe.hpp moe_layer_gemms), each grouped GEMM one
/// launch per pass (forward; backward its input- and weight-gradient GEMMs), weighted by the
/// share of MoE layers, since `out` is per layer on average. Under tensor parallelism (with
/// SP) a rank routes its own rows/t tokens and runs whole experts (expert TP 1:
/// moe_tokens_per_rank).
void add_moe_gemms(const TransformerSpec& spec, std::int64_t rows, double elem_bytes, const KernelChoice& kc,
                   const DeviceRates& d, GemmTimes& out) {
  const double share = moe_layer_share(spec);
  const double bw = d.achieved_memory_GBps();
  const std::int64_t tokens = moe_tokens_per_rank(rows, kc.tp);
  for (const GroupedGemm& gg : moe_layer_gemms(spec, *spec.moe, tokens, kc.ep, kc.moe_imbalance)) {
    const GemmShape& g = gg.shape;
    auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
      return gemm_time_s(m, n, k, gg.groups, elem_bytes, d.gemm_ceiling_tflops, d.sm_count, bw);
    };
    const double fwd = share * g.count_per_layer * t(g.m, g.n, g.k);
    const double bwd = share * g.count_per_layer * (t(g.m, g.k, g.n) + t(g.n, g.k, g.m));
    out.forward_s += fwd;
    out.backward_s += bwd;
    out.moe_forward_s += fwd;
    out.moe_backward_s += bwd;
    out.kernels_forward += share * g.count_per_layer;
    out.kernels_backward += share * 2 * g.count_per_layer;
    out.moe_kernels_forward += share * g.count_per_layer;
    out.moe_kernels_backward += share * 2 * g.count_per_layer;
  }
}

/// The shapes of one layer's GEMMs and the LM head on one rank (tensor-parallel or not).
std::vector<GemmShape> rank_gemms(const TransformerSpec& spec, std::int64_t rows, int tp) {
  return tp > 1 ? tp_layer_gemms(spec, rows, tp) : layer_gemms(spec, rows);
}

}  // namespace

std::vector<std::string> misaligned_gemms(const TransformerSpec& spec, Precision precision, const KernelChoice& kc,
                                          const DeviceRates& d) {
  std::vector<std::string> out;
  if (kc.profile != KernelProfile::eager || !(d.misaligned_gemm_tflops > 0)) return out;
  for (const GemmShape& g : rank_gemms(spec, 1, kc.tp))
    if (!gemm_rows_aligned(g.n, g.k, gemm_operand_bytes(precision))) out.push_back(g.name);
  return out;
}

namespace {

GemmTimes gemm_times(const TransformerSpec& spec, std::int64_t rows, const FlopsOptions& opts, double elem_bytes,
                     const KernelChoice& kc, const DeviceRates& d) {
  const int tp = kc.tp;
  const double bw = d.achieved_memory_GBps();
  // Eager PyTorch hands cuBLAS the shapes as they are; torch.compile pads misaligned ones
  // (Inductor's pad_mm) and the fused frameworks pad the vocabulary.
  const bool unpadded = kc.profile == KernelProfile::eager && d.misaligned_gemm_tflops > 0;
  auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k, bool aligned = true) {
    if (unpadded && !aligned) return misaligned_gemm_time_s(m, n, k, 1, elem_bytes, d.misaligned_gemm_tflops, bw);
    return gemm_time_s(m, n, k, 1, elem_bytes, d.gemm_ceiling_tflops, d.sm_count, bw);
  };
  const bool frozen = opts.lora != nullptr;
  GemmTimes out;
  // The dense MLP runs in the layers that are not MoE layers (all of a dense model's).
  const double dense_mlp = 1.0 - moe_layer_share(spec);
  for (const GemmShape& g : rank_gemms(spec, rows, tp)) {
    // The forward and both backward GEMMs read rows of the layer's n and k.
    const bool aligned = gemm_rows_aligned(g.n, g.k, elem_bytes);
    const double fwd = t(g.m, g.n, g.k, aligned);
    const double bwd = t(g.m, g.k, g.n, aligned) + (frozen ? 0.0 : t(g.n, g.k, g.m, aligned));
    if (g.name == "lm_head") {
      out.head_forward_s = fwd;
      out.head_backward_s = bwd;
      continue;
    }
    const bool mlp = g.name == "mlp_up" || g.name == "mlp_down";
    const double share = mlp ? dense_mlp : 1.0;
    const bool up_proj = g.name == "q_b" || g.name == "kv_b";
    if (opts.recompute == Recompute::selective &&
        ((up_proj && opts.recompute_modules.mla_up_proj) || (mlp && opts.recompute_modules.mlp)))
      out.recompute_forward_s += share * g.count_per_layer * fwd;
    out.forward_s += share * g.count_per_layer * fwd;
    out.backward_s += share * g.count_per_layer * bwd;
    out.kernels_forward += share * g.count_per_layer;
    out.kernels_backward += share * g.count_per_layer * (frozen ? 1 : 2);
  }
  if (spec.moe) add_moe_gemms(spec, rows, elem_bytes, kc, d, out);
  if (frozen) {
    for (const GemmShape& g : lora_adapter_gemms(spec, *opts.lora, rows)) {
      out.forward_s += g.count_per_layer * t(g.m, g.n, g.k);
      out.backward_s += g.count_per_layer * (t(g.m, g.k, g.n) + t(g.n, g.k, g.m));
      out.kernels_forward += g.count_per_layer;
      out.kernels_backward += 2 * g.count_per_layer;
    }
  }
  return out;
}

/// One layer's attention: forward and backward time and kernels.
struct AttentionTimes {
  double forward_s = 0, backward_s = 0;
  double kernels_forward = 1, kernels_backward = 3;
};

AttentionTimes attention_times(const TransformerSpec& spec, double b, std::int64_t s, double w, const KernelChoice& k,
                               const DeviceRates& d) {
  AttentionTimes out;
  const double seq = static_cast<double>(s);
  if (k.attention != AttentionKernel::unfused) {
    // Under context parallelism: 1/cp of the whole sequence's attention, in kernels of s/cp.
    const double chunk = seq / k.cp;
    if (spec.sliding_window && k.cp > 1)
      throw std::invalid_argument(
          "micro-step times: context parallelism with sliding-window attention is not modelled");
    auto full = [&](AttentionPass p) {
      return attention_flops(spec, b, seq, k.causal, p) / k.tp / k.cp /
             (attention_tflops(d.attention, spec.head_dim(), k.causal, p, chunk) * 1e12);
    };
    // A windowed layer: window_pair_share of the causal pairs, at the kernel's rate on a
    // sequence as long as the window (each query block reads about a window of keys).
    auto time = [&](AttentionPass p) {
      if (!spec.sliding_window) return full(p);
      const double window = static_cast<double>(spec.sliding_window->tokens);
      const double windowed = windowed_layer_share(spec);
      const double t_window =
          attention_flops(spec, b, seq, k.causal, p) * window_pair_share(seq, window) / k.tp /
          (attention_tflops(d.attention, spec.head_dim(), k.causal, p, std::min(window, seq)) * 1e12);
      return (1.0 - windowed) * full(p) + windowed * t_window;
    };
    out.forward_s = time(AttentionPass::forward);
    out.backward_s = time(AttentionPass::backward);
    return out;
  }
  // Unfused: scores Q·K^T and context P·V as batched GEMMs over b·heads (a sliding window is
  // a mask on the whole score matrix here: no work saved), the whole score
  // matrix written and read by scale+mask and softmax; backward, two GEMMs per product
  // and twice the softmax traffic.
  const double bw = d.achieved_memory_GBps();
  const std::int64_t batch = static_cast<std::int64_t>(b) * spec.heads / k.tp;
  const double gemms = gemm_time_s(s, s, spec.head_dim(), batch, w, d.attention_gemm_ceiling_tflops, d.sm_count, bw) +
                       gemm_time_s(s, spec.head_dim(), s, batch, w, d.attention_gemm_ceiling_tflops, d.sm_count, bw);
  const double softmax = 2.0 * 2.0 * w * static_cast<double>(batch) * seq * seq / (bw * 1e9);
  out.forward_s = gemms + softmax;
  out.backward_s = 2.0 * gemms + 2.0 * softmax;
  out.kernels_forward = 4;
  out.kernels_backward = 8;
  return out;
}

/// The share of a layer's forward GEMM work torchtitan's op_sac runs again: its even-numbered
/// matmuls (model/flops.hpp recompute_gemm_flops_per_token) over all of the layer's.
double op_sac_gemm_share(const TransformerSpec& spec) {
  RecomputeModules op{false};
  op.op_sac = true;
  double all = 0;
  for (const GemmShape& g : layer_gemms(spec, 1))
    if (g.name != "lm_head") all += static_cast<double>(g.count_per_layer) * static_cast<double>(g.n * g.k);
  return recompute_gemm_flops_per_token(spec, op) / (2.0 * static_cast<double>(spec.layers) * all);
}

/// Bytes one layer's memory-bound work moves again under selective recompute's modules (a
/// forward's read and write): layernorm, each pre-norm's input and output, 2·h·w per token
/// and norm (the token shard under SP); mlp, the dense MLP's activation (2 + gated)·f·w/t per
/// token, in the dense layers' share; moe_act, the routed experts' activation
/// (2 + gated)·k·f_e·w per routed token (moe_tokens_per_rank), in the MoE layers' share.
double recompute_memory_bytes(const TransformerSpec& spec, const RecomputeModules& m, std::int64_t rows, double w,
                              int tp, bool sp) {
  const double tokens = static_cast<double>(rows), t = tp;
  const double act = spec.gated_mlp ? 3.0 : 2.0;
  const double share = moe_layer_share(spec);
  double bytes = 0;
  if (m.layernorm)
    bytes +=
        (spec.parallel_attn_mlp ? 1.0 : 2.0) * 2.0 * static_cast<double>(spec.hidden) * w * tokens / (sp ? t : 1.0);
  if (m.mlp) bytes += (1.0 - share) * act * static_cast<double>(spec.ffn_hidden) * w * tokens / t;
  if (m.moe_act && spec.moe)
    bytes += share * act * static_cast<double>(spec.moe->top_k * spec.moe->expert_ffn) * w *
             static_cast<double>(moe_tokens_per_rank(rows, tp));
  return bytes;
}

}  // namespace

namespace {

/// The MoE layers' memory-bound work on the mean layer (their share): token permutation
/// (moe_permutation_bytes, two kernels each way) and the routed and shared experts'
/// activation and casts beyond the dense MLP's (moe_mlp_memory_delta_bytes), twice backward.
MemoryWork moe_memory_work(const TransformerSpec& spec, std::int64_t rows, double w, double cast_bytes,
                           const KernelChoice& k) {
  const double share = moe_layer_share(spec);
  const double routed_tokens = static_cast<double>(moe_tokens_per_rank(rows, k.tp));
  const double perm = share * moe_permutation_bytes(spec, *spec.moe, routed_tokens, w);
  const ExpertWork ew = expert_work(spec, *spec.moe, routed_tokens, k.ep, k.moe_imbalance);
  const double widths = share * moe_mlp_memory_delta_bytes(spec, static_cast<double>(rows),
                                                           static_cast<double>(ew.local_experts) * ew.rows_per_expert,
                                                           w, k.profile, cast_bytes, k.tp, k.sp);
  MemoryWork out;
  out.bytes_forward = perm + widths;
  out.bytes_backward = perm + 2 * widths;
  out.kernels_forward = 2 * share;
  out.kernels_backward = 2 * share;
  return out;
}

/// The CPU's time per pass of the mean layer.
struct LayerCpuTimes {
  double forward_s = 0, backward_s = 0;
};

/// The CPU's time for one layer's ops per pass, `op_fwd_s`/`op_bwd_s` per dispatched op:
///  - the layer's ops outside the MoE MLP block (`ops_*` less `moe_ops_*`), their captured
///    share one graph launch per captured block (a dense layer's ops split evenly between
///    its attention and MLP blocks; a MoE layer's are its attention block's);
///  - the MoE MLP blocks' CPU work (moe_host_ops, for the layers' MoE share): Python ops at
///    the op cost, less what graphs of the router and preprocessing take (one launch each),
///    and per-expert launches at the driver's cost for the E/ep local experts; a graph of the
///    whole block (drop-and-pad only) costs one launch;
///  - under a full-iteration graph, nothing: the step replays without the CPU.
LayerCpuTimes layer_cpu_times(const TransformerSpec& spec, const KernelChoice& k, const DeviceRates& d, double op_fwd_s,
                              double op_bwd_s, double ops_fwd, double ops_bwd, double moe_ops_fwd, double moe_ops_bwd,
                              bool fp8) {
  const CudaGraphs& cg = k.graphs;
  if (cg.full_iteration) return {};
  const double share = spec.moe ? moe_layer_share(spec) : 0.0;
  const double captured = spec.moe ? (cg.attn ? 1.0 : 0.0) : 0.5 * (cg.attn ? 1.0 : 0.0) + 0.5 * (cg.mlp ? 1.0 : 0.0);
  const double graphs = (cg.attn ? 1.0 : 0.0) + (!spec.moe && cg.mlp ? 1.0 : 0.0);
  LayerCpuTimes out;
  out.forward_s = op_fwd_s * (ops_fwd - moe_ops_fwd) * (1 - captured) + d.launch_s * graphs;
  out.backward_s = op_bwd_s * (ops_bwd - moe_ops_bwd) * (1 - captured) + d.launch_s * graphs;
  if (!spec.moe) return out;
  if (cg.moe) {
    out.forward_s += share * d.launch_s;
    out.backward_s += share * d.launch_s;
    return out;
  }
  const MoeHostOps h = moe_host_ops(k.moe_dispatcher, fp8);
  const double launches = (cg.moe_router ? 1.0 : 0.0) + (cg.moe_preprocess ? 1.0 : 0.0);
  const double graphed = 0.5 * launches;  // the captured ops, half each to the router and preprocessing
  const double local_experts = static_cast<double>(spec.moe->experts) / k.ep;
  out.forward_s += share * (op_fwd_s * (h.python_forward - graphed * h.captured_forward) +
                            d.launch_s * (h.per_expert_forward * local_experts + launches));
  out.backward_s += share * (op_bwd_s * (h.python_backward - graphed * h.captured_backward) +
                             d.launch_s * (h.per_expert_backward * local_experts + launches));
  return out;
}

}  // namespace

MicroStepTimes micro_step_times(const TransformerSpec& spec, std::int64_t micro_batch, std::int64_t seq_len,
                                Precision precision, const FlopsOptions& opts, const KernelChoice& kernels,
                                const DeviceRates& device) {
  if (!(device.gemm_ceiling_tflops > 0) || !(device.memory_bw_GBps > 0) || device.sm_count < 1)
    throw std::invalid_argument("micro-step times need a GEMM ceiling, a memory bandwidth and SMs > 0");
  if (micro_batch < 1 || seq_len < 1)
    throw std::invalid_argument("micro-step times need micro_batch >= 1 and seq_len >= 1, got " +
                                std::to_string(micro_batch) + " and " + std::to_string(seq_len));
  if (kernels.cp < 1 || seq_len % kernels.cp != 0)
    throw std::invalid_argument("micro-step times need cp >= 1 dividing seq_len, got cp " + std::to_string(kernels.cp));
  if (kernels.cp > 1 && kernels.attention == AttentionKernel::unfused)
    throw std::invalid_argument("micro-step times: context parallelism needs a flash-class attention kernel");
  // Each context-parallel rank holds seq_len / cp tokens of every sequence.
  const std::int64_t rows =
      checked_product(micro_batch, seq_len / kernels.cp, "tokens per micro-batch (micro_batch x seq_len)");
  const double tokens = static_cast<double>(rows);
  const double w = working_bytes(precision);
  const double bw = device.achieved_memory_GBps() * 1e9;

  if (kernels.tp < 1 || (kernels.sp && kernels.tp < 2))
    throw std::invalid_argument("micro-step times need tp >= 1, and tp >= 2 for sequence parallelism");
  if (kernels.tp > 1 && opts.lora != nullptr)
    throw std::invalid_argument("micro-step times: LoRA under tensor parallelism is not modelled");
  if ((spec.moe || spec.mla) && opts.lora != nullptr)
    throw std::invalid_argument("micro-step times: MoE and MLA models under LoRA are not modelled");
  if (spec.mla && kernels.tp > 1 && !kernels.sp)
    throw std::invalid_argument("micro-step times: MLA under tensor parallelism is modelled with sequence parallelism");
  if (spec.moe && kernels.tp > 1 && !kernels.sp)
    throw std::invalid_argument("micro-step times: a MoE model under tensor parallelism needs sequence parallelism");
  if (kernels.ep > 1 && !spec.moe) throw std::invalid_argument("micro-step times: ep > 1 needs a MoE model");
  const GemmTimes g = gemm_times(spec, rows, opts, gemm_operand_bytes(precision), kernels, device);
  const AttentionTimes a = attention_times(spec, static_cast<double>(micro_batch), seq_len, w, kernels, device);
  MemoryWork mem = layer_memory_work(spec, tokens, w, kernels.profile, gemm_cast_bytes(precision), kernels.tp,
                                     kernels.sp, kernels.autocast);
  // The MoE layers' token permutation (two kernels each way) and their experts' widths.
  const MemoryWork moe = spec.moe ? moe_memory_work(spec, rows, w, gemm_cast_bytes(precision), kernels) : MemoryWork{};
  mem.bytes_forward += moe.bytes_forward;
  mem.bytes_backward += moe.bytes_backward;
  mem.kernels_forward += moe.kernels_forward;
  mem.kernels_backward += moe.kernels_backward;
  MemoryWork loss = loss_memory_work(spec, tokens, w,
                                     kernels.fused_loss ? KernelProfile::compiled : KernelProfile::eager, kernels.tp);
  if (kernels.autocast) {  // each GEMM weight cast to 16 bits in the forward, its gradient back
    if (spec.moe || kernels.tp > 1 || opts.lora != nullptr)
      throw std::invalid_argument("micro-step times: autocast is modelled for dense DDP full training");
    const AutocastCasts casts = autocast_casts(spec);
    mem.bytes_forward += autocast_cast_bytes(casts.per_layer, w);
    mem.bytes_backward += autocast_cast_bytes(casts.per_layer, w);
    mem.kernels_forward += casts.kernels_per_layer;
    mem.kernels_backward += casts.kernels_per_layer;
    loss.bytes_forward += autocast_cast_bytes(casts.head, w);
    loss.bytes_backward += autocast_cast_bytes(casts.head, w);
    loss.kernels_forward += 1;
    loss.kernels_backward += 1;
  }
  if (kernels.metric_loss_passes > 0) {
    const MemoryWork metric = loss_memory_work(spec, tokens, w, KernelProfile::eager, kernels.tp);
    loss.bytes_forward += kernels.metric_loss_passes * metric.bytes_forward;
    loss.kernels_forward += kernels.metric_loss_passes * metric.kernels_forward;
  }

  // CPU cost per op: eager dispatch (eager and fused profiles run Python modules) or, for
  // compiled code, the driver's launch; never below the device's launch cost.
  const bool dispatched = kernels.profile != KernelProfile::compiled;
  const double launch = dispatched ? std::max(device.launch_s, device.eager_forward_op_s) : device.launch_s;
  const double launch_bwd = dispatched ? std::max(device.launch_s, device.eager_backward_op_s) : device.launch_s;
  const double gpu_fwd = g.forward_s + a.forward_s + mem.bytes_forward / bw;
  const double gpu_bwd = g.backward_s + a.backward_s + mem.bytes_backward / bw;
  // The CPU runs ahead of the GPU (the slower of the two sets the time), or, with blocking
  // launches, each op's CPU cost adds to its kernel's.
  const auto with_cpu = [&](double gpu_s, double cpu_s) {
    return kernels.launch_blocking ? gpu_s + cpu_s : std::max(gpu_s, cpu_s);
  };
  const LayerCpuTimes cpu = layer_cpu_times(
      spec, kernels, device, launch, launch_bwd, g.kernels_forward + a.kernels_forward + mem.kernels_forward,
      g.kernels_backward + a.kernels_backward + mem.kernels_backward, g.moe_kernels_forward + moe.kernels_forward,
      g.moe_kernels_backward + moe.kernels_backward, gemm_operand_bytes(precision) < 2);
  const double layer_fwd = with_cpu(gpu_fwd, cpu.forward_s);
  const double layer_bwd = with_cpu(gpu_bwd, cpu.backward_s);
  const double L = static_cast<double>(spec.layers);

  MicroStepTimes t;
  const double head_gpu_fwd = g.head_forward_s + loss.bytes_forward / bw;
  const double head_gpu_bwd = g.head_backward_s + loss.bytes_backward / bw;
  const double head_cpu = kernels.graphs.full_iteration ? 0.0 : 1.0;
  t.head_forward_s = with_cpu(head_gpu_fwd, head_cpu * launch * (1 + loss.kernels_forward));
  t.head_backward_s = with_cpu(head_gpu_bwd, head_cpu * launch_bwd * (2 + loss.kernels_backward));
  t.layer_attention_forward_s = a.forward_s;
  t.layer_attention_backward_s = a.backward_s;
  t.layer_moe_mlp_forward_s = g.moe_forward_s + moe.bytes_forward / bw;
  t.layer_moe_mlp_backward_s = g.moe_backward_s + moe.bytes_backward / bw;
  t.forward_s = L * layer_fwd + t.head_forward_s;
  t.backward_s = L * layer_bwd + t.head_backward_s;
  // Forwards of the layers per micro-step: 1, or 2 under full recompute.
  const double fwd_passes = opts.recompute == Recompute::full ? 2.0 : 1.0;
  const bool selective = opts.recompute == Recompute::selective;
  const bool core_again = opts.recompute == Recompute::full || (selective && opts.recompute_modules.core_attn);
  double module_bytes =
      selective ? recompute_memory_bytes(spec, opts.recompute_modules, rows, w, kernels.tp, kernels.sp) : 0.0;
  double recompute_gemm_s = g.recompute_forward_s;
  if (selective && opts.recompute_modules.op_sac) {  // the even matmuls and every memory-bound op again
    module_bytes += mem.bytes_forward;
    recompute_gemm_s += g.forward_s * op_sac_gemm_share(spec);
  }
  if (opts.recompute == Recompute::full) t.recompute_s = L * layer_fwd;
  if (selective) t.recompute_s = L * ((core_again ? a.forward_s : 0.0) + recompute_gemm_s + module_bytes / bw);
  KernelTimes& k = t.kernels;
  k.gemm_s = L * (fwd_passes * g.forward_s + g.backward_s + recompute_gemm_s) + g.head_forward_s + g.head_backward_s;
  k.attention_s = L * (a.forward_s + a.backward_s) + (core_again ? L * a.forward_s : 0.0);
  k.memory_s = L * (fwd_passes * mem.bytes_forward + mem.bytes_backward + module_bytes) / bw +
               (loss.bytes_forward + loss.bytes_backward) / bw;
  k.launch_s = L * (fwd_passes * (layer_fwd - gpu_fwd) + (layer_bwd - gpu_bwd)) + (t.head_forward_s - head_gpu_fwd) +
               (t.head_backward_s - head_gpu_bwd);
  return t;
}

double optimizer_bytes_per_param(Precision precision, bool fp32_gradients, bool sgd) {
  const double grad = fp32_gradients || precision == Precision::fp32 ? 4 : 2;
  const double copy = precision == Precision::fp32 ? 0 : 2;
  if (sgd) return 4 + 4 + grad + 4 + 4 + copy;  // master r/w, momentum r/w, grad read, copy write
  return 4 * 3 + grad + 4 * 3 + copy;           // master, m, v read; grad read; master, m, v, copy write
}

std::string_view name(GradAccumulation g) {
  switch (g) {
    case GradAccumulation::autograd:
      return "autograd";
    case GradAccumulation::fused:
      return "fused";
    case GradAccumulation::bf16_optimizer:
      return "bf16_optimizer";
  }
  return "?";
}

std::vector<std::string> grad_accumulation_names() { return {"autograd", "fused", "bf16_optimizer"}; }

GradAccumulation parse_grad_accumulation(std::string_view s) {
  for (GradAccumulation g : {GradAccumulation::autograd, GradAccumulation::fused, GradAccumulation::bf16_optimizer})
    if (s == name(g)) return g;
  std::string known;
  for (const std::string& n : grad_accumulation_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown gradient accumulation \"" + std::string(s) + "\"; expected one of " + known);
}

double grad_accumulation_bytes(GradAccumulation mode, double grad_bytes, std::int64_t micro_steps) {
  assert(grad_bytes >= 0 && micro_steps >= 1);
  switch (mode) {
    case GradAccumulation::autograd: {
      const double m = static_cast<double>(micro_steps);
      return 3.0 * grad_bytes * (m - 1.0) / m;
    }
    case GradAccumulation::fused:
      return 0.0;
    case GradAccumulation::bf16_optimizer:
      return 9.0 * grad_bytes;
  }
  return 0.0;
}

double optimizer_time_s(double local_params, double bytes_per_param, const DeviceRates& device) {
  return local_params * bytes_per_param / (device.achieved_memory_GBps() * 1e9);
}

}  // namespace stepcast
