// The attempt runner's collect phase (see attempt_runner.h): the job's output patterns matched
// in the task dir, each output opened and hashed beneath it (platform/beneath.h). The task
// controls its dir and may change it while the worker reads: an output is the task's own work,
// never a file of the lending machine, so a symbolic link (wherever it points) or a file with
// more than one link (`ln ~/.ssh/id_rsa out.txt`) fails the attempt, and the file hashed is
// the one filed (HashedOutputs, checked by Outbox::File).
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "blob/manifest.h"
#include "platform/beneath.h"
#include "platform/glob_beneath.h"
#include "text/utf8.h"
#include "worker/attempt_runner.h"

namespace idlepool::worker {
namespace {

constexpr const char* kOutputRule =
    "; outputs must be regular files in the task dir, each with a single link";

// "output 'x' is a symbolic link; ..." when the message is about `rel` itself, else
// "output 'x/y': 'x' is a symbolic link; ...".
std::string Refusal(const std::string& rel, const std::string& message) {
  if (absl::StartsWith(message, absl::StrCat("'", rel, "' "))) {
    return absl::StrCat("output ", message, kOutputRule);
  }
  return absl::StrCat("output '", rel, "': ", message, kOutputRule);
}

}  // namespace

// A pattern that matches nothing fails the attempt: a render that wrote no frame must not count
// as done.
PhaseResult AttemptRunner::CollectOutputs(Attempt& a, const std::set<std::string>& input_paths,
                                          HashedOutputs* hashed, v1::AttemptReport* report) {
  if (a.assignment.outputs().empty()) return std::nullopt;
  absl::StatusOr<platform::UniqueFd> task = platform::OpenDirectory(a.paths.task_dir);
  if (!task.ok()) {
    return Failed(absl::StrCat("cannot collect outputs: ", task.status().message()));
  }
  for (const auto& pattern : a.assignment.outputs()) {
    if (PhaseResult end = CollectPattern(a, task->get(), pattern, input_paths, hashed, report)) {
      report->clear_outputs();
      hashed->clear();
      return end;
    }
  }
  return std::nullopt;
}

PhaseResult AttemptRunner::CollectPattern(Attempt& a, int task_fd, const std::string& pattern,
                                          const std::set<std::string>& input_paths,
                                          HashedOutputs* hashed, v1::AttemptReport* report) {
  absl::StatusOr<std::vector<platform::GlobMatch>> matches =
      platform::GlobBeneath(task_fd, pattern);
  if (!matches.ok()) {
    return Failed(
        absl::StrCat("output pattern '", pattern, "': ", matches.status().message(), kOutputRule));
  }
  size_t matched = 0;
  for (const platform::GlobMatch& m : *matches) {
    // A directory does not count; nor do FIFOs, sockets and devices.
    if (m.kind == platform::EntryKind::kDirectory || m.kind == platform::EntryKind::kOther) {
      continue;
    }
    if (input_paths.count(m.rel)) continue;  // staged inputs are not outputs
    if (!text::IsValidUtf8(m.rel)) {
      return Failed(absl::StrCat("output file name '", m.rel,
                                 "' is not valid UTF-8; rename it in the command"));
    }
    if (m.kind == platform::EntryKind::kSymlink) {
      return Failed(Refusal(m.rel, absl::StrCat("'", m.rel, "' is a symbolic link")));
    }
    ++matched;
    if (hashed->count(m.rel)) continue;  // listed by an earlier pattern
    // Hashed from the descriptor that was checked, never by the name again.
    absl::StatusOr<platform::OpenedFile> file = platform::OpenFileBeneath(task_fd, m.rel);
    if (!file.ok()) return Failed(Refusal(m.rel, std::string(file.status().message())));
    // Never read whole only to be refused: the pool takes no blob over its cap.
    if (static_cast<uint64_t>(file->st.st_size) > blob::kMaxBlobBytes) {
      return Failed(absl::StrCat("output '", m.rel, "' is ", file->st.st_size,
                                 " bytes, over the pool's limit of ", blob::kMaxBlobBytes,
                                 " bytes per file; split it"));
    }
    auto digest = blob::HashFd(file->fd.get(), m.rel);
    if (!digest.ok()) return Failed(std::string(digest.status().message()));
    if (digest->size == 0 && !a.assignment.allow_empty_outputs()) {
      return Failed(absl::StrCat("output '", m.rel,
                                 "' is empty (0 bytes); set "
                                 "allow_empty_outputs = true if that is a result"));
    }
    (*hashed)[m.rel] = FileIdentity{file->st.st_dev, file->st.st_ino};
    auto* o = report->add_outputs();
    o->set_path(m.rel);
    o->set_sha256(digest->sha256);
    o->set_size(digest->size);
  }
  if (matched == 0) return Failed(absl::StrCat("output pattern '", pattern, "' matched no file"));
  return std::nullopt;
}

}  // namespace idlepool::worker
