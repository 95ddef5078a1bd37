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

// Gives the heaps' free pages back to the kernel (glibc's malloc_trim): small blocks freed after
// a burst (a flood of upload manifests: thousands of 32-byte hashes each) otherwise keep their
// pages resident. Walks every arena: meant for a periodic pass, not a hot path.
void ReleaseFreeMemory();

}  // namespace idlepool::platform
