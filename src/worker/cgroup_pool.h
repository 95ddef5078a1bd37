// CgroupPool: the attempts' cgroups (platform/cgroup.h), reused.
//
// Creating and removing one cgroup per attempt cost a fifth of the throughput of short tasks,
// so a released group is kept for the next attempt when it is empty and thaws; a group that
// still holds a process (an escapee being killed) is destroyed instead (its destructor kills and
// removes it). Any thread; one mutex guards the spare list. Errors: Acquire's, from
// TaskCgroups::Create.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "platform/cgroup.h"

namespace idlepool::worker {

class CgroupPool {
 public:
  // `groups`: not owned, must outlive the pool.
  explicit CgroupPool(platform::TaskCgroups* groups) : groups_(groups) {}

  [[nodiscard]] absl::StatusOr<std::unique_ptr<platform::TaskCgroup>> Acquire();
  void Release(std::unique_ptr<platform::TaskCgroup> group);

 private:
  static constexpr size_t kMaxSpare = 64;
  platform::TaskCgroups* const groups_;
  std::atomic<uint64_t> next_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<platform::TaskCgroup>> spare_ ABSL_GUARDED_BY(mu_);  // thawed
};

}  // namespace idlepool::worker
