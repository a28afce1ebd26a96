/// \file
/// The event loop. It alone owns simulated time: integer nanoseconds, so the same input
/// gives the same output bit for bit. Components schedule events for themselves and react
/// when the engine fires them; ties at one instant fire in the order they were scheduled.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace stepcast::sim {

/// Simulated time, integer nanoseconds since the start of the step.
using Time = std::int64_t;

constexpr Time kNsPerSecond = 1'000'000'000;

/// The latest instant the clock holds: 2^62 ns, about 146 years. Durations and instants
/// stay below it, so that adding one duration to one instant never overflows an int64.
constexpr Time kMaxTime = Time{1} << 62;

/// Seconds -> nanoseconds, rounded up so that no positive duration becomes zero.
/// InternalError for a negative or NaN duration or one beyond kMaxTime (the scenario reader
/// refuses inputs that could make one).
Time to_ns(double seconds);
/// a + b for a, b in [0, kMaxTime]; InternalError if the sum passes kMaxTime.
Time add_time(Time a, Time b);
/// n * t for n, t >= 0; InternalError if the product passes kMaxTime.
Time mul_time(std::int64_t n, Time t);
inline double to_seconds(Time t) { return static_cast<double>(t) * 1e-9; }

class Engine;

/// Something that reacts to its own events.
class Component {
 public:
  virtual ~Component() = default;
  /// Called at the event's time; `tag` is what the component scheduled it with.
  virtual void fire(Engine& engine, std::uint64_t tag) = 0;
};

class Engine {
 public:
  Time now() const { return now_; }
  /// Schedules `who->fire(tag)` at `at` (now <= at <= kMaxTime; else InternalError).
  void schedule(Time at, Component* who, std::uint64_t tag);
  /// Fires events in (time, scheduling order) until none are left.
  void run();
  std::uint64_t events_fired() const { return fired_; }

 private:
  struct Event {
    Time at;
    std::uint64_t seq;
    Component* who;
    std::uint64_t tag;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  Time now_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t fired_ = 0;
};

}  // namespace stepcast::sim
