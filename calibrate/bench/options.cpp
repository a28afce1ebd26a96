#include "options.hpp"

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace stepcast::cal {

namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? text.size() : comma;
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

// An integer with an optional binary suffix K, M, G or T (powers of 1024, as nccl-tests' -b and
// -e accept them).
std::int64_t parse_size(const std::string& text, const std::string& option) {
  if (text.empty()) throw UsageError(option + ": empty value");
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || value < 0) throw UsageError(option + ": not a size: " + text);
  std::int64_t scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    scale = std::int64_t{1} << 10;
  else if (suffix == "M" || suffix == "m")
    scale = std::int64_t{1} << 20;
  else if (suffix == "G" || suffix == "g")
    scale = std::int64_t{1} << 30;
  else if (suffix == "T" || suffix == "t")
    scale = std::int64_t{1} << 40;
  else if (!suffix.empty())
    throw UsageError(option + ": unknown suffix in " + text);
  return static_cast<std::int64_t>(value) * scale;
}

std::vector<std::int64_t> parse_sizes(const std::string& text, const std::string& option) {
  std::vector<std::int64_t> out;
  for (const auto& part : split(text)) out.push_back(parse_size(part, option));
  if (out.empty()) throw UsageError(option + ": empty list");
  return out;
}

std::vector<std::string> parse_names(const std::string& text, const std::string& option,
                                     const std::vector<std::string>& allowed) {
  std::vector<std::string> out = split(text);
  if (out.empty()) throw UsageError(option + ": empty list");
  for (const auto& name : out) {
    bool known = false;
    for (const auto& a : allowed) known = known || a == name;
    if (!known) {
      std::string list;
      for (const auto& a : allowed) {
        if (!list.empty()) list += ',';
        list += a;
      }
      throw UsageError(option + ": unknown value '" + name + "' (one of " + list + ")");
    }
  }
  return out;
}

int parse_int(const std::string& text, const std::string& option, int minimum) {
  const std::int64_t v = parse_size(text, option);
  if (v < minimum || v > 1000000000) throw UsageError(option + ": out of range: " + text);
  return static_cast<int>(v);
}

void apply_quick(Options& o) {
  // A smoke run of a minute or two: does every part work on this machine? Not for fitting.
  o.quick = true;
  o.timing.min_measurement_s = 0.010;
  o.timing.repeats = 3;
  o.gemm_hidden = {768, 4096};
  o.gemm_tokens = {2048};
  o.gemm_llama_ffn = 0;
  o.memory_bytes = {256 * kMiB};
  o.nccl_max_bytes = 16 * kMiB;
}

}  // namespace

std::string usage() {
  return R"(usage: stepcast-calibrate COMMAND [options]
       stepcast-calibrate-mpi COMMAND [options]     (one rank per GPU, under mpirun or srun)

Measures what stepcast's hardware model needs and writes one raw JSON file
(format stepcast-calibrate-raw-v1) for `stepcast fit`.

commands:
  all       machine description, GEMM sweep, memory bandwidth, launch cost and NCCL collectives
  machine   machine description only (needs no GPU)
  gemm      machine description and the cuBLASLt GEMM sweep
  memory    machine description and the copy bandwidths
  launch    machine description and the kernel launch cost (plain and from a CUDA graph)
  nccl      machine description and the NCCL collectives
  help      this text

options:
  --out FILE                 raw JSON to write (default raw.json); rewritten after each section
  --device N                 GPU of the gemm and memory sections (default 0; under MPI: rank 0's)
  --quick                    smoke run: 2 hidden sizes, 1 token count, 256 MiB copies, NCCL up
                             to 16 MiB, 10 ms measurements x3; for checking, not for fitting
  --min-time-ms MS           minimum duration of one timed measurement (default 50)
  --repeats R                timed measurements per row (default 5)
  --warmup N                 untimed calls before timing (default 5)
  --gemm-dtypes LIST         fp32,tf32,bf16,fp16,fp8 (default all; fp8 needs compute capability >= 8.9)
  --gemm-hidden LIST         hidden sizes (default 768,2048,4096,5120,8192)
  --gemm-tokens LIST         tokens per micro-batch (default 2048,4096,8192,16384)
  --gemm-shapes LIST         qkv,attn_out,mlp_up,mlp_down,lm_head,wave,square (default all;
                             wave: m around 1-3 full waves of SMs, square: the ceiling)
  --gemm-vocab V             LM-head width (default 50304)
  --gemm-llama-ffn F         extra MLP width for hidden 8192 (default 28672; 0: none)
  --gemm-samples S           output elements checked per GEMM (default 64)
  --gemm-workspace-mib W     cuBLASLt workspace (default 32)
  --memory-bytes LIST        copy sizes, suffixes K/M/G allowed (default 1G,4G)
  --nccl-collectives LIST    all_reduce,all_gather,reduce_scatter,broadcast (default all)
  --nccl-dtypes LIST         float,bfloat16 (default both)
  --nccl-min-bytes B         smallest size (default 8)
  --nccl-max-bytes B         largest size (default 1G); sizes double from min to max
  --nccl-gpus N              single-process mode: the first N visible GPUs (default all)

NCCL_ALGO and NCCL_PROTO are NCCL's own environment variables: set them to pin the algorithm
or protocol; the rows record what was set. Progress goes to stderr.
exit status: 0 all rows measured and checked ok, 1 an error ended a section, 2 bad usage,
3 some rows failed their correctness check.
)";
}

Options parse_options(int argc, char** argv) {
  Options o;
  if (argc < 2) throw UsageError("missing COMMAND");
  o.command = argv[1];
  if (o.command == "help" || o.command == "--help" || o.command == "-h") {
    o.command = "help";
    return o;
  }
  if (o.command != "all" && o.command != "machine" && o.command != "gemm" && o.command != "memory" &&
      o.command != "launch" && o.command != "nccl") {
    throw UsageError("unknown command '" + o.command + "'");
  }
  // --quick sets defaults that any explicit option overrides, wherever it stands.
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--quick") apply_quick(o);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--quick") continue;
    if (option == "--help" || option == "-h") {
      o.command = "help";
      return o;
    }
    if (i + 1 >= argc) throw UsageError(option + ": missing value (or unknown option)");
    const std::string value = argv[++i];
    if (option == "--out")
      o.out = value;
    else if (option == "--device")
      o.device = parse_int(value, option, 0);
    else if (option == "--min-time-ms")
      o.timing.min_measurement_s = parse_int(value, option, 1) * 1e-3;
    else if (option == "--repeats")
      o.timing.repeats = parse_int(value, option, 1);
    else if (option == "--warmup")
      o.timing.warmup_calls = parse_int(value, option, 0);
    else if (option == "--gemm-dtypes")
      o.gemm_dtypes = parse_names(value, option, {"fp32", "tf32", "bf16", "fp16", "fp8"});
    else if (option == "--gemm-hidden")
      o.gemm_hidden = parse_sizes(value, option);
    else if (option == "--gemm-tokens")
      o.gemm_tokens = parse_sizes(value, option);
    else if (option == "--gemm-shapes")
      o.gemm_shapes =
          parse_names(value, option, {"qkv", "attn_out", "mlp_up", "mlp_down", "lm_head", "wave", "square"});
    else if (option == "--gemm-vocab")
      o.gemm_vocab = parse_size(value, option);
    else if (option == "--gemm-llama-ffn")
      o.gemm_llama_ffn = parse_size(value, option);
    else if (option == "--gemm-samples")
      o.gemm_samples = parse_int(value, option, 1);
    else if (option == "--gemm-workspace-mib")
      o.gemm_workspace_bytes = parse_int(value, option, 0) * kMiB;
    else if (option == "--memory-bytes")
      o.memory_bytes = parse_sizes(value, option);
    else if (option == "--nccl-collectives")
      o.nccl_collectives = parse_names(value, option, {"all_reduce", "all_gather", "reduce_scatter", "broadcast"});
    else if (option == "--nccl-dtypes")
      o.nccl_dtypes = parse_names(value, option, {"float", "bfloat16"});
    else if (option == "--nccl-min-bytes")
      o.nccl_min_bytes = parse_size(value, option);
    else if (option == "--nccl-max-bytes")
      o.nccl_max_bytes = parse_size(value, option);
    else if (option == "--nccl-gpus")
      o.nccl_gpus = parse_int(value, option, 0);
    else
      throw UsageError("unknown option " + option);
  }
  for (const auto h : o.gemm_hidden) {
    if (h <= 0) throw UsageError("--gemm-hidden: sizes must be positive");
  }
  for (const auto t : o.gemm_tokens) {
    if (t <= 0) throw UsageError("--gemm-tokens: sizes must be positive");
  }
  for (const auto b : o.memory_bytes) {
    if (b <= 0) throw UsageError("--memory-bytes: sizes must be positive");
  }
  if (o.gemm_vocab <= 0) throw UsageError("--gemm-vocab: must be positive");
  if (o.nccl_min_bytes < 1 || o.nccl_max_bytes < o.nccl_min_bytes) {
    throw UsageError("--nccl-min-bytes/--nccl-max-bytes: need 1 <= min <= max");
  }
  return o;
}

}  // namespace stepcast::cal
