#include "platform/glob_beneath.h"

#include <fnmatch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace idlepool::platform {
namespace {

bool HasWildcard(std::string_view component) {
  return component.find_first_of("*?[\\") != std::string_view::npos;
}

// One pattern matched level by level; every directory is opened beneath the root by its whole
// path (no link followed on the way), so that messages name the path.
class Matcher {
 public:
  Matcher(int root_fd, std::vector<std::string> parts) : root_(root_fd), parts_(std::move(parts)) {}

  absl::Status Level(int dir_fd, size_t i, const std::string& prefix) {
    const std::string& component = parts_[i];
    if (HasWildcard(component)) return Wildcard(dir_fd, i, prefix);
    const std::string rel = Join(prefix, component);
    absl::StatusOr<EntryKind> kind = KindOf(dir_fd, component);
    if (absl::IsNotFound(kind.status())) return absl::OkStatus();
    if (!kind.ok()) return kind.status();
    if (Last(i)) {
      matches_.push_back(GlobMatch{rel, *kind});
      return absl::OkStatus();
    }
    if (*kind == EntryKind::kSymlink) {
      return absl::FailedPreconditionError(absl::StrCat("'", rel, "' is a symbolic link"));
    }
    if (*kind != EntryKind::kDirectory) return absl::OkStatus();
    return Descend(i, rel);
  }

  std::vector<GlobMatch> Take() {
    std::sort(matches_.begin(), matches_.end(),
              [](const GlobMatch& a, const GlobMatch& b) { return a.rel < b.rel; });
    return std::move(matches_);
  }

 private:
  bool Last(size_t i) const { return i + 1 == parts_.size(); }
  static std::string Join(const std::string& prefix, std::string_view name) {
    return prefix.empty() ? std::string(name) : absl::StrCat(prefix, "/", std::string(name));
  }

  absl::Status Wildcard(int dir_fd, size_t i, const std::string& prefix) {
    absl::StatusOr<std::vector<DirEntry>> entries = ListDirectory(dir_fd);
    if (!entries.ok()) return entries.status();
    for (const DirEntry& e : *entries) {
      if (::fnmatch(parts_[i].c_str(), e.name.c_str(), FNM_PERIOD) != 0) continue;
      const std::string rel = Join(prefix, e.name);
      if (Last(i)) {
        matches_.push_back(GlobMatch{rel, e.kind});
      } else if (e.kind == EntryKind::kDirectory) {
        if (absl::Status st = Descend(i, rel); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Descend(size_t i, const std::string& rel) {
    absl::StatusOr<UniqueFd> sub = OpenDirectoryBeneath(root_, rel);
    if (absl::IsNotFound(sub.status())) return absl::OkStatus();  // gone meanwhile
    if (!sub.ok()) return sub.status();
    return Level(sub->get(), i + 1, rel);
  }

  const int root_;
  const std::vector<std::string> parts_;
  std::vector<GlobMatch> matches_;
};

}  // namespace

absl::StatusOr<std::vector<GlobMatch>> GlobBeneath(int dir_fd, std::string_view pattern) {
  if (absl::Status st = CheckRelativePath(pattern); !st.ok()) return st;
  std::vector<std::string> parts;
  for (std::string_view part : SplitPath(pattern)) parts.emplace_back(part);
  Matcher m(dir_fd, std::move(parts));
  if (absl::Status st = m.Level(dir_fd, 0, ""); !st.ok()) return st;
  return m.Take();
}

}  // namespace idlepool::platform
