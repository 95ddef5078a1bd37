// Landlock (Linux >= 5.13, when the kernel enables it): a second, independent restriction of a
// sandbox's file access, applied by the agent to itself and so to every task it starts.
// Everything may be read and executed; files may be written (not created) only under /dev and
// /proc; `writable` dirs get every right. Device ioctls (ABI 5) are allowed under /dev only.
// ABI 6: abstract Unix sockets and signals are scoped to the sandbox (a host-network task cannot
// reach the owner's X11 or D-Bus abstract sockets).
//
// Not thread-safe (restricts the calling thread; call before starting tasks). Returns the ABI
// version applied, 0 when the kernel has no Landlock (not an error), or kInternal.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::sandbox {

[[nodiscard]] absl::StatusOr<int> RestrictWithLandlock(const std::vector<std::string>& writable);
// The kernel's Landlock ABI version, 0 when it has none.
int LandlockAbi();

}  // namespace idlepool::sandbox
