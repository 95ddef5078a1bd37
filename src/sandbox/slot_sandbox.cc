#include "sandbox/slot_sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "platform/cgroup.h"
#include "platform/environment.h"
#include "sandbox/agent.h"

namespace idlepool::sandbox {
namespace {

class SandboxChild final : public platform::ChildControl {
 public:
  explicit SandboxChild(SlotSandbox* s) : s_(s) {}
  void SignalTask(int sig) { s_->SignalTask(sig); }
  void SignalTree(int sig) override { s_->SignalTask(sig); }
  platform::ReapResult Reap() override { return s_->AwaitExit(); }

 private:
  SlotSandbox* s_;
};

absl::Status WriteProcFile(pid_t pid, const char* name, const std::string& text) {
  const std::string path = absl::StrCat("/proc/", pid, "/", name);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("sandbox: cannot write ", path, ": ", std::strerror(err)));
  }
  ::close(fd);
  return absl::OkStatus();
}

// The host PID of a pidfd's process, from /proc/self/fdinfo ("Pid:\tN").
pid_t PidOf(int pidfd) {
  std::ifstream in(absl::StrCat("/proc/self/fdinfo/", pidfd));
  std::string key;
  while (in >> key) {
    if (key == "Pid:") {
      long pid = -1;
      in >> pid;
      return static_cast<pid_t>(pid);
    }
  }
  return -1;
}

absl::Status ExecError(const std::string& command, int err) {
  if (err < 0) {  // the task's set-up failed before its exec (agent_init.cc ExecTask)
    err = -err;
    const std::string why =
        absl::StrCat("cannot set up the task to run '", command, "': ", std::strerror(err));
    if (err == EMFILE || err == ENFILE || err == EAGAIN || err == EDQUOT) {
      return absl::ResourceExhaustedError(why);
    }
    return absl::InternalError(why);
  }
  const std::string why = absl::StrCat("cannot run '", command, "': ", std::strerror(err));
  if (err == ENOENT || err == EACCES || err == ENOEXEC || err == ENOTDIR) {
    return absl::NotFoundError(why);
  }
  if (err == EMFILE || err == ENFILE || err == EAGAIN || err == EDQUOT) {
    return absl::ResourceExhaustedError(why);  // EDQUOT: the key quota (platform/task_child.h)
  }
  return absl::InternalError(why);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlotSandbox>> SlotSandbox::Start(const Config& config,
                                                                const std::string& agent_exe) {
  int sv[2], cv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sandbox: socketpair: ", std::strerror(errno)));
  }
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cv) != 0) {
    const int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return absl::ResourceExhaustedError(absl::StrCat("sandbox: socketpair: ", std::strerror(err)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], kAgentChannelFd);
  posix_spawn_file_actions_adddup2(&actions, cv[1], kAgentConnectFd);
  // The agent, and so every task it starts, gets none of the worker's other descriptors (its
  // tunnel's listening socket and connections, its Peer port, its store files).
  posix_spawn_file_actions_addclosefrom_np(&actions, kAgentConnectFd + 1);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  char* const argv[] = {const_cast<char*>(agent_exe.c_str()), const_cast<char*>(kAgentSubcommand),
                        nullptr};
  char* const envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, agent_exe.c_str(), &actions, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  ::close(cv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    ::close(cv[0]);
    return absl::InternalError(
        absl::StrCat("sandbox: cannot start ", agent_exe, ": ", std::strerror(rc)));
  }
  std::unique_ptr<SlotSandbox> s(new SlotSandbox(config, pid, sv[0], cv[0]));
  if (absl::Status st = s->Handshake(); !st.ok()) return st;
  return s;
}

absl::Status SlotSandbox::Handshake() {
  if (absl::Status st = ch_.Send(EncodeSetup(config_)); !st.ok()) return st;
  auto expect = [this](Msg want) -> absl::StatusOr<Simple> {
    auto f = ch_.Receive();
    if (!f.ok()) return absl::FailedPreconditionError("sandbox: the agent ended during setup");
    for (int fd : f->fds) ::close(fd);
    auto m = DecodeSimple(f->body);
    if (!m.ok()) return m.status();
    if (m->type == Msg::kError) return absl::FailedPreconditionError("sandbox: " + m->text);
    if (m->type != want) return absl::InternalError("sandbox: unexpected answer from the agent");
    return *m;
  };
  if (auto m = expect(Msg::kNeedMaps); !m.ok()) return m.status();
  if (absl::Status st = WriteMaps(); !st.ok()) return st;
  if (absl::Status st = ch_.Send(EncodeSimple(Msg::kMapsDone)); !st.ok()) return st;
  auto ready = expect(Msg::kReady);
  if (!ready.ok()) return ready.status();
  landlock_abi_ = static_cast<int>(ready->value);
  return absl::OkStatus();
}

// The slot's uid and gid, each mapped to itself. A worker that is not root may map only its
// own ids and must deny setgroups first (user_namespaces(7)).
absl::Status SlotSandbox::WriteMaps() {
  if (!config_.drop_groups) {
    if (absl::Status st = WriteProcFile(agent_, "setgroups", "deny"); !st.ok()) return st;
  }
  if (absl::Status st =
          WriteProcFile(agent_, "uid_map", absl::StrCat(config_.uid, " ", config_.uid, " 1\n"));
      !st.ok()) {
    return st;
  }
  return WriteProcFile(agent_, "gid_map", absl::StrCat(config_.gid, " ", config_.gid, " 1\n"));
}

SlotSandbox::~SlotSandbox() {
  ch_.Shutdown();
  connect_ch_.Shutdown();
  ::kill(agent_, SIGKILL);  // its init follows (parent-death signal), and the namespace with it
  while (::waitpid(agent_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<std::unique_ptr<platform::Process>> SlotSandbox::Launch(
    const platform::SpawnOptions& opts) {
  if (opts.argv.empty() || opts.argv[0].empty()) {
    return absl::InvalidArgumentError("empty command");
  }
  if (!alive()) return absl::UnavailableError("sandbox: the agent is gone");
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ExecError(opts.argv[0], errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    return ExecError(opts.argv[0], e);
  }
  std::vector<int> fds = {out[1], err[1]};
  LaunchRequest q{opts.argv,        opts.env,          opts.cwd, "",
                  opts.nofile_soft, opts.low_priority, false,    opts.memory_limit_bytes};
  q.path = std::string(platform::EnvValue(opts.env, "PATH"));  // the task's own
  if (opts.cgroup != nullptr) {
    const int procs = ::openat(opts.cgroup->dir_fd(), "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs >= 0) {
      fds.push_back(procs);
      q.has_cgroup = true;
    }
  }
  absl::Status sent;
  {
    std::lock_guard lock(send_mu_);
    sent = ch_.Send(EncodeLaunch(q), fds);
  }
  for (int fd : fds) ::close(fd);
  auto close_reads = [&] {
    ::close(out[0]);
    ::close(err[0]);
  };
  if (!sent.ok()) {
    close_reads();
    alive_ = false;
    return absl::UnavailableError("sandbox: the agent is gone");
  }
  auto f = ch_.Receive();
  auto m = f.ok() ? DecodeSimple(f->body) : absl::StatusOr<Simple>(f.status());
  if (!m.ok() || m->type == Msg::kError || (m->type == Msg::kStarted && f->fds.size() != 1)) {
    if (f.ok()) {
      for (int fd : f->fds) ::close(fd);
    }
    close_reads();
    alive_ = false;
    return absl::UnavailableError(
        absl::StrCat("sandbox: the agent failed: ", m.ok() ? m->text : m.status().message()));
  }
  if (m->type == Msg::kExecFailed) {
    close_reads();
    return ExecError(opts.argv[0], static_cast<int>(m->value));
  }
  const int pidfd = f->fds[0];
  auto control = std::make_unique<SandboxChild>(this);
  return platform::Process::Adopt(
      platform::AdoptedChild{PidOf(pidfd), pidfd, out[0], err[0], std::move(control)}, opts);
}

absl::StatusOr<platform::UniqueFd> SlotSandbox::ConnectLoopback(uint32_t port) {
  if (port == 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("sandbox: no such port ", port));
  }
  std::lock_guard lock(connect_mu_);
  if (!alive() || !connect_ch_.Send(EncodeSimple(Msg::kConnect, port)).ok()) {
    return absl::UnavailableError("sandbox: the agent is gone");
  }
  auto f = connect_ch_.Receive();
  if (!f.ok()) return absl::UnavailableError("sandbox: the agent is gone");
  auto m = DecodeSimple(f->body);
  if (!m.ok() || m->type != Msg::kConnected || (m->value == 0) != (f->fds.size() == 1)) {
    for (int fd : f->fds) ::close(fd);
    return absl::InternalError("sandbox: unexpected answer to a connect");
  }
  if (m->value != 0) {
    const int err = static_cast<int>(m->value);
    const std::string why =
        absl::StrCat("sandbox: connect to its 127.0.0.1:", port, ": ", std::strerror(err));
    return err == ECONNREFUSED ? absl::UnavailableError(why) : absl::InternalError(why);
  }
  return platform::UniqueFd(f->fds[0]);
}

void SlotSandbox::SignalTask(int sig) {
  std::lock_guard lock(send_mu_);
  if (alive()) (void)ch_.Send(EncodeSimple(Msg::kSignal, static_cast<uint64_t>(sig)));
}

platform::ReapResult SlotSandbox::AwaitExit() {
  while (alive()) {
    auto f = ch_.Receive();
    if (!f.ok()) break;
    for (int fd : f->fds) ::close(fd);
    auto type = TypeOf(f->body);
    if (!type.ok() || *type != Msg::kExited) continue;
    auto e = DecodeExited(f->body);
    if (!e.ok()) break;
    return platform::ReapResult{e->wait_status, e->pids_limit, e->memory_limit, e->disk_limit};
  }
  // The agent died (killed from outside, out of memory): so did every process it held.
  alive_ = false;
  return platform::ReapResult{SIGKILL, false};
}

}  // namespace idlepool::sandbox
