// Copy bandwidths of one GPU: device to device through cudaMemcpyAsync (HBM read + write), and
// pinned host memory to and from the device (the PCIe or C2C link).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common.hpp"
#include "sections.hpp"
#include "timing.hpp"

namespace stepcast::cal {

namespace {

MemoryRow measure_copy(const char* kind, void* destination, const void* source, std::size_t size,
                       cudaMemcpyKind direction, std::int64_t counted_bytes, Stream& stream, EventPair& events,
                       const TimingConfig& timing) {
  const auto copy = [&] { STEPCAST_CUDA(cudaMemcpyAsync(destination, source, size, direction, stream.get())); };
  for (int i = 0; i < timing.warmup_calls; ++i) copy();
  STEPCAST_CUDA(cudaStreamSynchronize(stream.get()));
  const Timing t = measure(
      [&](std::int64_t n) {
        events.start(stream.get());
        for (std::int64_t i = 0; i < n; ++i) copy();
        events.stop(stream.get());
        return events.elapsed_s();
      },
      timing);
  MemoryRow row;
  row.kind = kind;
  row.bytes = counted_bytes;
  row.iterations = t.iterations;
  row.time_s_median = t.median_s;
  row.GBps = static_cast<double>(counted_bytes) / t.median_s / 1e9;  // GB = 1e9 B, as nccl-tests
  std::fprintf(stderr, "[memory] %-16s copy %s: %.4g ms/call median (%lld calls x %d), %.1f GB/s counted\n", kind,
               format_bytes(static_cast<double>(size)).c_str(), t.median_s * 1e3, static_cast<long long>(t.iterations),
               timing.repeats, row.GBps);
  return row;
}

}  // namespace

void run_memory(const Options& options, int device, Raw& raw, const std::function<void()>& save) {
  DeviceGuard guard(device);
  Stream stream(device);
  EventPair events(device);
  for (const std::int64_t size_signed : options.memory_bytes) {
    const auto size = static_cast<std::size_t>(size_signed);
    try {
      DeviceBuffer source(device, size);
      DeviceBuffer destination(device, size);
      STEPCAST_CUDA(cudaMemset(source.get(), 0x5A, size));
      STEPCAST_CUDA(cudaMemset(destination.get(), 0, size));
      // A device-to-device copy reads and writes every byte: 2x the copy size crosses HBM.
      raw.memory.push_back(measure_copy("device_to_device", destination.get(), source.get(), size,
                                        cudaMemcpyDeviceToDevice, 2 * size_signed, stream, events, options.timing));
      save();
    } catch (const std::exception& e) {
      raw.machine.notes.push_back("memory: device_to_device " + format_bytes(static_cast<double>(size)) +
                                  " not measured: " + e.what());
      std::fprintf(stderr, "[memory] device_to_device %s: %s\n", format_bytes(static_cast<double>(size)).c_str(),
                   e.what());
    }
    try {
      PinnedBuffer host(size);
      DeviceBuffer on_device(device, size);
      std::memset(host.get(), 0x5A, size);  // touch every page before timing
      STEPCAST_CUDA(cudaMemset(on_device.get(), 0, size));
      raw.memory.push_back(measure_copy("host_to_device", on_device.get(), host.get(), size, cudaMemcpyHostToDevice,
                                        size_signed, stream, events, options.timing));
      raw.memory.push_back(measure_copy("device_to_host", host.get(), on_device.get(), size, cudaMemcpyDeviceToHost,
                                        size_signed, stream, events, options.timing));
      save();
    } catch (const std::exception& e) {
      raw.machine.notes.push_back("memory: host copies of " + format_bytes(static_cast<double>(size)) +
                                  " not measured: " + e.what());
      std::fprintf(stderr, "[memory] host copies %s: %s\n", format_bytes(static_cast<double>(size)).c_str(), e.what());
    }
  }
}

}  // namespace stepcast::cal
