// Command line of stepcast-calibrate: a subcommand and its options, parsed by hand (the
// calibration build depends on nothing but CUDA, cuBLAS, NCCL and the standard library).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"

namespace stepcast::cal {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;
inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

struct Options {
  std::string command;  // all, machine, gemm, memory, launch, nccl
  std::string out = "raw.json";
  int device = 0;  // the GPU of the gemm and memory sections (single-process mode)
  bool quick = false;
  TimingConfig timing;

  // GEMM sweep. Hidden sizes: 768 GPT-2 small / BERT-base, 2048 GPT-3 XL, 4096 GPT-3 6.7B and
  // LLaMA-7B, 5120 GPT-3 13B and LLaMA-13B, 8192 LLaMA-65B and Llama-2-70B (Brown et al. 2020,
  // Table 2.1; Touvron et al. 2023, Table 2). Tokens per micro-batch 2048..16384: micro-batches
  // of 1..8 sequences of 2048 tokens. Both lists are the issue's.
  std::vector<std::string> gemm_dtypes{"fp32", "tf32", "bf16", "fp16", "fp8"};
  std::vector<std::int64_t> gemm_hidden{768, 2048, 4096, 5120, 8192};
  std::vector<std::int64_t> gemm_tokens{2048, 4096, 8192, 16384};
  // "wave" and "square": the tile/wave sweep and the ceiling squares (wave_shapes.hpp).
  std::vector<std::string> gemm_shapes{"qkv", "attn_out", "mlp_up", "mlp_down", "lm_head", "wave", "square"};
  // GPT-2's 50257-token vocabulary padded to a multiple of 64 (nanoGPT, model.py: "GPT-2
  // vocab_size of 50257, padded up to nearest multiple of 64 for efficiency").
  std::int64_t gemm_vocab = 50304;
  // Llama-2-70B's MLP width for hidden 8192 (its config.json: intermediate_size 28672, 3.5h);
  // 0 leaves these two extra shapes out.
  std::int64_t gemm_llama_ffn = 28672;
  std::int64_t gemm_llama_hidden = 8192;
  // Output elements compared against the reference per GEMM (our choice: enough to catch a
  // wrong layout, type or scale with certainty, cheap next to the timed calls).
  int gemm_samples = 64;
  // cuBLASLt workspace: 32 MiB, the size the cuBLAS documentation recommends for Hopper
  // (cublasSetWorkspace section; 4 MiB for earlier GPUs), which PyTorch also uses there.
  std::int64_t gemm_workspace_bytes = 32 * kMiB;

  // Memory bandwidth: copies of at least 1 GiB (the issue's), and 4 GiB to see that the rate
  // no longer depends on the size.
  std::vector<std::int64_t> memory_bytes{1 * kGiB, 4 * kGiB};

  // NCCL sweep from 8 B to 1 GiB by factors of 2: nccl-tests' usual `-b 8 -e 1G -f 2` range
  // (its README's examples use -b 8 -e 128M -f 2; 1 GiB reaches the bandwidth plateau).
  std::vector<std::string> nccl_collectives{"all_reduce", "all_gather", "reduce_scatter", "broadcast"};
  std::vector<std::string> nccl_dtypes{"float", "bfloat16"};
  std::int64_t nccl_min_bytes = 8;
  std::int64_t nccl_max_bytes = 1 * kGiB;
  int nccl_gpus = 0;  // single-process mode: use the first N visible GPUs; 0 = all

  bool wants(const std::string& section) const { return command == "all" || command == section; }
};

std::string usage();

// Throws UsageError with a one-line reason on bad input; returns command "help" for --help.
Options parse_options(int argc, char** argv);

}  // namespace stepcast::cal
