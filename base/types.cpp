#include "base/types.hpp"

#include <cctype>
#include <stdexcept>
#include <string>

namespace stepcast {

namespace {

template <typename E, std::size_t N>
E parse_enum(std::string_view text, const std::array<std::string_view, N>& names, const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<E>(i);
  std::string msg = std::string("unknown ") + what + " \"" + std::string(text) + "\"; expected one of ";
  for (std::size_t i = 0; i < N; ++i) msg += (i ? ", \"" : "\"") + std::string(names[i]) + "\"";
  throw std::invalid_argument(msg);
}

template <std::size_t N>
std::vector<std::string> all(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}

constexpr std::array<std::string_view, 6> kDtype{"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
constexpr std::array<std::string_view, 7> kArch{"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna3"};
constexpr std::array<std::string_view, 3> kLink{"nvlink", "pcie", "network"};
constexpr std::array<std::string_view, 5> kPrecision{"fp32", "fp16_mixed", "bf16_mixed", "fp8_mixed", "fp4_mixed"};
constexpr std::array<std::string_view, 3> kRecompute{"none", "selective", "full"};
constexpr std::array<std::string_view, 8> kStrategy{
    "ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard", "fsdp_no_shard"};
constexpr std::array<std::string_view, 5> kCollective{"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                                      "all_to_all"};

}  // namespace

std::string_view name(Dtype v) { return kDtype[static_cast<int>(v)]; }
std::string_view name(GpuArch v) { return kArch[static_cast<int>(v)]; }
std::string_view name(LinkClass v) { return kLink[static_cast<int>(v)]; }
std::string_view name(Precision v) { return kPrecision[static_cast<int>(v)]; }
std::string_view name(Recompute v) { return kRecompute[static_cast<int>(v)]; }
std::string_view name(Strategy v) { return kStrategy[static_cast<int>(v)]; }
std::string_view name(Collective v) { return kCollective[static_cast<int>(v)]; }

std::vector<std::string> dtype_names() { return all(kDtype); }
std::vector<std::string> gpu_arch_names() { return all(kArch); }
std::vector<std::string> link_class_names() { return all(kLink); }
std::vector<std::string> precision_names() { return all(kPrecision); }
std::vector<std::string> recompute_names() { return all(kRecompute); }
std::vector<std::string> strategy_names() { return all(kStrategy); }
std::vector<std::string> collective_names() { return all(kCollective); }

Dtype parse_dtype(std::string_view s) { return parse_enum<Dtype>(s, kDtype, "dtype"); }
GpuArch parse_gpu_arch(std::string_view s) { return parse_enum<GpuArch>(s, kArch, "GPU generation"); }
LinkClass parse_link_class(std::string_view s) { return parse_enum<LinkClass>(s, kLink, "link class"); }
Precision parse_precision(std::string_view s) { return parse_enum<Precision>(s, kPrecision, "precision"); }
Recompute parse_recompute(std::string_view s) { return parse_enum<Recompute>(s, kRecompute, "recompute mode"); }
Strategy parse_strategy(std::string_view s) { return parse_enum<Strategy>(s, kStrategy, "strategy"); }

namespace {

/// A set of flags named by `names`, member i of T named names[i].
template <typename T, std::size_t N>
struct NamedFlags {
  std::array<std::string_view, N> names;
  std::array<bool T::*, N> members;
  const char* what;

  /// Sets the flag `text`; throws std::invalid_argument naming the choices.
  void add(T& flags, std::string_view text) const {
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == text) {
        flags.*members[i] = true;
        return;
      }
    parse_enum<int>(text, names, what);  // not found: throws, naming the choices
    throw std::logic_error("NamedFlags::add: unreachable");
  }

  /// The flags set, comma-separated in name order; "none" when none is.
  std::string text(const T& flags) const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i)
      if (flags.*members[i]) out += (out.empty() ? "" : ", ") + std::string(names[i]);
    return out.empty() ? "none" : out;
  }
};

constexpr NamedFlags<RecomputeModules, 6> kRecomputeModules{
    {"core_attn", "mla_up_proj", "layernorm", "mlp", "moe_act", "op_sac"},
    {&RecomputeModules::core_attn, &RecomputeModules::mla_up_proj, &RecomputeModules::layernorm, &RecomputeModules::mlp,
     &RecomputeModules::moe_act, &RecomputeModules::op_sac},
    "recompute module"};

constexpr NamedFlags<CudaGraphs, 6> kCudaGraphs{
    {"full_iteration", "attn", "mlp", "moe_router", "moe_preprocess", "moe"},
    {&CudaGraphs::full_iteration, &CudaGraphs::attn, &CudaGraphs::mlp, &CudaGraphs::moe_router,
     &CudaGraphs::moe_preprocess, &CudaGraphs::moe},
    "CUDA graph capture"};

}  // namespace

std::vector<std::string> recompute_module_names() { return all(kRecomputeModules.names); }
void add_recompute_module(RecomputeModules& m, std::string_view text) { kRecomputeModules.add(m, text); }
std::string recompute_modules_text(const RecomputeModules& m) { return kRecomputeModules.text(m); }

std::vector<std::string> cuda_graph_names() { return all(kCudaGraphs.names); }
void add_cuda_graph(CudaGraphs& g, std::string_view text) { kCudaGraphs.add(g, text); }
std::string cuda_graphs_text(const CudaGraphs& g) { return kCudaGraphs.text(g); }

std::string recompute_text(Recompute r, const RecomputeModules& m) {
  if (r != Recompute::selective || m == RecomputeModules{}) return std::string(name(r));
  return "selective (" + recompute_modules_text(m) + ")";
}

std::optional<Strategy> strategy_alias(std::string_view text) {
  std::string key;
  for (char c : text)
    if (c != '-' && c != '_' && c != ' ') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "fsdp" || key == "fsdp2") return Strategy::fsdp_full_shard;
  if (key == "hsdp") return Strategy::fsdp_hybrid_shard;
  if (key == "zero1") return Strategy::zero1;
  if (key == "zero2") return Strategy::zero2;
  if (key == "zero3") return Strategy::zero3;
  return std::nullopt;
}
Collective parse_collective(std::string_view s) { return parse_enum<Collective>(s, kCollective, "collective"); }

Dtype gemm_dtype(Precision p) {
  switch (p) {
    case Precision::fp32:
      return Dtype::fp32;
    case Precision::fp16_mixed:
      return Dtype::fp16;
    case Precision::bf16_mixed:
      return Dtype::bf16;
    case Precision::fp8_mixed:
      return Dtype::fp8;
    case Precision::fp4_mixed:
      return Dtype::fp4;
  }
  return Dtype::fp32;
}

int working_bytes(Precision p) { return p == Precision::fp32 ? 4 : 2; }

double operand_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp4:
      return 0.5 + 1.0 / 16.0;
    case Dtype::fp8:
      return 1.0;
    case Dtype::fp16:
    case Dtype::bf16:
      return 2.0;
    case Dtype::fp32:
    case Dtype::tf32:
      return 4.0;
  }
  return 4.0;
}

double gemm_operand_bytes(Precision p) { return operand_bytes(gemm_dtype(p)); }

bool is_fsdp(Strategy s) {
  return s == Strategy::fsdp_full_shard || s == Strategy::fsdp_shard_grad_op || s == Strategy::fsdp_hybrid_shard ||
         s == Strategy::fsdp_no_shard;
}
bool shards_optimizer(Strategy s) { return s != Strategy::ddp && s != Strategy::fsdp_no_shard; }
bool shards_gradients(Strategy s) {
  return s == Strategy::zero2 || s == Strategy::zero3 || s == Strategy::fsdp_full_shard ||
         s == Strategy::fsdp_shard_grad_op || s == Strategy::fsdp_hybrid_shard;
}
bool shards_parameters(Strategy s) {
  return s == Strategy::zero3 || s == Strategy::fsdp_full_shard || s == Strategy::fsdp_hybrid_shard;
}

}  // namespace stepcast
