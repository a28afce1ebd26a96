// The single-process group of stepcast-calibrate: one rank that drives every visible GPU.
#include <cstdlib>

#include "process_group.hpp"

namespace stepcast::cal {

namespace {

class SingleProcess final : public ProcessGroup {
 public:
  bool distributed() const override { return false; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::vector<std::string> hostnames() const override { return {this_hostname()}; }
  void broadcast(void*, std::size_t) override {}
  double max(double value) override { return value; }
  long long sum(long long value) override { return value; }
  void barrier() override {}
  [[noreturn]] void abort(int exit_code) override { std::exit(exit_code); }
};

}  // namespace

std::unique_ptr<ProcessGroup> make_process_group(int*, char***) { return std::make_unique<SingleProcess>(); }

}  // namespace stepcast::cal
