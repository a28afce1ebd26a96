// Tests of model/parallel's group_placement: its closed form against the walk over every
// rank it replaced, over layouts with degrees that do and do not divide the node.
#include "model/parallel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace stepcast;

namespace {

/// The reference: every group enumerated, every member placed on its node (node = rank /
/// gpus_per_node); each figure the worst over groups and nodes. Linear in the GPUs.
GroupPlacement placement_by_rank_walk(const ParallelLayout& l, GroupKind kind, int gpus_per_node) {
  const std::int64_t world = l.gpus(), stride = group_stride(l, kind), n = l.degree(kind);
  const std::int64_t nodes = (world + gpus_per_node - 1) / gpus_per_node;
  std::vector<int> groups_on_node(static_cast<std::size_t>(nodes), 0);
  GroupPlacement out;
  out.ranks = static_cast<int>(n);
  // A group's first rank is one whose coordinate in `kind` is 0: (rank / stride) % n == 0.
  for (std::int64_t first = 0; first < world; ++first) {
    if ((first / stride) % n != 0) continue;
    std::int64_t last_node = -1;
    int run = 0, spanned = 0;
    for (std::int64_t k = 0; k < n; ++k) {  // members ascend, so a node's members are a run
      const std::int64_t node = (first + k * stride) / gpus_per_node;
      if (node != last_node) {
        ++spanned;
        ++groups_on_node[static_cast<std::size_t>(node)];
        run = 0;
        last_node = node;
      }
      out.ranks_per_node = std::max(out.ranks_per_node, ++run);
    }
    out.nodes_spanned = std::max(out.nodes_spanned, spanned);
  }
  out.groups_sharing_a_node = *std::max_element(groups_on_node.begin(), groups_on_node.end());
  return out;
}

ParallelLayout layout(int dp, int tp, int pp, int cp) {
  ParallelLayout l;
  l.dp = dp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  return l;
}

bool same(const GroupPlacement& a, const GroupPlacement& b) {
  return a.ranks == b.ranks && a.ranks_per_node == b.ranks_per_node && a.nodes_spanned == b.nodes_spanned &&
         a.groups_sharing_a_node == b.groups_sharing_a_node;
}

std::string show(const ParallelLayout& l, GroupKind kind, int g, const GroupPlacement& p) {
  return "dp " + std::to_string(l.dp) + " tp " + std::to_string(l.tp) + " pp " + std::to_string(l.pp) + " cp " +
         std::to_string(l.cp) + " " + std::string(name(kind)) + " on " + std::to_string(g) + "-GPU nodes: ranks " +
         std::to_string(p.ranks) + ", per node " + std::to_string(p.ranks_per_node) + ", nodes " +
         std::to_string(p.nodes_spanned) + ", sharing " + std::to_string(p.groups_sharing_a_node);
}

/// Compares the closed form with the walk for every kind and node size; returns the
/// comparisons made and records the first difference in `first_miss`.
int compare_all(const ParallelLayout& l, const std::vector<int>& node_sizes, std::string& first_miss) {
  int compared = 0;
  for (GroupKind kind : {GroupKind::tp, GroupKind::cp, GroupKind::dp, GroupKind::pp}) {
    for (int g : node_sizes) {
      const GroupPlacement fast = group_placement(l, kind, g), walk = placement_by_rank_walk(l, kind, g);
      ++compared;
      if (!same(fast, walk) && first_miss.empty())
        first_miss = "closed form " + show(l, kind, g, fast) + "; walk " + show(l, kind, g, walk);
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("group placement's closed form equals the walk over every rank, degrees 1 to 6, nodes of 1 to 9 GPUs") {
  // Every degree 1..6 in each of tp, cp, dp, pp (up to 1,296 GPUs), node sizes that divide
  // and do not divide the groups, blocks and world: partial last nodes, groups straddling
  // node boundaries, nodes holding several blocks.
  const std::vector<int> node_sizes{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::string miss;
  int compared = 0;
  for (int tp = 1; tp <= 6; ++tp)
    for (int cp = 1; cp <= 6; ++cp)
      for (int dp = 1; dp <= 6; ++dp)
        for (int pp = 1; pp <= 6; ++pp) compared += compare_all(layout(dp, tp, pp, cp), node_sizes, miss);
  CHECK(compared == 1296 * 4 * 9);
  CHECK_MESSAGE(miss.empty(), miss);
}

TEST_CASE("group placement's closed form equals the walk on large and boundary layouts") {
  // Power-of-two layouts as the plan enumerates them (8-GPU boxes, 72-GPU NVL72 racks,
  // 4-GPU trays), odd degrees beside them, degrees equal to the node and one either side,
  // and a world smaller than one node.
  const std::vector<int> node_sizes{4, 8, 16, 72};
  const ParallelLayout layouts[] = {
      layout(128, 8, 16, 1), layout(64, 8, 8, 4),  layout(1024, 2, 1, 8), layout(2048, 1, 1, 1), layout(7, 8, 9, 1),
      layout(9, 7, 1, 1),    layout(3, 9, 5, 2),   layout(16, 3, 3, 5),   layout(1, 1, 1, 1),    layout(1, 3, 1, 1),
      layout(5, 1, 1, 1),    layout(11, 4, 2, 3),  layout(24, 3, 2, 1),   layout(36, 2, 1, 1),   layout(2, 72, 2, 1),
      layout(1, 144, 1, 1),  layout(13, 1, 17, 1), layout(4, 6, 12, 1),
  };
  std::string miss;
  int compared = 0;
  for (const ParallelLayout& l : layouts) compared += compare_all(l, node_sizes, miss);
  CHECK(compared == static_cast<int>(std::size(layouts)) * 4 * 4);
  CHECK_MESSAGE(miss.empty(), miss);
}
