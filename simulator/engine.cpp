#include "simulator/engine.hpp"

#include "simulator/internal_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepcast::sim {

Time to_ns(double seconds) {
  // Compared in double before any conversion: a double beyond int64 converts undefined.
  if (!(seconds >= 0) || !(seconds * 1e9 <= static_cast<double>(kMaxTime)))
    throw InternalError(
        fmt::format("a duration of {} s does not fit the simulated clock (0 to 2^62 ns, about "
                    "146 years)",
                    seconds));
  return std::max<Time>(0, static_cast<Time>(std::ceil(seconds * 1e9 - 1e-6)));
}

Time add_time(Time a, Time b) {
  if (a < 0 || b < 0 || a > kMaxTime || b > kMaxTime || a + b > kMaxTime)
    throw InternalError(fmt::format("simulated time {} ns + {} ns leaves the clock's range (0 to 2^62 ns)", a, b));
  return a + b;
}

Time mul_time(std::int64_t n, Time t) {
  Time out = 0;
  if (n < 0 || t < 0 || __builtin_mul_overflow(n, t, &out) || out > kMaxTime)
    throw InternalError(fmt::format("simulated time {} x {} ns leaves the clock's range (0 to 2^62 ns)", n, t));
  return out;
}

void Engine::schedule(Time at, Component* who, std::uint64_t tag) {
  if (at < now_ || at > kMaxTime || !who)
    throw InternalError(fmt::format("an event scheduled at {} ns, now {} ns (the clock holds 0 to 2^62 ns)", at, now_));
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
