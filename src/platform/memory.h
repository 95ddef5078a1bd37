// Keeping a long-lived, mostly idle process's resident memory down to what it uses.
//
// glibc's malloc serves blocks of M_MMAP_THRESHOLD bytes and more (128 KiB at first) with
// mappings of their own, returned to the kernel when freed; but each such block freed raises the
// threshold to its size (up to 32 MiB). After a worker's first link probe or file transfer, its
// message and transfer buffers are carved from the heaps instead, and their pages stay resident
// long after the burst, kept by the small live blocks around them: an idle worker grew from 24 to
// 30-40 MB after a few tasks and a probe (bench/preemption).
//
// Thread safety: any thread, any time; meant once, early in main(). No effect, and no error, with
// an allocator other than glibc's.
#pragma once

namespace idlepool::platform {

// Fixes the threshold at 64 KiB (which also stops its growth, and the trim threshold's): every
// block of 64 KiB or more is mapped for itself and unmapped when freed. Costs a mmap/munmap pair
// and fresh pages per large block, which buffers of a transfer amortise.
void KeepLargeBlocksOutOfTheHeap();

// Gives the free pages of every malloc arena back to the kernel (glibc's malloc_trim(0)). glibc
// returns memory on its own only from the top of the main heap: after a burst (a flood of
// messages on a worker session, a huge Hello refused), the pages freed in the middle of the heaps
// and in the other threads' arenas stayed resident, and the coordinator's RSS stayed 15-40 MB
// above its idle level for good. Costs a walk over the arenas (well under a millisecond for a
// heap of tens of MB), so call it from a periodic pass, not per message.
void ReturnFreeMemory();

}  // namespace idlepool::platform
