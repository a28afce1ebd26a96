// The MPI group of stepcast-calibrate-mpi: one rank per GPU, as nccl-tests runs under mpirun
// or srun. Compiled only when CMake finds MPI.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "process_group.hpp"

namespace stepcast::cal {

namespace {

void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw std::runtime_error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}

class MpiProcesses final : public ProcessGroup {
 public:
  MpiProcesses(int* argc, char*** argv) {
    check_mpi(MPI_Init(argc, argv), "MPI_Init");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // Ranks that share memory share a host: their order there picks the GPU.
    MPI_Comm local = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(local, &local_rank_), "MPI_Comm_rank(local)");
    MPI_Comm_free(&local);
    // Host names travel as fixed-size records; 256 bytes holds any host name (POSIX
    // HOST_NAME_MAX is 255 on Linux, limits.h).
    constexpr int kNameBytes = 256;
    std::vector<char> mine(kNameBytes, '\0');
    const std::string name = this_hostname();
    std::memcpy(mine.data(), name.data(), std::min<std::size_t>(name.size(), kNameBytes - 1));
    std::vector<char> all(static_cast<std::size_t>(kNameBytes) * static_cast<std::size_t>(size_), '\0');
    check_mpi(MPI_Allgather(mine.data(), kNameBytes, MPI_CHAR, all.data(), kNameBytes, MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgather");
    for (int r = 0; r < size_; ++r) {
      const char* record = all.data() + static_cast<std::size_t>(r) * kNameBytes;
      hostnames_.emplace_back(record, strnlen(record, kNameBytes));
    }
  }
  ~MpiProcesses() override { MPI_Finalize(); }

  bool distributed() const override { return true; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::vector<std::string> hostnames() const override { return hostnames_; }
  void broadcast(void* data, std::size_t bytes) override {
    check_mpi(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  double max(double value) override {
    double out = 0.0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce(max)");
    return out;
  }
  long long sum(long long value) override {
    long long out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce(sum)");
    return out;
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::abort();  // MPI_Abort does not return; this satisfies [[noreturn]] if it ever did
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  std::vector<std::string> hostnames_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv) {
  return std::make_unique<MpiProcesses>(argc, argv);
}

}  // namespace stepcast::cal
