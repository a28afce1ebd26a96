/// \file
/// `stepcast init`: a starter scenario for a catalog model on a catalog box, holding only
/// the keys a scenario requires (model, hardware, strategy, training.micro_batch and
/// training.seq_len) and a `notes` list saying what every other key defaults to (JSON has
/// no comments). It predicts as written.
#pragma once

#include <string>

namespace stepcast {

struct StarterRequest {
  std::string model;  ///< catalog name or alias
  std::string box;    ///< catalog box
  int gpus = 0;       ///< GPUs in all; 0: one whole box
};

/// The starter scenario as JSON text (2-space indent, ending in a newline). Throws
/// std::invalid_argument for an unknown model or box (with a "did you mean" when one is
/// close) or a GPU count the box cannot take (more than one box's worth must be whole
/// boxes; several boxes need NICs).
std::string starter_scenario(const StarterRequest& request);

}  // namespace stepcast
