// stepcast-calibrate: microbenchmarks of one machine (or, as stepcast-calibrate-mpi, a
// cluster) for stepcast's hardware model. Writes one raw JSON file; `stepcast fit` turns it
// into a hardware description. See docs/calibration.md.
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <string>

#include "options.hpp"
#include "process_group.hpp"
#include "raw.hpp"
#include "sections.hpp"

namespace stepcast::cal {

namespace {

// What every number in the file means, carried in the file itself.
void add_conventions(Raw& raw, const Options& o, int argc, char** argv, const ProcessGroup& group) {
  auto& notes = raw.machine.notes;
  std::string command;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) command += ' ';
    command += argv[i];
  }
  notes.push_back("command: " + command);
  if (group.distributed()) {
    std::string hosts;
    const auto names = group.hostnames();
    for (std::size_t r = 0; r < names.size(); ++r) {
      if (r > 0) hosts += ", ";
      hosts += std::to_string(r);
      hosts += '=';
      hosts += names[r];
    }
    notes.push_back("mpi: " + std::to_string(group.size()) + " ranks, one GPU each; rank=host: " + hosts +
                    "; machine.gpus, gemm and memory describe rank 0's host and GPU");
  }
  if (o.quick) notes.push_back("quick: --quick smoke run, short measurements and a reduced sweep; not for fitting");
  char timing[512];
  std::snprintf(timing, sizeof timing,
                "timing: %d untimed warm-up calls, then back-to-back calls between two CUDA events, as many as make "
                "one measurement last >= %.0f ms (iterations = calls per measurement), %d measurements; time_s_* are "
                "seconds per call, median/min/max over the measurements",
                o.timing.warmup_calls, o.timing.min_measurement_s * 1e3, o.timing.repeats);
  notes.push_back(timing);
  notes.push_back(
      "gemm: Y[m x n] = X[m x k] W[n x k]^T as PyTorch's nn.Linear forward (m = tokens), cuBLASLt column-major TN "
      "call, alpha 1, beta 0, inputs uniform in [-1, 1), the first of up to 8 heuristic algorithms that runs, "
      "workspace " +
      std::to_string(o.gemm_workspace_bytes >> 20) +
      " MiB; fp32: CUBLAS_COMPUTE_32F; tf32: fp32 data with CUBLAS_COMPUTE_32F_FAST_TF32; bf16, fp16: 16-bit inputs "
      "and output, fp32 accumulation; fp8: e4m3 inputs with A/B scale pointers (0.5, 0.25), bf16 output, fp32 "
      "compute type; tflops = 2 m n k / time_s_median / 1e12");
  notes.push_back(
      "gemm check: " + std::to_string(o.gemm_samples) +
      " sampled outputs (the 4 corners, the rest at random) against a double-precision dot product of the stored "
      "inputs on the GPU; "
      "ok if |got - ref| <= tol * sqrt(sum_p (w_p x_p)^2) + 2 u_out |ref|, tol fp32 1e-4, tf32 1e-2, bf16 1e-2, fp16 "
      "1e-2, fp8 5e-2, u_out the output type's unit roundoff");
  notes.push_back(
      "gemm names wave and square (calibrate/bench/wave_shapes.hpp): wave n = 1024, k = 4096, m stepping by 128 from "
      "3 tile rows below to 3 above 1, 2 and 3 full waves of the SM count (128 x 128 tiles); square m = n = k from "
      "4096 to 16384");
  notes.push_back(
      "launch: kind launch = host time to enqueue 256 empty kernels (<<<1, 32>>>) on one stream, the stream drained "
      "between loops; graph_launch = CUDA-event time of replaying a captured graph of 1000 such kernels; "
      "time_s_per_op = time_s_median / ops; check ok when a device counter saw every kernel run");
  notes.push_back(
      "memory: bytes = bytes moved per call (device_to_device: read + write = 2 x copy size; host_to_device and "
      "device_to_host: copy size, pinned host memory from cudaMallocHost); GBps = bytes / time_s_median / 1e9; "
      "cudaMemcpyAsync on one stream of the gemm GPU");
  notes.push_back(
      "nccl: out-of-place, sum for reductions, root 0 for broadcast; bytes = S of nccl-tests doc/PERFORMANCE.md "
      "(all_gather: the gathered output, reduce_scatter: the input of one rank, others: the buffer); algbw_GBps = "
      "bytes / time_s_median / 1e9; busbw_GBps = algbw_GBps x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, "
      "reduce_scatter), 1 (broadcast); a call's time is the longest of any rank's CUDA-event time; check compares "
      "every output element with its expected value");
}

int run(int argc, char** argv, ProcessGroup& group) {
  const bool root = group.rank() == 0;
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const UsageError& e) {
    if (root) std::fprintf(stderr, "stepcast-calibrate: %s\n\n%s", e.what(), usage().c_str());
    return 2;
  }
  if (options.command == "help") {
    if (root) std::fputs(usage().c_str(), stdout);
    return 0;
  }

  Raw raw;
  if (root) {
    raw.machine = describe_machine();
    add_conventions(raw, options, argc, argv, group);
  }
  int status = 0;
  const auto save = [&] {
    if (!root) return;
    try {
      write_file(options.out, render(raw));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "stepcast-calibrate: %s\n", e.what());
      status = 1;
    }
  };
  save();
  if (status != 0) return status;

  // The GPU of the single-GPU sections: --device, or rank 0's own GPU under MPI.
  int gemm_device = options.device;
  if (group.distributed()) {
    int visible = 0;
    gemm_device = cudaGetDeviceCount(&visible) == cudaSuccess && visible > 0 ? group.local_rank() % visible : 0;
  }
  const auto single_gpu_section = [&](const char* name, auto&& body) {
    if (!options.wants(name)) return;
    if (root) {
      try {
        body();
      } catch (const std::exception& e) {
        raw.machine.notes.push_back(std::string(name) + ": stopped: " + e.what());
        std::fprintf(stderr, "[%s] stopped: %s\n", name, e.what());
        status = 1;
      }
      save();
    }
    group.barrier();
  };
  single_gpu_section("gemm", [&] { run_gemm(options, gemm_device, raw, save); });
  single_gpu_section("memory", [&] { run_memory(options, gemm_device, raw, save); });
  single_gpu_section("launch", [&] { run_launch(options, gemm_device, raw, save); });
  if (options.wants("nccl")) {
    try {
      run_nccl(options, group, raw, save);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[nccl] rank %d stopped: %s\n", group.rank(), e.what());
      if (root) raw.machine.notes.push_back(std::string("nccl: stopped: ") + e.what());
      save();
      // The other ranks may be waiting inside a collective for this one: end them all.
      if (group.distributed()) group.abort(1);
      status = 1;
    }
    save();
  }

  if (root) {
    int failed = 0;
    for (const auto& r : raw.gemm) failed += r.check == "failed" ? 1 : 0;
    for (const auto& r : raw.nccl) failed += r.check == "failed" ? 1 : 0;
    for (const auto& r : raw.launch) failed += r.check == "failed" ? 1 : 0;
    std::fprintf(
        stderr,
        "stepcast-calibrate: wrote %s: %zu gemm, %zu memory, %zu nccl, %zu launch rows; %d failed their check\n",
        options.out.c_str(), raw.gemm.size(), raw.memory.size(), raw.nccl.size(), raw.launch.size(), failed);
    if (status == 0 && failed > 0) status = 3;
  }
  return status;
}

}  // namespace

}  // namespace stepcast::cal

int main(int argc, char** argv) {
  using namespace stepcast::cal;
  std::unique_ptr<ProcessGroup> group;
  try {
    group = make_process_group(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stepcast-calibrate: %s\n", e.what());
    return 1;
  }
  try {
    return run(argc, argv, *group);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stepcast-calibrate: rank %d: %s\n", group->rank(), e.what());
    if (group->distributed()) group->abort(1);
    return 1;
  }
}
