#include "worker/cgroup_pool.h"

#include "absl/strings/str_cat.h"

namespace idlepool::worker {

absl::StatusOr<std::unique_ptr<platform::TaskCgroup>> CgroupPool::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!spare_.empty()) {
      auto g = std::move(spare_.back());
      spare_.pop_back();
      return g;
    }
  }
  return groups_->Create(absl::StrCat("g", next_.fetch_add(1)));
}

void CgroupPool::Release(std::unique_ptr<platform::TaskCgroup> group) {
  if (!group) return;
  if (group->Populated() || !group->Thaw().ok()) return;  // destroyed: kills and removes it
  std::lock_guard lock(mu_);
  if (spare_.size() < kMaxSpare) spare_.push_back(std::move(group));
}

}  // namespace idlepool::worker
