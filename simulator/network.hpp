/// \file
/// Flow-level network: links of the topology as resources with a capacity, transfers as
/// flows with a volume, a rate cap and a load on each resource they cross. Concurrent flows
/// share resources by weighted max-min fairness (progressive filling, the bandwidth-sharing
/// model of SimGrid's LV08: Velho and Legrand 2009, "Accuracy study and improvement of
/// network simulation in the SimGrid framework"): all unfrozen flows grow at the same rate
/// until a resource saturates or a flow reaches its cap, then those freeze. Rates change
/// only when a flow starts or ends, so each flow's end is an exact event. Max-min sharing
/// splits over the connected components of flows and the resources they share, so a start
/// or end refills only its own component (flows on other links keep their rates and their
/// scheduled ends), and a flow's bytes and a resource's usage are settled only when its rate
/// changes: the cost of an event does not grow with the flows elsewhere.
///
/// Symmetry: one flow may stand for many identical transfers; its load on a resource they
/// share (a spine, a switch) is then multiplied by their number, while its load on a
/// resource of its own class (a node's NICs) is not.
#pragma once

#include "simulator/engine.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::sim {

/// A resource's utilization from `at` on (0..1), for timelines.
struct UtilizationSample {
  Time at = 0;
  double utilization = 0;
};

struct Resource {
  std::string name;         ///< "node0 intra (nvlink3)", "node0 NICs (8x ib-ndr)"
  double capacity_Bps = 0;  ///< bytes per second
  // Results.
  double bytes = 0;  ///< carried, load-weighted
  Time busy_ns = 0;  ///< time with any load
  std::vector<UtilizationSample> timeline;
};

/// One use of a resource by a flow: `load` bytes on the resource per byte of flow volume.
struct ResourceUse {
  int resource = 0;
  double load = 1.0;
};

class Network : public Component {
 public:
  /// Told when a flow has moved all its bytes.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void flow_done(Engine& engine, std::uint64_t cookie) = 0;
  };

  /// `record_timeline`: keep each resource's utilization samples (for traces).
  explicit Network(bool record_timeline = false) : record_timeline_(record_timeline) {}

  int add_resource(std::string name, double capacity_Bps);
  const std::vector<Resource>& resources() const { return resources_; }

  /// Starts a flow of `bytes` at no more than `max_rate_Bps` (> 0). Calls
  /// listener->flow_done(cookie) when it ends (at once, through the engine, for 0 bytes).
  void start(Engine& engine, double bytes, double max_rate_Bps, const std::vector<ResourceUse>& uses,
             Listener* listener, std::uint64_t cookie);

  /// Each resource's carried bytes and busy time as of `now` (>= the last event), without
  /// moving any flow: for snapshots between events.
  struct Usage {
    std::vector<double> bytes;
    std::vector<Time> busy_ns;
  };
  Usage usage_at(Time now) const;

  /// Flows moving bytes now; for tests.
  std::size_t active_flows() const { return active_count_; }

  void fire(Engine& engine, std::uint64_t tag) override;

 private:
  struct Flow {
    double remaining = 0;  ///< bytes, as of `since`
    double max_rate = 0;   ///< bytes/s
    double rate = 0;       ///< bytes/s, current
    Time since = 0;        ///< when `remaining` was last settled
    std::vector<ResourceUse> uses;
    Listener* listener = nullptr;
    std::uint64_t cookie = 0;
    std::uint32_t version = 0;  ///< bumped on every reschedule; stale events are ignored
    bool active = false;
  };

  /// The moving flows connected to resources `seeds` through shared resources, and their
  /// resources, into scratch_flows_ and scratch_resources_ (in a fixed order).
  void component(const std::vector<ResourceUse>& seeds);
  /// Max-min rates over the component; each flow whose rate changed is settled and its end
  /// rescheduled, each resource's usage settled and updated.
  void reallocate(Engine& engine);
  /// Adds a resource's carried bytes and busy time up to `now` at its current usage.
  void settle(int resource, Time now);

  std::vector<Resource> resources_;
  std::vector<Flow> flows_;
  std::vector<int> free_slots_;
  std::vector<std::vector<int>> users_;  ///< per resource, the moving flows on it
  std::vector<double> usage_Bps_;        ///< per resource, current
  std::vector<Time> settled_;            ///< per resource, when bytes and busy_ns were last settled
  std::size_t active_count_ = 0;
  // reallocate()'s working space: members, since it runs on every flow start and end.
  std::vector<int> scratch_flows_, scratch_resources_;
  std::vector<int> local_of_;  ///< per resource: its index in scratch_resources_, or -1
  std::vector<char> seen_flow_;
  std::vector<double> scratch_capacity_, scratch_load_, scratch_rate_;
  std::vector<char> scratch_frozen_;
  bool record_timeline_ = false;
};

}  // namespace stepcast::sim
