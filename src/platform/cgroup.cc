#include "platform/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "platform/clock.h"

namespace idlepool::platform {
namespace fs = std::filesystem;
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of `key` in a "key value" per line file (cgroup.events, cpu.stat), or -1.
long long KeyValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  long long v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return -1;
}

bool WaitUnpopulated(const std::string& dir, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (KeyValue(Slurp(dir + "/cgroup.events"), "populated") <= 0) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    SleepFor(std::chrono::milliseconds(2));
  }
}

void KillAndRemove(const std::string& dir) {
  std::error_code ec;
  // Children first (a task may not create any: it cannot write the parent, but be thorough).
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) KillAndRemove(it->path().string());
  }
  {
    std::ofstream k(dir + "/cgroup.kill");
    k << "1";
  }
  if (!WaitUnpopulated(dir, std::chrono::seconds(2))) {
    // cgroup.kill missing (Linux < 5.14): kill what is listed.
    std::istringstream procs(Slurp(dir + "/cgroup.procs"));
    pid_t pid;
    while (procs >> pid) ::kill(pid, SIGKILL);
    WaitUnpopulated(dir, std::chrono::seconds(2));
  }
  ::rmdir(dir.c_str());
}

}  // namespace

double SelfCpuSeconds() {
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// --- TaskCgroup ------------------------------------------------------------------------------

TaskCgroup::~TaskCgroup() {
  if (Populated()) Kill();
  WaitUnpopulated(path_, std::chrono::seconds(2));
  if (::rmdir(path_.c_str()) != 0 && errno == EBUSY) KillAndRemove(path_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

absl::Status TaskCgroup::WriteFile(const char* name, const std::string& value) const {
  int fd = ::openat(dir_fd_, name, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", path_, "/", name, ": ",
                                            std::strerror(errno)));
  }
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return absl::InternalError(absl::StrCat("cannot write ", path_, "/", name, ": ",
                                            std::strerror(err)));
  }
  return absl::OkStatus();
}

std::string TaskCgroup::ReadFile(const char* name) const {
  return Slurp(absl::StrCat(path_, "/", name));
}

absl::Status TaskCgroup::Freeze(std::chrono::milliseconds wait) {
  if (absl::Status s = WriteFile("cgroup.freeze", "1"); !s.ok()) return s;
  const auto until = std::chrono::steady_clock::now() + wait;
  while (true) {
    const std::string events = ReadFile("cgroup.events");
    if (KeyValue(events, "frozen") == 1 || KeyValue(events, "populated") == 0) {
      return absl::OkStatus();
    }
    if (std::chrono::steady_clock::now() >= until) {
      return absl::DeadlineExceededError(absl::StrCat(path_, " not frozen after ", wait.count(),
                                                      " ms"));
    }
    SleepFor(std::chrono::milliseconds(1));
  }
}

absl::Status TaskCgroup::Thaw() { return WriteFile("cgroup.freeze", "0"); }

std::vector<pid_t> TaskCgroup::Pids() const {
  std::istringstream procs(ReadFile("cgroup.procs"));
  std::vector<pid_t> out;
  pid_t pid;
  while (procs >> pid) out.push_back(pid);
  std::sort(out.begin(), out.end());
  return out;
}

void TaskCgroup::Signal(int sig) {
  std::istringstream procs(ReadFile("cgroup.procs"));
  pid_t pid;
  while (procs >> pid) ::kill(pid, sig);
}

void TaskCgroup::Kill() {
  if (!WriteFile("cgroup.kill", "1").ok()) Signal(SIGKILL);
}

bool TaskCgroup::Populated() const {
  return KeyValue(ReadFile("cgroup.events"), "populated") > 0;
}

// --- TaskCgroups -----------------------------------------------------------------------------

std::unique_ptr<TaskCgroups> TaskCgroups::Open(const std::string& tag, std::string* why) {
  std::string mount;
  {
    std::ifstream in("/proc/self/mounts");
    std::string dev, dir, type, rest;
    while (in >> dev >> dir >> type && std::getline(in, rest)) {
      if (type == "cgroup2") {
        mount = dir;
        break;
      }
    }
  }
  if (mount.empty()) {
    *why = "cgroup v2 is not mounted";
    return nullptr;
  }
  std::string self;
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) self = line.substr(3);
    }
  }
  if (self.empty() || self[0] != '/') {
    *why = "this process has no cgroup v2 group (/proc/self/cgroup)";
    return nullptr;
  }
  // " (deleted)" and similar never appear for a live process's own group.
  std::string parent = mount + (self == "/" ? "" : self) + "/idlepool-" + tag;
  if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
    *why = absl::StrCat("cannot create ", parent, ": ", std::strerror(errno),
                        " (run as root, or under systemd with Delegate=yes)");
    return nullptr;
  }
  // Prove it works before relying on it: a probe group must take a freeze.
  std::string probe = parent + "/probe";
  ::rmdir(probe.c_str());
  if (::mkdir(probe.c_str(), 0755) != 0) {
    *why = absl::StrCat("cannot create groups in ", parent, ": ", std::strerror(errno));
    return nullptr;
  }
  bool ok = fs::exists(probe + "/cgroup.freeze") && fs::exists(probe + "/cgroup.procs");
  ::rmdir(probe.c_str());
  if (!ok) {
    *why = absl::StrCat(parent, " has no cgroup.freeze (Linux < 5.2)");
    return nullptr;
  }
  return std::unique_ptr<TaskCgroups>(new TaskCgroups(parent));
}

TaskCgroups::~TaskCgroups() { ::rmdir(path_.c_str()); }  // fails (harmlessly) while non-empty

absl::StatusOr<std::unique_ptr<TaskCgroup>> TaskCgroups::Create(const std::string& name) {
  std::string dir = absl::StrCat(path_, "/", name);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno != EEXIST) {
      return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
    KillAndRemove(dir);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    ::rmdir(dir.c_str());
    return absl::InternalError(absl::StrCat("cannot open ", dir, ": ", std::strerror(err)));
  }
  return std::unique_ptr<TaskCgroup>(new TaskCgroup(dir, fd));
}

int TaskCgroups::KillLeftovers() {
  int busy = 0;
  std::error_code ec;
  for (fs::directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    const std::string dir = it->path().string();
    if (KeyValue(Slurp(dir + "/cgroup.events"), "populated") > 0) ++busy;
    KillAndRemove(dir);
  }
  return busy;
}

double TaskCgroups::CpuSeconds() const {
  long long us = KeyValue(Slurp(path_ + "/cpu.stat"), "usage_usec");
  return us > 0 ? static_cast<double>(us) / 1e6 : 0.0;
}

}  // namespace idlepool::platform
