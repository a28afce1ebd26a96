/// \file
/// A broken invariant of the simulator: a bug in stepcast, never the user's input (the
/// scenario reader refuses inputs that could cause one). The CLI reports it with exit 1 and
/// a request for a bug report.
#pragma once

#include <stdexcept>
#include <string>

namespace stepcast::sim {

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what)
      : std::logic_error("internal error in the simulator (please report it as a bug): " + what) {}
};

}  // namespace stepcast::sim
