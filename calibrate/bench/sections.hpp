// The five parts of a calibration run. Each appends to `raw` (the nccl part on rank 0 only)
// and calls `save` when it has something worth keeping, so a run cut short leaves a valid file.
#pragma once

#include <functional>

#include "options.hpp"
#include "process_group.hpp"
#include "raw.hpp"

namespace stepcast::cal {

// Never throws: what cannot be read is recorded as an "error: ..." string.
Machine describe_machine();

void run_gemm(const Options& options, int device, Raw& raw, const std::function<void()>& save);
void run_memory(const Options& options, int device, Raw& raw, const std::function<void()>& save);
void run_launch(const Options& options, int device, Raw& raw, const std::function<void()>& save);
void run_nccl(const Options& options, ProcessGroup& group, Raw& raw, const std::function<void()>& save);

}  // namespace stepcast::cal
