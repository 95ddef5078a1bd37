// The paths one task of a submission stages (SubmitJobRequest.task_inputs, job_request.h): the
// job's inputs, fixed, and the task's own, forgotten at the next task. A task may not stage a
// path twice, a path that is a directory of another, or one under another staged file. Checking
// a task costs its own paths only (times their depth and a log), never a copy of the job's: a
// submission's check is linear in its paths, whatever the number of tasks.
//
// Pure; one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace idlepool::coordinator {

class StagedPaths {
 public:
  // One of the job's inputs (checked by spec::Validate already: no clash among them).
  void AddJobPath(std::string_view path);
  bool IsJobPath(std::string_view path) const { return job_.files.count(path) != 0; }
  // Another task begins: the previous task's paths are forgotten.
  void NextTask();
  // Why `path` cannot be staged by the current task ("is staged twice", "is also a directory of
  // another staged path", "lies under 'a', another staged file"), or "" once it is added.
  std::string Stage(std::string_view path);
  // Set entries made so far (added and forgotten): the work done, for tests of its bound.
  uint64_t entries_made() const { return entries_made_; }

 private:
  struct Paths {
    std::set<std::string, std::less<>> files;
    std::set<std::string, std::less<>> dirs;
  };
  void Add(Paths& into, std::string_view path);
  std::string Clash(const Paths& taken, std::string_view path) const;

  Paths job_;
  Paths task_;
  uint64_t entries_made_ = 0;
};

}  // namespace idlepool::coordinator
