#include "simulator/network.hpp"

#include "simulator/internal_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace stepcast::sim {

namespace {
constexpr std::uint64_t kZeroByteFlow = 1ull << 63;
}

int Network::add_resource(std::string name, double capacity_Bps) {
  if (!(capacity_Bps > 0) || !std::isfinite(capacity_Bps))
    throw InternalError(fmt::format("link \"{}\" with a capacity of {} B/s", name, capacity_Bps));
  Resource r;
  r.name = std::move(name);
  r.capacity_Bps = capacity_Bps;
  resources_.push_back(std::move(r));
  usage_Bps_.push_back(0.0);
  users_.emplace_back();
  settled_.push_back(0);
  local_of_.push_back(-1);
  return static_cast<int>(resources_.size()) - 1;
}

void Network::start(Engine& engine, double bytes, double max_rate_Bps, const std::vector<ResourceUse>& uses,
                    Listener* listener, std::uint64_t cookie) {
  if (!(bytes >= 0) || !std::isfinite(bytes) || !(max_rate_Bps > 0) || !listener)
    throw InternalError(fmt::format("a flow of {} B at up to {} B/s", bytes, max_rate_Bps));
  for (const ResourceUse& u : uses)
    if (u.resource < 0 || u.resource >= static_cast<int>(resources_.size()))
      throw InternalError(fmt::format("a flow on link {} of {}", u.resource, resources_.size()));
  int id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
    seen_flow_.push_back(0);
  }
  Flow& f = flows_[id];
  f.remaining = bytes;
  f.max_rate = max_rate_Bps;
  f.rate = 0;
  f.since = engine.now();
  f.uses.assign(uses.begin(), uses.end());  // the slot's vector keeps its capacity
  f.listener = listener;
  f.cookie = cookie;
  ++f.version;
  f.active = true;
  if (bytes == 0) {  // nothing to share: ends now, in event order
    engine.schedule(engine.now(), this, kZeroByteFlow | static_cast<std::uint64_t>(id) << 32 | f.version);
    return;
  }
  ++active_count_;
  for (const ResourceUse& u : f.uses) users_[u.resource].push_back(id);
  component(f.uses);
  if (!seen_flow_[id]) {  // a flow on no resource: its own component
    seen_flow_[id] = 1;
    scratch_flows_.push_back(id);
  }
  reallocate(engine);
}

void Network::component(const std::vector<ResourceUse>& seeds) {
  scratch_flows_.clear();
  scratch_resources_.clear();
  auto add_resource_of = [&](int r) {
    if (local_of_[r] >= 0) return;
    local_of_[r] = static_cast<int>(scratch_resources_.size());
    scratch_resources_.push_back(r);
  };
  for (const ResourceUse& u : seeds) add_resource_of(u.resource);
  for (std::size_t k = 0; k < scratch_resources_.size(); ++k)
    for (int id : users_[scratch_resources_[k]]) {
      if (seen_flow_[id]) continue;
      seen_flow_[id] = 1;
      scratch_flows_.push_back(id);
      for (const ResourceUse& u : flows_[id].uses) add_resource_of(u.resource);
    }
}

void Network::settle(int r, Time now) {
  const Time dt = now - settled_[r];
  if (dt > 0 && usage_Bps_[r] > 0) {
    resources_[r].bytes += usage_Bps_[r] * to_seconds(dt);
    resources_[r].busy_ns += dt;
  }
  settled_[r] = now;
}

void Network::reallocate(Engine& engine) {
  // Progressive filling over the component's flows and resources (local indices).
  const Time now = engine.now();
  const std::size_t n = scratch_flows_.size(), m = scratch_resources_.size();
  std::vector<double>& capacity = scratch_capacity_;
  std::vector<double>& load_sum = scratch_load_;
  std::vector<double>& rate = scratch_rate_;
  std::vector<char>& frozen = scratch_frozen_;
  capacity.resize(m);
  load_sum.resize(m);
  for (std::size_t k = 0; k < m; ++k) capacity[k] = resources_[scratch_resources_[k]].capacity_Bps;
  rate.assign(n, 0.0);
  frozen.assign(n, 0);
  std::size_t unfrozen = n;
  while (unfrozen > 0) {
    std::fill(load_sum.begin(), load_sum.end(), 0.0);
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[scratch_flows_[i]];
      step = std::min(step, f.max_rate - rate[i]);
      for (const ResourceUse& u : f.uses) load_sum[local_of_[u.resource]] += u.load;
    }
    for (std::size_t k = 0; k < m; ++k)
      if (load_sum[k] > 0) step = std::min(step, capacity[k] / load_sum[k]);
    step = std::max(step, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      rate[i] += step;
      for (const ResourceUse& u : flows_[scratch_flows_[i]].uses) capacity[local_of_[u.resource]] -= u.load * step;
    }
    // Freeze flows at their cap or on a saturated resource.
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[scratch_flows_[i]];
      bool stop = rate[i] >= f.max_rate * (1 - 1e-12);
      for (const ResourceUse& u : f.uses)
        if (u.load > 0 && capacity[local_of_[u.resource]] <= resources_[u.resource].capacity_Bps * 1e-12) stop = true;
      if (stop) {
        frozen[i] = 1;
        --unfrozen;
      }
    }
  }
  for (int r : scratch_resources_) {
    settle(r, now);
    usage_Bps_[r] = 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    Flow& f = flows_[scratch_flows_[i]];
    if (!(rate[i] > 0)) throw InternalError(fmt::format("a flow got a rate of {} B/s", rate[i]));
    for (const ResourceUse& u : f.uses) usage_Bps_[u.resource] += u.load * rate[i];
    if (rate[i] == f.rate) continue;  // its end stands
    f.remaining -= f.rate * to_seconds(now - f.since);
    f.since = now;
    f.rate = rate[i];
    ++f.version;
    const double left_s = std::max(0.0, f.remaining) / f.rate;
    engine.schedule(add_time(now, to_ns(left_s)), this,
                    static_cast<std::uint64_t>(scratch_flows_[i]) << 32 | f.version);
  }
  if (record_timeline_)
    for (int r : scratch_resources_) {
      const double util = usage_Bps_[r] / resources_[r].capacity_Bps;
      auto& tl = resources_[r].timeline;
      if (!tl.empty() && tl.back().at == now) {
        tl.back().utilization = util;
        if (tl.size() >= 2 && tl[tl.size() - 2].utilization == util) tl.pop_back();
      } else if (tl.empty() ? util != 0 : tl.back().utilization != util) {
        tl.push_back({now, util});
      }
    }
  for (int r : scratch_resources_) local_of_[r] = -1;
  for (int id : scratch_flows_) seen_flow_[id] = 0;
}

Network::Usage Network::usage_at(Time now) const {
  Usage u;
  u.bytes.reserve(resources_.size());
  u.busy_ns.reserve(resources_.size());
  for (std::size_t r = 0; r < resources_.size(); ++r) {
    const Time dt = std::max<Time>(0, now - settled_[r]);
    const bool busy = usage_Bps_[r] > 0;
    u.bytes.push_back(resources_[r].bytes + (busy ? usage_Bps_[r] * to_seconds(dt) : 0.0));
    u.busy_ns.push_back(resources_[r].busy_ns + (busy ? dt : 0));
  }
  return u;
}

void Network::fire(Engine& engine, std::uint64_t tag) {
  const bool zero = (tag & kZeroByteFlow) != 0;
  const int id = static_cast<int>((tag & ~kZeroByteFlow) >> 32);
  const auto version = static_cast<std::uint32_t>(tag);
  Flow& f = flows_[id];
  if (!f.active || f.version != version) return;  // rescheduled since
  f.active = false;
  Listener* listener = f.listener;
  const std::uint64_t cookie = f.cookie;
  free_slots_.push_back(id);
  if (!zero) {
    --active_count_;
    for (const ResourceUse& u : f.uses) {
      std::vector<int>& on = users_[u.resource];
      const auto it = std::find(on.begin(), on.end(), id);
      if (it != on.end()) on.erase(it);
    }
    component(f.uses);  // the flows that shared a resource with it
    reallocate(engine);
  }
  listener->flow_done(engine, cookie);
}

}  // namespace stepcast::sim
