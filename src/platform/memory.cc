#include "platform/memory.h"

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace idlepool::platform {

void KeepLargeBlocksOutOfTheHeap() {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
  (void)::mallopt(M_MMAP_THRESHOLD, 64 << 10);
#endif
}

void ReturnFreeMemory() {
#if defined(__GLIBC__)
  (void)::malloc_trim(0);
#endif
}

}  // namespace idlepool::platform
