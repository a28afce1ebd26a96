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
  return static_cast<int>(resources_.size()) - 1;
}

void Network::start(Engine& engine, double bytes, double max_rate_Bps, std::vector<ResourceUse> uses,
                    Listener* listener, std::uint64_t cookie) {
  if (!(bytes >= 0) || !std::isfinite(bytes) || !(max_rate_Bps > 0) || !listener)
    throw InternalError(fmt::format("a flow of {} B at up to {} B/s", bytes, max_rate_Bps));
  int id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
  } else {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.remaining = bytes;
  f.max_rate = max_rate_Bps;
  f.rate = 0;
  f.uses = std::move(uses);
  f.listener = listener;
  f.cookie = cookie;
  ++f.version;
  f.active = true;
  if (bytes == 0) {  // nothing to share: ends now, in event order
    engine.schedule(engine.now(), this, kZeroByteFlow | static_cast<std::uint64_t>(id) << 32 | f.version);
    return;
  }
  advance(engine.now());
  active_.push_back(id);
  reallocate(engine);
}

void Network::advance(Time now) {
  const double dt = to_seconds(now - last_);
  if (dt > 0) {
    for (int id : active_) flows_[id].remaining -= flows_[id].rate * dt;
    for (std::size_t r = 0; r < resources_.size(); ++r) {
      if (usage_Bps_[r] > 0) {
        resources_[r].bytes += usage_Bps_[r] * dt;
        resources_[r].busy_ns += now - last_;
      }
    }
  }
  last_ = now;
}

void Network::reallocate(Engine& engine) {
  // Progressive filling over the active flows.
  // Scratch vectors are members: this runs on every flow start and end.
  const std::size_t n = active_.size();
  std::vector<double>& remaining_capacity = scratch_capacity_;
  std::vector<double>& load_sum = scratch_load_;
  std::vector<char>& frozen = scratch_frozen_;
  remaining_capacity.resize(resources_.size());
  load_sum.resize(resources_.size());
  for (std::size_t r = 0; r < resources_.size(); ++r) remaining_capacity[r] = resources_[r].capacity_Bps;
  frozen.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) flows_[active_[i]].rate = 0;
  std::size_t unfrozen = n;
  while (unfrozen > 0) {
    std::fill(load_sum.begin(), load_sum.end(), 0.0);
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[active_[i]];
      step = std::min(step, f.max_rate - f.rate);
      for (const ResourceUse& u : f.uses) load_sum[u.resource] += u.load;
    }
    for (std::size_t r = 0; r < resources_.size(); ++r)
      if (load_sum[r] > 0) step = std::min(step, remaining_capacity[r] / load_sum[r]);
    step = std::max(step, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      Flow& f = flows_[active_[i]];
      f.rate += step;
      for (const ResourceUse& u : f.uses) remaining_capacity[u.resource] -= u.load * step;
    }
    // Freeze flows at their cap or on a saturated resource.
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Flow& f = flows_[active_[i]];
      bool stop = f.rate >= f.max_rate * (1 - 1e-12);
      for (const ResourceUse& u : f.uses)
        if (u.load > 0 && remaining_capacity[u.resource] <= resources_[u.resource].capacity_Bps * 1e-12) stop = true;
      if (stop) {
        frozen[i] = 1;
        --unfrozen;
      }
    }
  }
  for (int id : active_) {
    Flow& f = flows_[id];
    if (!(f.rate > 0)) throw InternalError(fmt::format("a flow got a rate of {} B/s", f.rate));
    ++f.version;
    const double left_s = std::max(0.0, f.remaining) / f.rate;
    engine.schedule(add_time(engine.now(), to_ns(left_s)), this, static_cast<std::uint64_t>(id) << 32 | f.version);
  }
  record_usage(engine.now());
}

Network::Usage Network::usage_at(Time now) const {
  Usage u;
  const Time dt = std::max<Time>(0, now - last_);
  for (std::size_t r = 0; r < resources_.size(); ++r) {
    const bool busy = usage_Bps_[r] > 0;
    u.bytes.push_back(resources_[r].bytes + (busy ? usage_Bps_[r] * to_seconds(dt) : 0.0));
    u.busy_ns.push_back(resources_[r].busy_ns + (busy ? dt : 0));
  }
  return u;
}

void Network::record_usage(Time now) {
  std::fill(usage_Bps_.begin(), usage_Bps_.end(), 0.0);
  for (int id : active_)
    for (const ResourceUse& u : flows_[id].uses) usage_Bps_[u.resource] += u.load * flows_[id].rate;
  if (!record_timeline_) return;
  for (std::size_t r = 0; r < resources_.size(); ++r) {
    const double util = usage_Bps_[r] / resources_[r].capacity_Bps;
    auto& tl = resources_[r].timeline;
    if (!tl.empty() && tl.back().at == now) {
      tl.back().utilization = util;
      if (tl.size() >= 2 && tl[tl.size() - 2].utilization == util) tl.pop_back();
    } else if (tl.empty() ? util != 0 : tl.back().utilization != util) {
      tl.push_back({now, util});
    }
  }
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
    advance(engine.now());
    active_.erase(std::find(active_.begin(), active_.end(), id));
    reallocate(engine);
  }
  listener->flow_done(engine, cookie);
}

}  // namespace stepcast::sim
