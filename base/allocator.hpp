/// \file
/// The process's allocator, tuned for what stepcast does most: building and tearing down
/// simulated steps of tens of thousands of small objects beside a few large arrays.
#pragma once

namespace stepcast {

/// Turns glibc's fastbins off (mallopt M_MXFAST 0) and grows the heap 256 MiB at a time
/// (M_TOP_PAD; untouched pages cost nothing). Freeing or allocating a large block
/// consolidates every fastbin chunk first (glibc malloc.c malloc_consolidate), which took a
/// fifth of `plan`'s time in `perf` (docs/benchmarks.md: the 405B plan, 7.05 -> 6.05 CPU-s,
/// the top pad's share the system time, 0.45 -> 0.29 s; small blocks still come from the
/// per-thread cache). It also serves blocks up to 256 MiB from the heap (M_MMAP_THRESHOLD)
/// and keeps up to 1 GiB of freed heap (M_TRIM_THRESHOLD) rather than unmapping each step's
/// arrays and faulting them in again, zeroed (the same plan: system time 0.35-0.49 -> 0.31 s,
/// peak RSS 586 -> 558 MB, 2026-11-28). Called once by the command and the benches, never
/// by the library or the Python module (whose process is the user's); nothing outside glibc.
void tune_allocator();

}  // namespace stepcast
