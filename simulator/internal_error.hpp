/// \file
/// A broken invariant of the simulator: a bug in stepcast, never the user's input (the
/// scenario reader refuses inputs that could cause one). A std::logic_error, so the CLI
/// reports it as an internal error (exit 1) with its request for a bug report; the message
/// says which invariant broke.
#pragma once

#include <stdexcept>
#include <string>

namespace stepcast::sim {

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("simulator invariant broken: " + what) {}
};

}  // namespace stepcast::sim
