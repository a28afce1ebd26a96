// Rules of the event loop: time in integer ns, ties in scheduling order, no positive
// duration rounded to zero.
#include "simulator/engine.hpp"

#include "simulator/internal_error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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

TEST_CASE("a duration that does not fit the clock, is negative or is NaN is an internal error") {
  CHECK_THROWS_AS(to_ns(-1e-9), InternalError);
  CHECK_THROWS_AS(to_ns(std::nan("")), InternalError);
  CHECK_THROWS_AS(to_ns(std::numeric_limits<double>::infinity()), InternalError);
  CHECK_THROWS_AS(to_ns(1e300), InternalError);  // a straggler speed of 1e-300
  CHECK_THROWS_AS(to_ns(5e9), InternalError);    // 158 years: past 2^62 ns
  // The boundary: 146 years fit, to the nanosecond.
  CHECK(to_ns(static_cast<double>(kMaxTime) * 1e-9) == kMaxTime);
  CHECK(to_ns(4e9) == 4'000'000'000'000'000'000);
}

TEST_CASE("sums and products of simulated times are checked against the clock's range") {
  CHECK(add_time(kMaxTime - 1, 1) == kMaxTime);
  CHECK_THROWS_AS(add_time(kMaxTime, 1), InternalError);
  CHECK_THROWS_AS(add_time(-1, 1), InternalError);
  CHECK(mul_time(1'000'000, 1'000'000'000) == 1'000'000'000'000'000);
  CHECK(mul_time(0, kMaxTime) == 0);
  CHECK_THROWS_AS(mul_time(Time{1} << 40, Time{1} << 40), InternalError);  // 2^80: would wrap
  CHECK_THROWS_AS(mul_time(-2, 5), InternalError);
}

TEST_CASE("an event in the past or beyond the clock's range is an internal error") {
  Engine e;
  Recorder r;
  CHECK_THROWS_AS(e.schedule(kMaxTime + 1, &r, 1), InternalError);
  e.schedule(10, &r, 1);
  e.run();
  CHECK_THROWS_AS(e.schedule(9, &r, 2), InternalError);
  CHECK_THROWS_AS(e.schedule(10, nullptr, 2), InternalError);
}
