// Writing a small file so that readers see the old content or the new, never a part: a temporary
// file next to it (created with `mode`, so a secret is never readable by others, not even
// briefly), written, fsync'ed, renamed over `path`.
//
// Thread-safe for distinct paths. Errors: kFailedPrecondition naming the path and errno's text.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace idlepool::platform {

absl::Status WriteFileAtomically(const std::string& path, const std::string& data, mode_t mode);

}  // namespace idlepool::platform
