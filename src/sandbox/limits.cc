#include "sandbox/limits.h"

#include <algorithm>

namespace idlepool::sandbox {

uint64_t DefaultTaskMemoryBytes(uint64_t policy_mb, uint64_t machine_bytes) {
  if (policy_mb > 0) return policy_mb << 20;
  return machine_bytes / 2;
}

uint64_t DefaultTaskDirBytes(uint64_t policy_mb, uint64_t free_bytes, uint64_t reserve_bytes,
                             uint32_t slots) {
  if (policy_mb > 0) return policy_mb << 20;
  const uint64_t above = free_bytes > reserve_bytes ? free_bytes - reserve_bytes : 0;
  return std::max(kMinTaskDirBytes, above / std::max(slots, 1u));
}

}  // namespace idlepool::sandbox
