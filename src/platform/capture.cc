#include "platform/capture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace idlepool::platform {
namespace {

using Steady = std::chrono::steady_clock;

int RemainingMs(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

// posix_spawn of argv with stdin /dev/null, stdout `out_fd`, default signals, none blocked, in
// a process group of its own (a timeout's SIGKILL reaches whatever it started too).
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, int out_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err == 0) return pid;
  const std::string what = absl::StrCat("cannot run '", argv[0], "': ", std::strerror(err));
  if (err == ENOENT || err == EACCES || err == ENOEXEC || err == ENOTDIR) {
    return absl::NotFoundError(what);
  }
  return absl::InternalError(what);
}

// Reads `fd` into `out` (at most `max_bytes` kept) until EOF (true) or the deadline (false).
bool ReadUntilEof(int fd, Steady::time_point deadline, size_t max_bytes, std::string* out) {
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return true;  // EOF, or an error that no later read would undo
    const size_t keep =
        std::min(static_cast<size_t>(n), max_bytes - std::min(max_bytes, out->size()));
    out->append(buf, keep);
  }
}

// Reaps `pid` if it exits before the deadline; false (not reaped) otherwise.
bool ReapBy(pid_t pid, Steady::time_point deadline, int* status) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int r;
    do {
      r = ::poll(&p, 1, RemainingMs(deadline));
    } while (r < 0 && errno == EINTR);
    ::close(pidfd);
    if (r == 0) return false;
  }
  // Exited (or no pidfd: a child that closed its stdout is about to exit; wait for it).
  while (::waitpid(pid, status, 0) < 0) {
    if (errno != EINTR) return true;
  }
  return true;
}

}  // namespace

absl::StatusOr<CapturedRun> RunCapturingStdout(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout,
                                               size_t max_bytes) {
  if (argv.empty() || argv[0].empty()) return absl::InvalidArgumentError("empty command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  absl::StatusOr<pid_t> pid = Spawn(argv, fds[1]);
  ::close(fds[1]);
  if (!pid.ok()) {
    ::close(fds[0]);
    return pid.status();
  }
  const auto deadline = Steady::now() + timeout;
  CapturedRun run;
  const bool eof = ReadUntilEof(fds[0], deadline, max_bytes, &run.stdout_text);
  ::close(fds[0]);
  int status = 0;
  if (!eof || !ReapBy(*pid, deadline, &status)) {
    run.timed_out = true;
    ::kill(-*pid, SIGKILL);  // its process group: the child and anything it started
    while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
  }
  return run;
}

}  // namespace idlepool::platform
