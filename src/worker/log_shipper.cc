#include "worker/log_shipper.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "idlepool.pb.h"

namespace idlepool::worker {
namespace {

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;  // not created yet: a silent task
  return static_cast<uint64_t>(st.st_size);
}

// Appends up to `n` bytes of `path` from `at` to `out`; returns how many.
uint64_t ReadAt(const std::string& path, uint64_t at, uint64_t n, std::string* out) {
  if (n == 0) return 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const size_t before = out->size();
  out->resize(before + n);
  uint64_t got = 0;
  while (got < n) {
    const ssize_t r =
        ::pread(fd, out->data() + before + got, n - got, static_cast<off_t>(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<uint64_t>(r);
  }
  ::close(fd);
  out->resize(before + got);
  return got;
}

}  // namespace

void LogShipper::Start(StopSignal& stop) {
  thread_ = std::thread([this, &stop] {
    while (!stop.stopping()) {
      stop.WaitFor(options_.period);
      if (!stop.stopping()) Round();
    }
  });
}

void LogShipper::Join() {
  if (thread_.joinable()) thread_.join();
}

void LogShipper::Add(uint64_t id, std::string stdout_path, std::string stderr_path) {
  auto s = std::make_shared<Shipping>();
  s->paths[0] = std::move(stdout_path);
  s->paths[1] = std::move(stderr_path);
  std::lock_guard lock(mu_);
  attempts_[id] = std::move(s);
}

void LogShipper::Drop(uint64_t id) {
  std::shared_ptr<Shipping> s;
  {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    s = std::move(it->second);
    attempts_.erase(it);
  }
  std::lock_guard lock(s->mu);  // a round shipping it finishes first
  s->done = true;
}

void LogShipper::Finish(uint64_t id) {
  std::shared_ptr<Shipping> s;
  {
    std::lock_guard lock(mu_);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    s = std::move(it->second);
    attempts_.erase(it);
  }
  std::lock_guard lock(s->mu);
  if (s->done) return;
  s->done = true;
  // In order up to what the coordinator keeps, then the newest chunk of the rest.
  while (s->offset < options_.in_order_bytes && ShipOne(id, *s)) {
  }
  ShipOne(id, *s);
}

void LogShipper::Round() {
  std::vector<std::pair<uint64_t, std::shared_ptr<Shipping>>> now;
  {
    std::lock_guard lock(mu_);
    now.assign(attempts_.begin(), attempts_.end());
  }
  for (auto& [id, s] : now) {
    std::lock_guard lock(s->mu);
    if (!s->done) ShipOne(id, *s);
  }
}

bool LogShipper::ShipOne(uint64_t id, Shipping& s) {
  const uint64_t chunk = options_.chunk_bytes;
  uint64_t fresh[2];
  for (int i = 0; i < 2; ++i) {
    const uint64_t size = FileSize(s.paths[i]);
    fresh[i] = size > s.pos[i] ? size - s.pos[i] : 0;
  }
  if (fresh[0] + fresh[1] == 0) return false;
  if (s.offset >= options_.in_order_bytes && fresh[0] + fresh[1] > chunk) {
    // Live: only the newest output of each stream, the rest is a gap.
    uint64_t keep[2];
    keep[1] = std::min(fresh[1], fresh[0] > 0 ? chunk / 2 : chunk);
    keep[0] = std::min(fresh[0], chunk - keep[1]);
    for (int i = 0; i < 2; ++i) {
      s.pos[i] += fresh[i] - keep[i];
      s.offset += fresh[i] - keep[i];
      fresh[i] = keep[i];
    }
  }
  v1::WorkerMessage m;
  v1::LogChunk* c = m.mutable_log();
  c->set_attempt(id);
  c->set_offset(s.offset);
  std::string* data = c->mutable_data();
  for (int i = 0; i < 2; ++i) {
    const uint64_t want = std::min<uint64_t>(fresh[i], chunk - data->size());
    s.pos[i] += ReadAt(s.paths[i], s.pos[i], want, data);
  }
  if (data->empty()) return false;
  s.offset += data->size();
  send_(m);
  return true;
}

}  // namespace idlepool::worker
