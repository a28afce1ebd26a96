#include "common.hpp"

#include <cstdio>

namespace stepcast::cal {

void fail(const std::string& what, const char* file, int line) {
  throw Error(what + " [" + file + ":" + std::to_string(line) + "]");
}

DeviceGuard::DeviceGuard(int device) {
  if (cudaGetDevice(&previous_) == cudaSuccess) restore_ = true;
  STEPCAST_CUDA(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  if (restore_) (void)cudaSetDevice(previous_);
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : bytes_(bytes), device_(device) {
  DeviceGuard guard(device);
  STEPCAST_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == nullptr) return;
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(device_);
  (void)cudaFree(ptr_);
  if (restore) (void)cudaSetDevice(previous);
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) { STEPCAST_CUDA(cudaMallocHost(&ptr_, bytes)); }

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) (void)cudaFreeHost(ptr_);
}

Stream::Stream(int device) : device_(device) {
  DeviceGuard guard(device);
  STEPCAST_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_ == nullptr) return;
  DeviceGuard guard(device_);
  (void)cudaStreamDestroy(stream_);
}

EventPair::EventPair(int device) : device_(device) {
  DeviceGuard guard(device);
  STEPCAST_CUDA(cudaEventCreate(&start_));
  STEPCAST_CUDA(cudaEventCreate(&stop_));
}

EventPair::~EventPair() {
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  (void)cudaSetDevice(device_);
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  if (restore) (void)cudaSetDevice(previous);
}

void EventPair::start(cudaStream_t stream) { STEPCAST_CUDA(cudaEventRecord(start_, stream)); }

void EventPair::stop(cudaStream_t stream) { STEPCAST_CUDA(cudaEventRecord(stop_, stream)); }

double EventPair::elapsed_s() {
  STEPCAST_CUDA(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  STEPCAST_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;  // cudaEventElapsedTime reports milliseconds
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.4g %s", bytes, units[unit]);
  return text;
}

}  // namespace stepcast::cal
