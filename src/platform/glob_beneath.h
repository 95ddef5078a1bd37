// GlobBeneath: a job's output patterns matched in a task dir without following symbolic links
// out of it (glob(3) follows them; see beneath.h for the threat).
//
// Syntax: glob(3) without flags, one '/'-separated component per directory level: '*', '?',
// '[...]' and backslash escapes, as fnmatch(3) with FNM_PERIOD (a leading '.' is matched only
// by a '.' in the pattern); the entries "." and ".." are never matched. The pattern itself must
// be a normalized relative path (beneath.h's CheckRelativePath).
//
// Links: a component without wildcards names one entry; when it is not the last component and
// that entry is a symbolic link, the match fails (kFailedPrecondition, "'outdir' is a symbolic
// link"): the pattern asks for files behind a link. A wildcard component descends only into
// real directories (a link it matches is passed over, as a file is). The last component
// matches entries of every kind, links included, each returned with its kind: the caller
// decides (the worker refuses a link as an output).
//
// Results: unique, sorted by path (bytes). Errors: those of beneath.h, messages naming the path.
// Threads: any; no shared state. Reads `dir_fd` only through fresh descriptors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/beneath.h"

namespace idlepool::platform {

struct GlobMatch {
  std::string rel;  // relative to the dir
  EntryKind kind = EntryKind::kOther;
};

[[nodiscard]] absl::StatusOr<std::vector<GlobMatch>> GlobBeneath(int dir_fd,
                                                                 std::string_view pattern);

}  // namespace idlepool::platform
