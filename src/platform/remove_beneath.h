// Removing what a task left in its dirs without being led out of them (see beneath.h): a task
// that swaps a subdirectory for a symbolic link while the worker empties its dir (a process that
// outlived its task, where there are no cgroups) must not make the worker remove or chmod a file
// of the lending machine.
//
// Each subdirectory is made searchable (fchmodat with AT_SYMLINK_NOFOLLOW: a task may have made
// it read-only), opened with O_NOFOLLOW from its parent's descriptor, emptied, and removed;
// everything else, links included, is unlinked by name from its parent's descriptor. A link is
// never followed, whatever it is swapped for between two calls.
//
// Threads: any; no shared state. Errors: the first failure (beneath.h's codes; kOutOfRange past
// kMaxRemoveDepth levels), after removing all that could be removed.
#pragma once

#include "absl/status/status.h"

namespace idlepool::platform {

// Deeper trees are left as they are (each level holds a descriptor while it is emptied).
inline constexpr int kMaxRemoveDepth = 512;

// Removes everything below the directory `dir_fd` (not the directory itself).
[[nodiscard]] absl::Status RemoveContentsBeneath(int dir_fd);

}  // namespace idlepool::platform
