// The raw calibration file, format "stepcast-calibrate-raw-v1": what the microbenchmarks
// measured, before any fitting. `stepcast fit` reads it; docs/calibration.md describes every
// field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::cal {

inline constexpr const char* kRawFormat = "stepcast-calibrate-raw-v1";

struct GpuInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  std::int64_t memory_bytes = 0;
  std::string compute_capability;  // "9.0"
};

struct Machine {
  std::string hostname;
  std::string date_utc;  // ISO 8601, "2025-01-31T12:00:00Z"
  std::vector<GpuInfo> gpus;
  std::string driver_version;        // CUDA driver API version, "12.4"
  std::string cuda_runtime_version;  // "12.4"
  std::string nccl_version;          // "2.21.5"
  std::string nvidia_smi_topo;       // text of `nvidia-smi topo -m`, or "error: ..."
  std::string nvidia_smi_list;       // text of `nvidia-smi -L`, or "error: ..."
  std::vector<std::string> nics;
  std::vector<std::string> notes;
};

struct GemmRow {
  std::string name;             // qkv, attn_out, mlp_up, mlp_down, lm_head
  std::string dtype;            // fp32, tf32, bf16, fp16, fp8
  std::int64_t m = 0;           // tokens
  std::int64_t n = 0;           // output features
  std::int64_t k = 0;           // input features (the contracted dimension)
  std::int64_t iterations = 0;  // back-to-back calls in each timed measurement
  double time_s_median = 0.0;
  double time_s_min = 0.0;
  double time_s_max = 0.0;
  double tflops = 0.0;  // 2*m*n*k / time_s_median / 1e12
  std::string check;    // "ok", "failed" or "skipped: <reason>"
};

struct MemoryRow {
  std::string kind;        // device_to_device, host_to_device, device_to_host
  std::int64_t bytes = 0;  // bytes moved per call as counted for GBps (read + write for d2d)
  std::int64_t iterations = 0;
  double time_s_median = 0.0;
  double GBps = 0.0;  // bytes / time_s_median / 1e9
};

struct NcclRow {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, broadcast
  int ranks = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  std::int64_t bytes = 0;  // S as nccl-tests defines it (doc/PERFORMANCE.md)
  std::string dtype;       // float, bfloat16
  std::int64_t iterations = 0;
  double time_s_median = 0.0;
  double time_s_min = 0.0;
  double algbw_GBps = 0.0;  // bytes / time_s_median / 1e9
  double busbw_GBps = 0.0;  // algbw_GBps * the collective's bus factor
  std::string nccl_algo;    // NCCL_ALGO as set in the environment, or "default"
  std::string nccl_proto;   // NCCL_PROTO as set in the environment, or "default"
  std::string check;        // "ok" or "failed"
};

// Launch cost (launch.cu): "launch" rows time the CPU enqueue of `ops` empty kernels,
// "graph_launch" rows the GPU replay of a CUDA graph of `ops` kernels. calibrate/bench/
// torch_bench.py adds "eager_forward_op" and "eager_backward_op" rows to the same section.
struct LaunchRow {
  std::string kind;
  std::int64_t ops = 0;         // kernels (or ops) per timed loop
  std::int64_t iterations = 0;  // loops per timed measurement
  double time_s_median = 0.0;   // one loop
  double time_s_per_op = 0.0;   // time_s_median / ops
  std::string check;            // "ok" (every kernel ran, by its counter) or "failed"
};

struct Raw {
  Machine machine;
  std::vector<GemmRow> gemm;
  std::vector<MemoryRow> memory;
  std::vector<NcclRow> nccl;
  std::vector<LaunchRow> launch;
};

std::string render(const Raw& raw);

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half
// a file; throws Error on failure.
void write_file(const std::string& path, const std::string& text);

}  // namespace stepcast::cal
