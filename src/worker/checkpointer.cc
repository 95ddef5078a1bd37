#include "worker/checkpointer.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "platform/beneath.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "text/utf8.h"
#include "worker/checkpoint_files.h"

namespace idlepool::worker {
namespace {

CheckpointUpload Failed(absl::Status error) {
  return CheckpointUpload{CheckpointResult::kFailed, {}, std::move(error)};
}

// Once per change of the dir: what the checkpoint leaves out, named (the first few).
void WarnRefused(uint64_t attempt, const std::vector<std::string>& refused) {
  if (refused.empty()) return;
  constexpr size_t kNamed = 5;
  std::string names;
  for (size_t i = 0; i < std::min(refused.size(), kNamed); ++i) {
    absl::StrAppend(&names, i ? "; " : "", text::TruncateUtf8(refused[i], 200));
  }
  if (refused.size() > kNamed) absl::StrAppend(&names, "; and ", refused.size() - kNamed, " more");
  spdlog::warn(
      "attempt {}: left out of its checkpoint (a checkpoint holds regular files with a single "
      "link): {}",
      attempt, names);
}

}  // namespace

void Checkpointer::Restored(Attempt& a) {
  std::lock_guard lock(a.ckpt_mu);
  a.ckpt_fingerprint =
      Fingerprint(ListCheckpoint(a.paths.checkpoint_dir, spec::kMaxCheckpointFiles));
  a.ckpt_files.assign(a.assignment.checkpoint().begin(), a.assignment.checkpoint().end());
  a.ckpt_uploaded_at = clock_.Now();
}

CheckpointUpload Checkpointer::Upload(Attempt& a, bool force) {
  std::lock_guard lock(a.ckpt_mu);
  const std::string& dir = a.paths.checkpoint_dir;
  const CheckpointListing listing = ListCheckpoint(dir, spec::kMaxCheckpointFiles);
  const std::string fp = Fingerprint(listing);
  if (fp == a.ckpt_fingerprint) {
    return CheckpointUpload{CheckpointResult::kUnchanged,
                            force ? a.ckpt_files : std::vector<v1::OutputFile>{}, absl::OkStatus()};
  }
  if (listing.truncated) {
    if (a.ckpt_fingerprint != "too many") {
      spdlog::warn(
          "attempt {}: its checkpoint dir holds more than the {} files a checkpoint may have: "
          "not saved (keep state in fewer files)",
          a.id, spec::kMaxCheckpointFiles);
    }
    a.ckpt_fingerprint = "too many";
    return Failed(absl::ResourceExhaustedError("too many files in the checkpoint dir"));
  }
  WarnRefused(a.id, listing.refused);
  absl::StatusOr<platform::UniqueFd> root = platform::OpenDirectory(dir);
  if (!root.ok()) return Failed(root.status());
  std::vector<v1::OutputFile> files;
  for (const auto& e : listing.files) {
    // The coordinator refuses a whole checkpoint over one bad name: leave such files out.
    if (auto why = spec::RelativePathError(e.rel)) {
      spdlog::warn("attempt {}: checkpoint file '{}' {}; left out of the checkpoint", a.id,
                   text::TruncateUtf8(e.rel, 200), *why);
      continue;
    }
    // Uploaded from the descriptor that was checked and hashed, never by its path again.
    absl::StatusOr<OpenedCheckpointFile> f = OpenListed(root->get(), e);
    if (!f.ok()) return Failed(f.status());
    const UploadSource source{dir + "/" + e.rel, f->fd.get()};
    if (absl::Status st = upload_(source, f->file, &a.transfer.output_bytes); !st.ok()) {
      return Failed(st);
    }
    files.push_back(std::move(f->file));
  }
  a.ckpt_fingerprint = fp;
  a.ckpt_files = files;
  a.ckpt_uploaded_at = clock_.Now();
  return CheckpointUpload{CheckpointResult::kUploaded, std::move(files), absl::OkStatus()};
}

void Checkpointer::Round(const AttemptList& all, std::chrono::milliseconds interval,
                         const Sender& send) {
  const core::MonoTime now = clock_.Now();
  for (auto& a : all) {
    {
      std::lock_guard lock(a->mu);
      if (!a->process || a->finished || a->vacating || a->killed) continue;
    }
    {
      std::lock_guard lock(a->ckpt_mu);
      if (now - a->ckpt_uploaded_at < interval) continue;
    }
    CheckpointUpload up = Upload(*a, /*force=*/false);
    if (up.result == CheckpointResult::kUnchanged) continue;
    if (up.result == CheckpointResult::kFailed) {
      spdlog::info("attempt {}: checkpoint upload deferred: {}", a->id,
                   std::string(up.error.message()));
      continue;
    }
    v1::WorkerMessage m;
    m.mutable_checkpoint()->set_attempt(a->id);
    for (auto& f : up.files) *m.mutable_checkpoint()->add_files() = f;
    send(m);
    spdlog::info("attempt {}: checkpoint saved ({} files)", a->id, up.files.size());
  }
}

void Checkpointer::Start(std::chrono::milliseconds interval, std::function<AttemptList()> attempts,
                         Sender send, StopSignal& stop) {
  thread_ =
      std::thread([this, interval, attempts = std::move(attempts), send = std::move(send), &stop] {
        const std::chrono::milliseconds pass(
            std::min<int64_t>(1000, std::max<int64_t>(interval.count() / 4, 50)));
        while (!stop.stopping()) {
          stop.WaitFor(pass);
          if (stop.stopping()) break;
          Round(attempts(), interval, send);
        }
      });
}

void Checkpointer::Join() {
  if (thread_.joinable()) thread_.join();
}

int64_t Checkpointer::NewestFileNs(const std::string& dir) {
  int64_t newest_ns = 0;
  for (const auto& e : ListCheckpoint(dir, spec::kMaxCheckpointFiles).files) {
    newest_ns = std::max(newest_ns, e.mtime_ns);
  }
  return newest_ns;
}

}  // namespace idlepool::worker
