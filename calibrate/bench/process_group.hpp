// The processes taking part in a run. stepcast-calibrate is one process driving every visible
// GPU; stepcast-calibrate-mpi is one MPI rank per GPU, launched by mpirun or srun the way
// nccl-tests is, with rank 0 writing the file. The NCCL benchmark talks to both through this.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace stepcast::cal {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual bool distributed() const = 0;  // true under MPI
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;                         // rank among the processes on this host
  virtual std::vector<std::string> hostnames() const = 0;     // one per rank, in rank order
  virtual void broadcast(void* data, std::size_t bytes) = 0;  // from rank 0 to every rank
  virtual double max(double value) = 0;                       // over all ranks
  virtual long long sum(long long value) = 0;                 // over all ranks
  virtual void barrier() = 0;
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Defined once in process_single.cpp and once in process_mpi.cpp; each executable links one.
std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv);

std::string this_hostname();

}  // namespace stepcast::cal
