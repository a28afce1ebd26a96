/// \file
/// What a framework is documented to run, for records that leave it unstated. A measured
/// run from Megatron-LM, Megatron-DeepSpeed, metaseq or nanotron often gives its model and parallel
/// degrees but not its recompute, micro-batch or precision, because the framework's launch
/// scripts set them. Each default here fills a field only where the record leaves it null,
/// only for the framework whose scripts set it, and names its source; every default taken is
/// returned as an assumption, printed with the record's prediction.
#pragma once

#include "validate/validation.hpp"

#include <string>
#include <vector>

namespace stepcast {

/// Fills the unstated fields of `run` that its framework sets in its published launch
/// scripts, and appends one line per field filled to `assumed` ("<field> <value>: not
/// stated; <source>"). A field the record states is never changed. Records of other
/// frameworks are left as they are.
void apply_framework_defaults(MeasuredRun& run, std::vector<std::string>& assumed);

}  // namespace stepcast
