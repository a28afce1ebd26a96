// Rules of the event loop: time in integer ns, ties in scheduling order, no positive
// duration rounded to zero.
#include "simulator/engine.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace stepcast::sim;

namespace {

struct Recorder : Component {
  std::vector<std::pair<Time, std::uint64_t>> seen;
  void fire(Engine& e, std::uint64_t tag) override {
    seen.emplace_back(e.now(), tag);
    if (tag == 10) e.schedule(e.now(), this, 11);  // scheduled at the same instant: fires after
  }
};

}  // namespace

TEST_CASE("events fire in time order, and at one instant in the order they were scheduled") {
  Engine e;
  Recorder r;
  e.schedule(5, &r, 1);
  e.schedule(3, &r, 2);
  e.schedule(5, &r, 3);
  e.schedule(3, &r, 10);
  e.run();
  const std::vector<std::pair<Time, std::uint64_t>> want = {{3, 2}, {3, 10}, {3, 11}, {5, 1}, {5, 3}};
  CHECK(r.seen == want);
  CHECK(e.events_fired() == 5);
  CHECK(e.now() == 5);
}

TEST_CASE("seconds become nanoseconds rounded up, so no positive duration is zero") {
  CHECK(to_ns(0.0) == 0);
  CHECK(to_ns(1e-9) == 1);
  CHECK(to_ns(1.2e-9) == 2);
  CHECK(to_ns(1.0) == kNsPerSecond);
  CHECK(to_ns(2.5) == 2'500'000'000);
  CHECK(to_seconds(1'500'000'000) == doctest::Approx(1.5));
}
