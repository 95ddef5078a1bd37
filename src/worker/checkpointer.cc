#include "worker/checkpointer.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "text/utf8.h"

namespace idlepool::worker {
namespace fs = std::filesystem;
namespace {

// A checkpoint dir's regular files, relative paths in sorted order, with what identifies their
// content cheaply (size and mtime): equal fingerprints mean nothing to upload.
struct DirEntry {
  std::string rel;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

int64_t MtimeNs(const struct stat& st) {
  return (std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec))
      .count();
}

std::vector<DirEntry> ListFiles(const std::string& dir) {
  std::vector<DirEntry> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    DirEntry e;
    e.rel = it->path().string().substr(dir.size() + 1);
    e.size = static_cast<uint64_t>(st.st_size);
    e.mtime_ns = MtimeNs(st);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.rel < b.rel; });
  return out;
}

std::string Fingerprint(const std::vector<DirEntry>& files) {
  std::string f;
  for (const auto& e : files) absl::StrAppend(&f, e.rel, "\n", e.size, " ", e.mtime_ns, "\n");
  return f;
}

CheckpointUpload Failed(absl::Status error) {
  return CheckpointUpload{CheckpointResult::kFailed, {}, std::move(error)};
}

// Hashes one listed file, checking it did not change while it was read.
absl::StatusOr<v1::OutputFile> HashListed(const std::string& path, const DirEntry& e) {
  auto digest = blob::HashFile(path, /*follow_symlinks=*/false);
  if (!digest.ok()) return digest.status();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != e.size ||
      MtimeNs(st) != e.mtime_ns || digest->size != e.size) {
    return absl::UnavailableError(
        absl::StrCat("checkpoint file ", e.rel, " changed while it was read"));
  }
  v1::OutputFile f;
  f.set_path(e.rel);
  f.set_sha256(digest->sha256);
  f.set_size(digest->size);
  return f;
}

}  // namespace

void Checkpointer::Restored(Attempt& a) {
  std::lock_guard lock(a.ckpt_mu);
  a.ckpt_fingerprint = Fingerprint(ListFiles(a.paths.checkpoint_dir));
  a.ckpt_files.assign(a.assignment.checkpoint().begin(), a.assignment.checkpoint().end());
  a.ckpt_uploaded_at = clock_.Now();
}

CheckpointUpload Checkpointer::Upload(Attempt& a, bool force) {
  std::lock_guard lock(a.ckpt_mu);
  const std::string& dir = a.paths.checkpoint_dir;
  std::vector<DirEntry> entries = ListFiles(dir);
  const std::string fp = Fingerprint(entries);
  if (fp == a.ckpt_fingerprint) {
    return CheckpointUpload{CheckpointResult::kUnchanged,
                            force ? a.ckpt_files : std::vector<v1::OutputFile>{}, absl::OkStatus()};
  }
  if (entries.size() > spec::kMaxCheckpointFiles) {
    if (a.ckpt_fingerprint != "too many") {
      spdlog::warn(
          "attempt {}: its checkpoint dir holds {} files, more than the {} a checkpoint "
          "may have: not saved (keep state in fewer files)",
          a.id, entries.size(), spec::kMaxCheckpointFiles);
    }
    a.ckpt_fingerprint = "too many";
    return Failed(absl::ResourceExhaustedError("too many files in the checkpoint dir"));
  }
  std::vector<v1::OutputFile> files;
  for (const auto& e : entries) {
    // The coordinator refuses a whole checkpoint over one bad name: leave such files out.
    if (auto why = spec::RelativePathError(e.rel)) {
      spdlog::warn("attempt {}: checkpoint file '{}' {}; left out of the checkpoint", a.id,
                   text::TruncateUtf8(e.rel, 200), *why);
      continue;
    }
    const std::string path = dir + "/" + e.rel;
    absl::StatusOr<v1::OutputFile> f = HashListed(path, e);
    if (!f.ok()) return Failed(f.status());
    if (absl::Status st = upload_(path, *f, &a.transfer.output_bytes); !st.ok()) {
      return Failed(st);
    }
    files.push_back(std::move(*f));
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
  for (const auto& e : ListFiles(dir)) newest_ns = std::max(newest_ns, e.mtime_ns);
  return newest_ns;
}

}  // namespace idlepool::worker
