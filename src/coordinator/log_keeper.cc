#include "coordinator/log_keeper.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {
namespace fs = std::filesystem;
namespace {

// States kept in memory; past it the oldest attempts' are dropped (their .pos files stay).
constexpr size_t kMaxAttemptStates = 16384;

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t w = ::write(fd, data.data(), data.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

// Appends `data` to `path` (created 0600: task output may be private).
bool AppendFile(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = WriteAll(fd, data);
  ::close(fd);
  return ok;
}

// The whole small file, or "" when it cannot be read.
std::string ReadSmall(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[65536];
  while (out.size() < max_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, max_bytes - out.size()));
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

v1::LogData Event(core::TaskKey task, core::AttemptId attempt, std::string text) {
  v1::LogData d;
  d.set_attempt(attempt);
  d.set_task(task.index);
  d.set_event(std::move(text));
  return d;
}

}  // namespace

std::string GapLine(uint64_t bytes) {
  return absl::StrCat("[idlepool: ", bytes, " bytes of output dropped]");
}

std::string GapsUnmarkedLine() {
  return absl::StrCat("[idlepool: ", kMaxGapLines,
                      " gaps in this attempt's output marked; later gaps are not]");
}

std::string CapLine(uint64_t cap) {
  return absl::StrCat("[idlepool: log cap of ", cap,
                      " bytes reached; the rest of this attempt's output is not kept]");
}

// --- LogFollower ---------------------------------------------------------------------------

void LogFollower::Push(v1::LogData d) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    const size_t size = d.data().size() + d.event().size();
    if (bytes_ + size > buffer_bytes_) {
      skipped_ += d.data().size();
      return;
    }
    if (skipped_ > 0) {
      queue_.push_back(
          Event(task_, d.attempt(),
                absl::StrCat("[idlepool: ", skipped_, " bytes skipped: this reader fell behind]")));
      skipped_ = 0;
    }
    bytes_ += size;
    queue_.push_back(std::move(d));
  }
  cv_.notify_all();
}

std::vector<v1::LogData> LogFollower::Take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || !queue_.empty(); });
  std::vector<v1::LogData> out(std::make_move_iterator(queue_.begin()),
                               std::make_move_iterator(queue_.end()));
  queue_.clear();
  bytes_ = 0;
  return out;
}

bool LogFollower::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void LogFollower::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

// --- LogKeeper -----------------------------------------------------------------------------

std::string LogKeeper::PathOf(core::JobId job, core::AttemptId attempt, const char* ext) const {
  return (fs::path(options_.dir) / std::to_string(job) / absl::StrCat(attempt, ext)).string();
}

LogKeeper::AttemptLog& LogKeeper::StateOf(core::JobId job, core::AttemptId attempt) {
  auto it = attempts_.find(attempt);
  if (it != attempts_.end()) return it->second;
  if (attempts_.size() >= kMaxAttemptStates) attempts_.erase(attempts_.begin());
  AttemptLog log;
  log.job = job;
  // After a restart (or an eviction): "next kept [gaps]" from .pos (files written before gap
  // lines were counted have two fields).
  const std::string pos = ReadSmall(PathOf(job, attempt, ".pos"), 64);
  uint64_t next = 0, kept = 0;
  uint32_t gaps = 0;
  const char* p = pos.data();
  const char* end = pos.data() + pos.size();
  auto r1 = std::from_chars(p, end, next);
  if (r1.ec == std::errc() && r1.ptr < end && *r1.ptr == ' ') {
    auto r2 = std::from_chars(r1.ptr + 1, end, kept);
    if (r2.ec == std::errc()) {
      log.next = next;
      log.kept = kept;
      if (r2.ptr < end && *r2.ptr == ' ' &&
          std::from_chars(r2.ptr + 1, end, gaps).ec == std::errc()) {
        log.gaps = std::min<uint32_t>(gaps, kMaxGapLines + 1);
      }
    }
  }
  return attempts_.emplace(attempt, log).first->second;
}

std::string LogKeeper::FileBytes(AttemptLog& log, uint64_t offset, std::string_view data) const {
  std::string out;
  if (offset > log.next && log.kept < options_.cap_bytes && log.gaps <= kMaxGapLines) {
    ++log.gaps;
    absl::StrAppend(&out, "\n",
                    log.gaps <= kMaxGapLines ? GapLine(offset - log.next) : GapsUnmarkedLine(),
                    "\n");
  }
  const uint64_t room = options_.cap_bytes > log.kept ? options_.cap_bytes - log.kept : 0;
  if (room > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(room, data.size()));
    out.append(data.data(), take);
    log.kept += take;
    if (take < data.size()) absl::StrAppend(&out, "\n", CapLine(options_.cap_bytes), "\n");
  }
  return out;
}

bool LogKeeper::Append(core::TaskKey task, core::AttemptId attempt, uint64_t offset,
                       std::string_view data) {
  if (data.size() > kMaxLogChunkBytes || offset > UINT64_MAX - data.size() || attempt == 0) {
    return false;
  }
  // No output, nothing to keep: a gap it would open shows with the next chunk that has some.
  if (data.empty()) return true;
  std::lock_guard lock(mu_);
  AttemptLog& log = StateOf(task.job, attempt);
  // Output already kept (a resend, or out of order): only what is new goes on.
  if (offset + data.size() <= log.next) return true;
  if (offset < log.next) {
    data.remove_prefix(static_cast<size_t>(log.next - offset));
    offset = log.next;
  }
  const uint64_t gap = offset - log.next;
  const std::string bytes = FileBytes(log, offset, data);
  log.next = offset + data.size();
  if (!bytes.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(options_.dir) / std::to_string(task.job), ec);
    const std::string pos = absl::StrCat(log.next, " ", log.kept, " ", log.gaps, "\n");
    if (ec || !AppendFile(PathOf(task.job, attempt, ".log"), bytes) ||
        !AppendFile(PathOf(task.job, attempt, ".pos.tmp"), pos) ||
        ::rename(PathOf(task.job, attempt, ".pos.tmp").c_str(),
                 PathOf(task.job, attempt, ".pos").c_str()) != 0) {
      spdlog::warn("log of attempt {} (job {}): cannot write under {}: {}", attempt, task.job,
                   options_.dir, ec ? ec.message() : std::strerror(errno));
    }
  }
  Fanout(task, attempt, offset, data, gap);
  return true;
}

void LogKeeper::Fanout(core::TaskKey task, core::AttemptId attempt, uint64_t offset,
                       std::string_view data, uint64_t gap) {
  auto it = followers_.find(task);
  if (it == followers_.end()) return;
  for (const auto& f : it->second) {
    if (gap > 0) f->Push(Event(task, attempt, GapLine(gap)));
    v1::LogData d;
    d.set_attempt(attempt);
    d.set_task(task.index);
    d.set_offset(offset);
    d.set_data(std::string(data));
    f->Push(std::move(d));
  }
}

absl::StatusOr<std::string> LogKeeper::Kept(core::JobId job, core::AttemptId attempt,
                                            uint64_t max_bytes) const {
  const std::string path = PathOf(job, attempt, ".log");
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("no output of attempt ", attempt, " was kept"));
  }
  return ReadSmall(path, max_bytes);
}

absl::StatusOr<std::shared_ptr<LogFollower>> LogKeeper::Follow(core::TaskKey task,
                                                               core::AttemptId attempt,
                                                               std::string* backlog) {
  std::lock_guard lock(mu_);
  if (follower_count_ >= options_.max_followers) {
    return absl::ResourceExhaustedError(absl::StrCat(
        options_.max_followers, " readers follow task logs already (the most at once)"));
  }
  auto f = std::make_shared<LogFollower>(task, options_.follower_buffer_bytes);
  followers_[task].push_back(f);
  ++follower_count_;
  // Under the lock: no chunk lands between the backlog and the first pushed one.
  if (attempt != 0 && backlog) {
    *backlog = ReadSmall(PathOf(task.job, attempt, ".log"), options_.cap_bytes + 4096);
  }
  return f;
}

void LogKeeper::Unfollow(const std::shared_ptr<LogFollower>& follower) {
  std::lock_guard lock(mu_);
  auto it = followers_.find(follower->task());
  if (it == followers_.end()) return;
  auto& v = it->second;
  const auto gone = std::remove(v.begin(), v.end(), follower);
  follower_count_ -= static_cast<size_t>(v.end() - gone);
  v.erase(gone, v.end());
  if (v.empty()) followers_.erase(it);
}

absl::Status LogKeeper::DeleteJob(core::JobId job) {
  std::lock_guard lock(mu_);
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    it = it->second.job == job ? attempts_.erase(it) : std::next(it);
  }
  for (auto it = followers_.lower_bound(core::TaskKey{job, 0});
       it != followers_.end() && it->first.job == job;) {
    for (const auto& f : it->second) f->Close();
    follower_count_ -= it->second.size();
    it = followers_.erase(it);
  }
  std::error_code ec;
  fs::remove_all(fs::path(options_.dir) / std::to_string(job), ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot remove the logs of job ", job, " under ",
                                            options_.dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace idlepool::coordinator
