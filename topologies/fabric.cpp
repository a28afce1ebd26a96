#include "topologies/fabric.hpp"

#include <stdexcept>

namespace stepcast {

std::string_view name(FabricScope s) {
  switch (s) {
    case FabricScope::all:
      return "all";
    case FabricScope::intra_node:
      return "intra-node";
    case FabricScope::inter_node:
      return "inter-node";
  }
  return "?";
}

CommFabric restrict_fabric(const CommFabric& f, FabricScope scope) {
  switch (scope) {
    case FabricScope::all:
      return f;
    case FabricScope::intra_node: {
      CommFabric g;  // field by field: copying and resetting `inter` trips GCC 12's -Wmaybe-uninitialized
      g.arch = f.arch;
      g.intra = f.intra;
      g.nvls = f.nvls;
      g.nic_sharing = f.nic_sharing;
      return g;
    }
    case FabricScope::inter_node: {
      if (!f.inter) throw std::invalid_argument("inter-node collective on a one-node fabric");
      CommFabric g = f;
      g.inter->bw_GBps = f.inter->bw_GBps / f.intra.ranks;
      g.nic_sharing = f.nic_sharing * f.intra.ranks;
      g.intra.ranks = 1;
      g.nvls = false;
      return g;
    }
  }
  throw std::logic_error("restrict_fabric: unknown scope");
}

}  // namespace stepcast
