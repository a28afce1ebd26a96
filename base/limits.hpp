/// \file
/// Physical sanity bounds on every input that could make the model meaningless, in one place,
/// each with the reason for it. A value outside its bound is bad input (exit 2, naming the
/// file and the JSON path), never a silent overflow: the readers check against these and the
/// simulator relies on them (its time arithmetic in integer nanoseconds stays in range).
///
/// The bounds are generous on purpose: they admit every real machine and job by orders of
/// magnitude and refuse only values no hardware or training run can have.
#pragma once

#include <cstdint>

namespace stepcast::limits {

// ---------------------------------------------------------------------------------------
// Reading files: what a well-formed input can look like at all.
// ---------------------------------------------------------------------------------------

/// Largest input file read, bytes. The largest real inputs (a measured-run .jsonl of
/// 100,000 records, a catalog) are a few tens of MB; this keeps a wrong path (a disk image,
/// /dev/zero) from being read whole.
inline constexpr std::int64_t kMaxInputFileBytes = 256LL << 20;

/// Deepest nesting of JSON arrays and objects. stepcast's formats nest at most 5 deep; the
/// bound keeps recursive parsing and error messages far from the stack's limit.
inline constexpr int kMaxJsonDepth = 64;

// ---------------------------------------------------------------------------------------
// Hardware and calibration: GPUs, links, boxes, clusters, measured kernels and collectives.
// ---------------------------------------------------------------------------------------

// (hardware and calibration bounds go here)

// ---------------------------------------------------------------------------------------
// Workload and layout: models, training setups, strategies, scenario sizes.
// ---------------------------------------------------------------------------------------

// (workload and layout bounds go here)

}  // namespace stepcast::limits
