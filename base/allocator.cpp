#include "base/allocator.hpp"

#include <cstdlib>  // brings glibc's <features.h>, which defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stepcast {

void tune_allocator() {
#if defined(__GLIBC__)
  mallopt(M_MXFAST, 0);
  mallopt(M_TOP_PAD, 256 << 20);  // grow the heap in large steps: fewer page-fault storms per simulated step
#endif
}

}  // namespace stepcast
