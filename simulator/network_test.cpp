// Flow-level sharing: max-min fairness with rate caps and loads, exact end events.
#include "simulator/network.hpp"

#include "simulator/internal_error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>

using namespace stepcast::sim;

namespace {

struct Ends : Network::Listener {
  std::map<std::uint64_t, Time> at;
  Engine* engine = nullptr;
  void flow_done(Engine& e, std::uint64_t cookie) override { at[cookie] = e.now(); }
};

constexpr double GBps = 1e9;

}  // namespace

TEST_CASE("a flow alone runs at the smaller of its cap and the link's capacity over its load") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 5 * GBps);
  Ends ends;
  net.start(e, 1e9, 10 * GBps, {{link, 1.0}}, &ends, 1);  // link-bound: 1 GB / 5 GB/s
  e.run();
  CHECK(ends.at[1] == 200'000'000);

  Engine e2;
  Network net2;
  const int l2 = net2.add_resource("link", 5 * GBps);
  net2.start(e2, 1e9, 2 * GBps, {{l2, 1.0}}, &ends, 2);  // cap-bound: 1 GB / 2 GB/s
  e2.run();
  CHECK(ends.at[2] == 500'000'000);
}

TEST_CASE("a load of 2 puts two bytes on the link per byte moved, halving the rate") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 4 * GBps);
  Ends ends;
  net.start(e, 1e9, 100 * GBps, {{link, 2.0}}, &ends, 1);  // 1 GB x 2 / 4 GB/s = 0.5 s
  e.run();
  CHECK(ends.at[1] == 500'000'000);
  CHECK(net.resources()[0].bytes == doctest::Approx(2e9));
  CHECK(net.resources()[0].busy_ns == 500'000'000);
}

TEST_CASE("two flows on one 1 Gb/s link each get half of it") {
  Engine e;
  Network net;
  const int uplink = net.add_resource("1 GbE", 0.125 * GBps);
  Ends ends;
  // 125 MB each: alone 1 s; together 2 s.
  net.start(e, 125e6, 10 * GBps, {{uplink, 1.0}}, &ends, 1);
  net.start(e, 125e6, 10 * GBps, {{uplink, 1.0}}, &ends, 2);
  e.run();
  CHECK(ends.at[1] == 2'000'000'000);
  CHECK(ends.at[2] == 2'000'000'000);
}

TEST_CASE("when one flow ends the other takes the whole link") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 1 * GBps);
  Ends ends;
  net.start(e, 1e9, 10 * GBps, {{link, 1.0}}, &ends, 1);
  net.start(e, 2e9, 10 * GBps, {{link, 1.0}}, &ends, 2);
  e.run();
  // Both at 0.5 GB/s until flow 1 has moved 1 GB (2 s); flow 2 then has 1 GB left at 1 GB/s.
  CHECK(ends.at[1] == 2'000'000'000);
  CHECK(ends.at[2] == 3'000'000'000);
}

TEST_CASE("max-min: a capped flow leaves its unused share to the others") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 10 * GBps);
  Ends ends;
  net.start(e, 2e9, 2 * GBps, {{link, 1.0}}, &ends, 1);    // capped at 2 GB/s: 1 s
  net.start(e, 8e9, 100 * GBps, {{link, 1.0}}, &ends, 2);  // gets the other 8 GB/s: 1 s
  e.run();
  CHECK(ends.at[1] == 1'000'000'000);
  CHECK(ends.at[2] == 1'000'000'000);
}

TEST_CASE("max-min on a line: the flow crossing both links gets what each link leaves it") {
  // Links A and B of 1 GB/s; flow x crosses both, y only A, z only B: each gets 0.5 GB/s.
  Engine e;
  Network net;
  const int a = net.add_resource("A", 1 * GBps);
  const int b = net.add_resource("B", 1 * GBps);
  Ends ends;
  net.start(e, 0.5e9, 10 * GBps, {{a, 1.0}, {b, 1.0}}, &ends, 1);
  net.start(e, 0.5e9, 10 * GBps, {{a, 1.0}}, &ends, 2);
  net.start(e, 0.5e9, 10 * GBps, {{b, 1.0}}, &ends, 3);
  e.run();
  CHECK(ends.at[1] == 1'000'000'000);
  CHECK(ends.at[2] == 1'000'000'000);
  CHECK(ends.at[3] == 1'000'000'000);
}

TEST_CASE("a flow of zero bytes ends at once, through the engine") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 1 * GBps);
  Ends ends;
  net.start(e, 0.0, 1 * GBps, {{link, 1.0}}, &ends, 7);
  CHECK(ends.at.count(7) == 0);
  e.run();
  CHECK(ends.at[7] == 0);
}

TEST_CASE("utilization timeline records each change of a link's load") {
  Engine e;
  Network net(true);
  const int link = net.add_resource("link", 1 * GBps);
  Ends ends;
  net.start(e, 1e9, 0.5 * GBps, {{link, 1.0}}, &ends, 1);  // 50% for 2 s
  e.run();
  const auto& tl = net.resources()[0].timeline;
  REQUIRE(tl.size() == 2);
  CHECK(tl[0].at == 0);
  CHECK(tl[0].utilization == doctest::Approx(0.5));
  CHECK(tl[1].at == 2'000'000'000);
  CHECK(tl[1].utilization == 0);
}

TEST_CASE("a flow that would not end within the clock's range is an internal error, never a wrapped time") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", 1e-300 * GBps);  // a near-zero bandwidth
  Ends ends;
  CHECK_THROWS_AS(net.start(e, 1e9, 10 * GBps, {{link, 1.0}}, &ends, 1), InternalError);
  // The boundary: 1 GB at 1 B/s ends after 31.7 years, inside the clock's 146.
  Engine e2;
  Network net2;
  const int slow = net2.add_resource("slow", 1.0);
  net2.start(e2, 1e9, 10 * GBps, {{slow, 1.0}}, &ends, 2);
  e2.run();
  CHECK(ends.at[2] == 1'000'000'000 * kNsPerSecond);
}

TEST_CASE("links and flows with a capacity, size or rate that is not a positive number are internal errors") {
  Engine e;
  Network net;
  CHECK_THROWS_AS(net.add_resource("zero", 0.0), InternalError);
  CHECK_THROWS_AS(net.add_resource("nan", std::nan("")), InternalError);
  const int link = net.add_resource("link", GBps);
  Ends ends;
  CHECK_THROWS_AS(net.start(e, -1.0, GBps, {{link, 1.0}}, &ends, 1), InternalError);
  CHECK_THROWS_AS(net.start(e, std::nan(""), GBps, {{link, 1.0}}, &ends, 1), InternalError);
  CHECK_THROWS_AS(net.start(e, 1.0, 0.0, {{link, 1.0}}, &ends, 1), InternalError);
}

TEST_CASE("usage_at reads carried bytes and busy time between events without moving any flow") {
  Engine e;
  Network net;
  const int link = net.add_resource("link", GBps);
  Ends ends;
  net.start(e, 1e9, 10 * GBps, {{link, 1.0}}, &ends, 1);
  const Network::Usage half = net.usage_at(500'000'000);
  CHECK(half.bytes[0] == doctest::Approx(0.5e9));
  CHECK(half.busy_ns[0] == 500'000'000);
  e.run();
  CHECK(ends.at[1] == kNsPerSecond);  // unchanged by the read
  CHECK(net.resources()[0].bytes == doctest::Approx(1e9));
}
