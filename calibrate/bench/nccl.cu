// NCCL collectives from 8 B to 1 GiB, timed and reported the way nccl-tests reports them
// (algbw and busbw of its doc/PERFORMANCE.md), with every output element checked.
//
// Launch model as in nccl-tests: either one process driving every visible GPU
// (ncclCommInitAll, one ncclGroupStart/End around the per-GPU calls), or one MPI rank per GPU
// (ncclGetUniqueId on rank 0, broadcast over MPI, ncclCommInitRank on every rank).
#include <cuda_bf16.h>  // before nccl.h, which declares ncclBfloat16 when the bf16 type exists
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "sections.hpp"
#include "timing.hpp"

namespace stepcast::cal {

namespace {

void check_nccl(ncclResult_t status, const char* expr, const char* file, int line) {
  if (status != ncclSuccess) {
    fail(std::string(expr) + ": " + ncclGetErrorString(status), file, line);
  }
}

#define STEPCAST_NCCL(expr) check_nccl((expr), #expr, __FILE__, __LINE__)

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast };

Collective collective_of(const std::string& name) {
  if (name == "all_reduce") return Collective::all_reduce;
  if (name == "all_gather") return Collective::all_gather;
  if (name == "reduce_scatter") return Collective::reduce_scatter;
  if (name == "broadcast") return Collective::broadcast;
  throw Error("unknown collective " + name);
}

// busbw = algbw * factor, nccl-tests doc/PERFORMANCE.md ("Summary"): all-reduce 2(n-1)/n,
// reduce-scatter and all-gather (n-1)/n, broadcast 1. The same rule as model/collective's
// bus_bandwidth_factor, restated because calibrate/bench links none of stepcast's libraries
// (it must build on a GPU machine without their dependencies).
double bus_factor(Collective c, int ranks) {
  const double n = ranks;
  switch (c) {
    case Collective::all_reduce: return 2.0 * (n - 1.0) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (n - 1.0) / n;
    case Collective::broadcast: return 1.0;
  }
  return 1.0;
}

// ---- input pattern and expected outputs --------------------------------------------------------
// Rank r holds value (r + i) % 3 at global element index i: small integers, so every sum over
// ranks is exact in float (below 2^24) and in bfloat16 while 2 * ranks <= 256 (8 significant
// bits); a misplaced block or a missing rank changes the value at most indices.

__device__ inline float pattern(long long rank, long long index) { return static_cast<float>((rank + index) % 3); }

__device__ inline float pattern_sum(long long ranks, long long index) {
  const long long full_cycles = ranks / 3;  // each run of 3 consecutive ranks adds 0 + 1 + 2
  long long total = 3 * full_cycles;
  for (long long t = 0; t < ranks % 3; ++t) total += (index + t) % 3;
  return static_cast<float>(total);
}

__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ inline float load(const float* p) { return *p; }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

template <class T>
__global__ void fill_pattern(T* data, long long count, long long rank, long long first_index) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    store(data + i, pattern(rank, first_index + i));
  }
}

template <class T>
__global__ void count_mismatches(const T* data, long long count, int kind, long long rank, long long ranks,
                                 long long per_rank, float tolerance, unsigned long long* mismatches) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    float expected = 0.0f;
    switch (static_cast<Collective>(kind)) {
      case Collective::all_reduce: expected = pattern_sum(ranks, i); break;
      case Collective::broadcast: expected = pattern(0, i); break;  // root 0's values
      case Collective::all_gather: expected = pattern(i / per_rank, i); break;
      case Collective::reduce_scatter: expected = pattern_sum(ranks, rank * per_rank + i); break;
    }
    const float got = load(data + i);
    if (!(fabsf(got - expected) <= tolerance)) atomicAdd(mismatches, 1ull);  // NaN fails
  }
}

// Grid of the element-wise kernels (our choice): 2048 blocks of 256 threads keep every SM of
// current GPUs busy (H100 SXM: 132 SMs, H100 whitepaper; at most 2048 threads per SM, CUDA C++
// Programming Guide, compute capability table), grid-stride beyond.
constexpr int kThreads = 256;
constexpr int kBlocks = 2048;

// ---- one rank on this process ------------------------------------------------------------------

struct LocalRank {
  int device = 0;
  int rank = 0;  // global NCCL rank
  ncclComm_t comm = nullptr;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<EventPair> events;
  DeviceBuffer send;
  DeviceBuffer recv;
  DeviceBuffer mismatches;
};

struct Sizes {
  std::int64_t bytes = 0;  // S of nccl-tests
  std::int64_t send_elements = 0;
  std::int64_t recv_elements = 0;
  std::int64_t per_rank = 0;  // all_gather sendcount, reduce_scatter recvcount
};

// Element counts for a target size S as nccl-tests derives them: for all-gather and
// reduce-scatter S is the whole array, n times the per-rank count (doc/PERFORMANCE.md); counts
// are rounded down to whole elements, and never below one.
Sizes sizes_for(Collective c, std::int64_t target, std::int64_t element_bytes, int ranks) {
  Sizes s;
  if (c == Collective::all_gather || c == Collective::reduce_scatter) {
    s.per_rank = std::max<std::int64_t>(1, target / (element_bytes * ranks));
    s.bytes = s.per_rank * ranks * element_bytes;
    s.send_elements = c == Collective::all_gather ? s.per_rank : s.per_rank * ranks;
    s.recv_elements = c == Collective::all_gather ? s.per_rank * ranks : s.per_rank;
  } else {
    s.per_rank = std::max<std::int64_t>(1, target / element_bytes);
    s.bytes = s.per_rank * element_bytes;
    s.send_elements = s.per_rank;
    s.recv_elements = s.per_rank;
  }
  return s;
}

std::vector<std::int64_t> targets(const Options& o) {
  std::vector<std::int64_t> out;
  for (std::int64_t s = o.nccl_min_bytes; s <= o.nccl_max_bytes; s *= 2) out.push_back(s);
  return out;
}

std::string env_or_default(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : std::string("default");
}

void enqueue(Collective c, LocalRank& l, const Sizes& s, ncclDataType_t type) {
  const cudaStream_t stream = l.stream->get();
  switch (c) {
    case Collective::all_reduce:
      STEPCAST_NCCL(ncclAllReduce(l.send.get(), l.recv.get(), static_cast<std::size_t>(s.send_elements), type, ncclSum,
                                  l.comm, stream));
      break;
    case Collective::all_gather:
      STEPCAST_NCCL(ncclAllGather(l.send.get(), l.recv.get(), static_cast<std::size_t>(s.per_rank), type, l.comm,
                                  stream));
      break;
    case Collective::reduce_scatter:
      STEPCAST_NCCL(ncclReduceScatter(l.send.get(), l.recv.get(), static_cast<std::size_t>(s.per_rank), type, ncclSum,
                                      l.comm, stream));
      break;
    case Collective::broadcast:
      STEPCAST_NCCL(ncclBroadcast(l.send.get(), l.recv.get(), static_cast<std::size_t>(s.send_elements), type, 0,
                                  l.comm, stream));
      break;
  }
}

void launch_all(Collective c, std::vector<LocalRank>& locals, const Sizes& s, ncclDataType_t type) {
  STEPCAST_NCCL(ncclGroupStart());
  for (auto& l : locals) enqueue(c, l, s, type);
  STEPCAST_NCCL(ncclGroupEnd());
}

void fill_inputs(Collective c, std::vector<LocalRank>& locals, const Sizes& s, bool bf16) {
  for (auto& l : locals) {
    DeviceGuard guard(l.device);
    const cudaStream_t stream = l.stream->get();
    const long long first = c == Collective::all_gather ? static_cast<long long>(l.rank) * s.per_rank : 0;
    if (bf16) {
      fill_pattern<<<kBlocks, kThreads, 0, stream>>>(l.send.as<__nv_bfloat16>(), s.send_elements, l.rank, first);
    } else {
      fill_pattern<<<kBlocks, kThreads, 0, stream>>>(l.send.as<float>(), s.send_elements, l.rank, first);
    }
    STEPCAST_CUDA(cudaGetLastError());
    // All-ones bytes are NaN in float and bfloat16: an element never written fails the check.
    const std::size_t recv_bytes = static_cast<std::size_t>(s.recv_elements) * (bf16 ? 2 : 4);
    STEPCAST_CUDA(cudaMemsetAsync(l.recv.get(), 0xFF, recv_bytes, stream));
    STEPCAST_CUDA(cudaStreamSynchronize(stream));
  }
}

long long local_mismatches(Collective c, std::vector<LocalRank>& locals, const Sizes& s, bool bf16, int ranks) {
  // Exact integers unless a bfloat16 sum exceeds 256, its largest run of exact integers; then
  // each of the ranks - 1 additions may round by half a unit in the last place of at most
  // 2 * ranks, i.e. 2 * ranks * 2^-8 (bfloat16 unit roundoff 2^-8).
  const bool reduces = c == Collective::all_reduce || c == Collective::reduce_scatter;
  float tolerance = 0.0f;
  if (bf16 && reduces && 2 * ranks > 256) {
    tolerance = static_cast<float>((ranks - 1) * 2.0 * ranks / 256.0);
  }
  long long total = 0;
  for (auto& l : locals) {
    DeviceGuard guard(l.device);
    const cudaStream_t stream = l.stream->get();
    auto* counter = l.mismatches.as<unsigned long long>();
    STEPCAST_CUDA(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream));
    const int kind = static_cast<int>(c);
    if (bf16) {
      count_mismatches<<<kBlocks, kThreads, 0, stream>>>(l.recv.as<__nv_bfloat16>(), s.recv_elements, kind, l.rank,
                                                         ranks, s.per_rank, tolerance, counter);
    } else {
      count_mismatches<<<kBlocks, kThreads, 0, stream>>>(l.recv.as<float>(), s.recv_elements, kind, l.rank, ranks,
                                                         s.per_rank, tolerance, counter);
    }
    STEPCAST_CUDA(cudaGetLastError());
    unsigned long long found = 0;
    STEPCAST_CUDA(cudaMemcpyAsync(&found, counter, sizeof found, cudaMemcpyDeviceToHost, stream));
    STEPCAST_CUDA(cudaStreamSynchronize(stream));
    total += static_cast<long long>(found);
  }
  return total;
}

}  // namespace

void run_nccl(const Options& options, ProcessGroup& group, Raw& raw, const std::function<void()>& save) {
  const bool root = group.rank() == 0;
  int visible = 0;
  STEPCAST_CUDA(cudaGetDeviceCount(&visible));
  if (visible == 0) throw Error("nccl: no CUDA device visible");

  // Which GPUs this process drives, and the world size.
  std::vector<int> devices;
  int ranks = 0;
  int nodes = 1;
  int gpus_per_node = 0;
  if (group.distributed()) {
    devices.push_back(group.local_rank() % visible);
    ranks = group.size();
    std::map<std::string, int> per_host;
    for (const auto& host : group.hostnames()) ++per_host[host];
    nodes = static_cast<int>(per_host.size());
    for (const auto& [host, count] : per_host) gpus_per_node = std::max(gpus_per_node, count);
    if (group.local_rank() >= visible) {
      throw Error("nccl: local rank " + std::to_string(group.local_rank()) + " has no GPU of its own (" +
                  std::to_string(visible) + " visible); start at most one rank per GPU");
    }
  } else {
    const int wanted = options.nccl_gpus > 0 ? std::min(options.nccl_gpus, visible) : visible;
    for (int d = 0; d < wanted; ++d) devices.push_back(d);
    ranks = wanted;
    gpus_per_node = wanted;
  }
  if (ranks < 2) {
    if (root) {
      raw.machine.notes.push_back("nccl: skipped, only one GPU (busbw is 0 for one rank)");
      std::fprintf(stderr, "[nccl] skipped: only one GPU\n");
    }
    return;
  }

  // Communicators.
  std::vector<LocalRank> locals(devices.size());
  if (group.distributed()) {
    ncclUniqueId id{};
    if (root) STEPCAST_NCCL(ncclGetUniqueId(&id));
    group.broadcast(&id, sizeof id);
    LocalRank& l = locals[0];
    l.device = devices[0];
    l.rank = group.rank();
    DeviceGuard guard(l.device);
    STEPCAST_NCCL(ncclCommInitRank(&l.comm, ranks, id, l.rank));
  } else {
    std::vector<ncclComm_t> comms(devices.size());
    STEPCAST_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
    for (std::size_t i = 0; i < devices.size(); ++i) {
      locals[i].device = devices[i];
      locals[i].rank = static_cast<int>(i);
      locals[i].comm = comms[i];
    }
  }
  struct Finalizer {
    std::vector<LocalRank>& locals;
    ~Finalizer() {
      for (auto& l : locals) {
        if (l.comm != nullptr) (void)ncclCommDestroy(l.comm);
      }
    }
  } finalizer{locals};

  // Buffers large enough for every size of every collective (float is the widest type).
  std::int64_t send_capacity = 1;
  std::int64_t recv_capacity = 1;
  for (const auto& name : options.nccl_collectives) {
    for (const std::int64_t target : targets(options)) {
      const Sizes s = sizes_for(collective_of(name), target, 4, ranks);
      send_capacity = std::max(send_capacity, s.send_elements * 4);
      recv_capacity = std::max(recv_capacity, s.recv_elements * 4);
    }
  }
  for (auto& l : locals) {
    l.stream = std::make_unique<Stream>(l.device);
    l.events = std::make_unique<EventPair>(l.device);
    l.send = DeviceBuffer(l.device, static_cast<std::size_t>(send_capacity));
    l.recv = DeviceBuffer(l.device, static_cast<std::size_t>(recv_capacity));
    l.mismatches = DeviceBuffer(l.device, sizeof(unsigned long long));
  }

  const std::string algo = env_or_default("NCCL_ALGO");
  const std::string proto = env_or_default("NCCL_PROTO");
  if (root) {
    std::fprintf(stderr, "[nccl] %d ranks on %d node(s), %d GPU(s) per node; NCCL_ALGO=%s NCCL_PROTO=%s\n", ranks,
                 nodes, gpus_per_node, algo.c_str(), proto.c_str());
  }

  for (const auto& dtype : options.nccl_dtypes) {
    const bool bf16 = dtype == "bfloat16";
    const ncclDataType_t type = bf16 ? ncclBfloat16 : ncclFloat32;
    const std::int64_t element_bytes = bf16 ? 2 : 4;
    for (const auto& name : options.nccl_collectives) {
      const Collective c = collective_of(name);
      std::int64_t previous_bytes = -1;
      for (const std::int64_t target : targets(options)) {
        const Sizes s = sizes_for(c, target, element_bytes, ranks);
        if (s.bytes == previous_bytes) continue;  // small targets that round to the same count
        previous_bytes = s.bytes;
        fill_inputs(c, locals, s, bf16);
        for (int i = 0; i < options.timing.warmup_calls; ++i) launch_all(c, locals, s, type);
        for (auto& l : locals) {
          DeviceGuard guard(l.device);
          STEPCAST_CUDA(cudaStreamSynchronize(l.stream->get()));
        }
        // A call's time is the longest of any rank's: the collective is done when all are.
        const Timing t = measure(
            [&](std::int64_t n) {
              for (auto& l : locals) {
                DeviceGuard guard(l.device);
                l.events->start(l.stream->get());
              }
              for (std::int64_t i = 0; i < n; ++i) launch_all(c, locals, s, type);
              for (auto& l : locals) {
                DeviceGuard guard(l.device);
                l.events->stop(l.stream->get());
              }
              double longest = 0.0;
              for (auto& l : locals) longest = std::max(longest, l.events->elapsed_s());
              return group.max(longest);
            },
            options.timing);
        const long long wrong = group.sum(local_mismatches(c, locals, s, bf16, ranks));
        if (!root) continue;
        NcclRow row;
        row.collective = name;
        row.ranks = ranks;
        row.nodes = nodes;
        row.gpus_per_node = gpus_per_node;
        row.bytes = s.bytes;
        row.dtype = dtype;
        row.iterations = t.iterations;
        row.time_s_median = t.median_s;
        row.time_s_min = t.min_s;
        row.algbw_GBps = static_cast<double>(s.bytes) / t.median_s / 1e9;  // GB = 1e9 B (nccl-tests)
        row.busbw_GBps = row.algbw_GBps * bus_factor(c, ranks);
        row.nccl_algo = algo;
        row.nccl_proto = proto;
        row.check = wrong == 0 ? "ok" : "failed";
        raw.nccl.push_back(row);
        std::fprintf(stderr,
                     "[nccl] %-14s %-8s %12lld B: %.4g us/call median (%lld calls x %d), algbw %.2f GB/s, "
                     "busbw %.2f GB/s, check %s (%lld wrong elements)\n",
                     name.c_str(), dtype.c_str(), static_cast<long long>(s.bytes), t.median_s * 1e6,
                     static_cast<long long>(t.iterations), options.timing.repeats, row.algbw_GBps, row.busbw_GBps,
                     row.check.c_str(), wrong);
      }
      if (root) save();
    }
  }
}

}  // namespace stepcast::cal
