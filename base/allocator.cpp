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
  // Large arrays from the heap, and freed memory kept for the next step rather than handed
  // back to the kernel and faulted in again, zeroed, page by page.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace stepcast
