// AttemptPaths: where one attempt's files live under the work dir, built in one place.
//
// Four names side by side under WORK_DIR/attempts/ rather than one directory around them (a
// no-op task then costs two inodes, not five): ID.task/ (the task's working dir, inputs linked
// in, outputs collected from it), ID.checkpoint/ ($IDLEPOOL_CHECKPOINT_DIR), ID.stdout.log and
// ID.stderr.log. A plain value: any thread, no locking.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace idlepool::worker {

struct AttemptPaths {
  std::string task_dir;
  std::string checkpoint_dir;
  std::string stdout_log;
  std::string stderr_log;

  // The paths of attempt `id` under `work_dir`.
  [[nodiscard]] static AttemptPaths For(const std::string& work_dir, uint64_t id) {
    const std::string prefix =
        (std::filesystem::path(work_dir) / "attempts" / std::to_string(id)).string();
    return AttemptPaths{prefix + ".task", prefix + ".checkpoint", prefix + ".stdout.log",
                        prefix + ".stderr.log"};
  }
  // A sandboxed attempt's: its slot's task/ and checkpoint/ dirs (the only part of the work dir
  // its sandbox shows, and the only writable one; emptied in place after each attempt, so the
  // slot's sandbox keeps them bound), its logs (written by the worker) where they always are.
  [[nodiscard]] static AttemptPaths InSlot(const std::string& work_dir, const std::string& slot_dir,
                                           uint64_t id) {
    AttemptPaths p = For(work_dir, id);
    p.task_dir = slot_dir + "/task";
    p.checkpoint_dir = slot_dir + "/checkpoint";
    return p;
  }
};

}  // namespace idlepool::worker
