// A task's limits in the sandbox (docs/guide/sandbox.md, "Limits inside"), from the owner's
// policy ([sandbox] memory_mb, task_dir_mb) and the machine: pure, the machine's figures passed
// in by the worker.
//
// Memory: what a task may hold, its processes' resident memory plus its files in the sandbox's
// tmpfs dirs (/tmp, /var/tmp, /dev/shm: memory too), when its job states no memory_mb: the
// policy's, else half the machine's memory. Each of those tmpfs dirs is also bounded by it
// (size=), so a writer fills it no further than the limit between two checks of the agent.
// Task dir: what one task's dir may hold: the policy's, else an equal share per slot of the
// disk's free space above the owner's reserve (at least kMinTaskDirBytes).
//
// Any thread.
#pragma once

#include <cstdint>

namespace idlepool::sandbox {

inline constexpr uint64_t kMinTaskDirBytes = uint64_t{1} << 30;

uint64_t DefaultTaskMemoryBytes(uint64_t policy_mb, uint64_t machine_bytes);
uint64_t DefaultTaskDirBytes(uint64_t policy_mb, uint64_t free_bytes, uint64_t reserve_bytes,
                             uint32_t slots);

}  // namespace idlepool::sandbox
