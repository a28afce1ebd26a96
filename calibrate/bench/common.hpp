// Shared helpers of the calibration microbenchmarks: error checks that throw, RAII owners of
// device memory, pinned host memory, streams and events, and the run-wide settings.
// Depends on the CUDA runtime and the C++ standard library only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace stepcast::cal {

// Everything that can go wrong while measuring is reported as this exception; the caller
// decides whether it ends a row, a section or the program.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what, const char* file, int line);

inline void check_cuda(cudaError_t status, const char* expr, const char* file, int line) {
  if (status != cudaSuccess) {
    // Clear a non-sticky error (an allocation failure) so the next row starts clean.
    (void)cudaGetLastError();
    fail(std::string(expr) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")", file, line);
  }
}

#define STEPCAST_CUDA(expr) ::stepcast::cal::check_cuda((expr), #expr, __FILE__, __LINE__)

// Makes `device` current for the lifetime of the object, then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

// cudaMalloc'd memory on one device, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    std::swap(device_, other.device_);
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

// Page-locked host memory (cudaMallocHost), freed on destruction.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

// A non-blocking stream on one device.
class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

// A start/stop pair of CUDA events on one stream; elapsed() waits for the stop event.
class EventPair {
 public:
  explicit EventPair(int device);
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void start(cudaStream_t stream);
  void stop(cudaStream_t stream);
  double elapsed_s();

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  int device_ = 0;
};

// Settings shared by every timed measurement.
struct TimingConfig {
  // Each timed measurement runs back-to-back calls until it lasts at least this long, so that
  // event resolution (about 0.5 us, cudaEventElapsedTime's documentation) and launch jitter are
  // negligible; 50 ms is the requirement.
  double min_measurement_s = 0.050;
  // Timed measurements per row; median, min and max are taken over them. 5 is our choice: an
  // odd count gives a true median and keeps a full sweep within minutes.
  int repeats = 5;
  // Untimed calls before calibration; nccl-tests' default warm-up count is 5
  // (nccl-tests README, "-w,--warmup_iters ... Default : 5"), used for every kind here.
  int warmup_calls = 5;
  // Upper bound on calls per measurement so that a very fast call cannot loop forever.
  long long max_iterations = 1000000;
};

std::string format_bytes(double bytes);  // "1 GiB", "64 MiB", "8 B"

}  // namespace stepcast::cal
