#include "simulator/engine.hpp"

#include <cassert>
#include <cmath>

namespace stepcast::sim {

Time to_ns(double seconds) {
  assert(seconds >= 0 && std::isfinite(seconds));
  return static_cast<Time>(std::ceil(seconds * 1e9 - 1e-6));
}

void Engine::schedule(Time at, Component* who, std::uint64_t tag) {
  assert(at >= now_ && who);
  queue_.push(Event{at, seq_++, who, tag});
}

void Engine::run() {
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    now_ = e.at;
    ++fired_;
    e.who->fire(*this, e.tag);
  }
}

}  // namespace stepcast::sim
