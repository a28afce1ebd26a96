// Kernel launch cost: the CPU time to enqueue one empty kernel through the CUDA runtime
// (what the kernel model calls launch_s), and the GPU time per kernel when the same kernels
// are replayed from a CUDA graph. The kernel counts its runs, so a row is "ok" only when
// every launch ran.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "common.hpp"
#include "sections.hpp"
#include "timing.hpp"

namespace stepcast::cal {

namespace {

__global__ void count_kernel(unsigned long long* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1ULL);
}

// Launches per timed loop: far below the driver's queue depth (about a thousand pending
// launches), so the CPU never waits for the GPU inside the loop.
constexpr std::int64_t kLaunchesPerLoop = 256;
// Kernels per graph: enough that the graph launch itself is a small share.
constexpr std::int64_t kKernelsPerGraph = 1000;

unsigned long long read_counter(const DeviceBuffer& counter) {
  unsigned long long value = 0;
  STEPCAST_CUDA(cudaMemcpy(&value, counter.get(), sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

LaunchRow row_of(const char* kind, std::int64_t ops, const Timing& t, bool counted_ok) {
  LaunchRow row;
  row.kind = kind;
  row.ops = ops;
  row.iterations = t.iterations;
  row.time_s_median = t.median_s;
  row.time_s_per_op = t.median_s / static_cast<double>(ops);
  row.check = counted_ok ? "ok" : "failed";
  std::fprintf(stderr, "[launch] %-12s %.3f us per kernel (%lld kernels per loop, %lld loops per measurement)\n",
               kind, row.time_s_per_op * 1e6, static_cast<long long>(ops), static_cast<long long>(t.iterations));
  return row;
}

}  // namespace

void run_launch(const Options& options, int device, Raw& raw, const std::function<void()>& save) {
  DeviceGuard guard(device);
  Stream stream(device);
  EventPair events(device);
  DeviceBuffer counter(device, sizeof(unsigned long long));
  STEPCAST_CUDA(cudaMemset(counter.get(), 0, sizeof(unsigned long long)));
  auto* count = static_cast<unsigned long long*>(counter.get());
  unsigned long long launched = 0;

  // CPU cost: host time of enqueuing kLaunchesPerLoop launches; the GPU drains them after.
  const auto loop = [&] {
    for (std::int64_t i = 0; i < kLaunchesPerLoop; ++i) count_kernel<<<1, 32, 0, stream.get()>>>(count);
    launched += kLaunchesPerLoop;
  };
  for (int i = 0; i < options.timing.warmup_calls; ++i) loop();
  STEPCAST_CUDA(cudaStreamSynchronize(stream.get()));
  const Timing host = measure(
      [&](std::int64_t n) {
        double enqueue_s = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const auto start = std::chrono::steady_clock::now();
          loop();
          enqueue_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          STEPCAST_CUDA(cudaStreamSynchronize(stream.get()));
        }
        STEPCAST_CUDA(cudaGetLastError());
        return enqueue_s;
      },
      options.timing);
  raw.launch.push_back(row_of("launch", kLaunchesPerLoop, host, read_counter(counter) == launched));
  save();

  // CUDA graph: kKernelsPerGraph kernels captured once, replayed; GPU time per kernel.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  STEPCAST_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  for (std::int64_t i = 0; i < kKernelsPerGraph; ++i) count_kernel<<<1, 32, 0, stream.get()>>>(count);
  STEPCAST_CUDA(cudaStreamEndCapture(stream.get(), &graph));
  STEPCAST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  try {
    const auto replay = [&] {
      STEPCAST_CUDA(cudaGraphLaunch(exec, stream.get()));
      launched += kKernelsPerGraph;
    };
    for (int i = 0; i < options.timing.warmup_calls; ++i) replay();
    STEPCAST_CUDA(cudaStreamSynchronize(stream.get()));
    const Timing graphed = measure(
        [&](std::int64_t n) {
          events.start(stream.get());
          for (std::int64_t i = 0; i < n; ++i) replay();
          events.stop(stream.get());
          return events.elapsed_s();
        },
        options.timing);
    raw.launch.push_back(row_of("graph_launch", kKernelsPerGraph, graphed, read_counter(counter) == launched));
  } catch (...) {
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  save();
}

}  // namespace stepcast::cal
