#include "sandbox/agent.h"

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "sandbox/channel.h"
#include "sandbox/landlock.h"
#include "sandbox/messages.h"
#include "sandbox/mounts.h"

namespace idlepool::sandbox {
namespace {

[[noreturn]] void Fail(Channel& ch, const std::string& why) {
  (void)ch.Send(EncodeSimple(Msg::kError, 0, why));
  ::_exit(1);
}

std::string UnshareError(int err) {
  std::string why = absl::StrCat("cannot create namespaces: ", std::strerror(err));
  if (err == EPERM || err == ENOSPC || err == EACCES) {
    absl::StrAppend(&why,
                    " (user namespaces are disabled or limited: check the sysctls "
                    "kernel.unprivileged_userns_clone, user.max_user_namespaces and "
                    "kernel.apparmor_restrict_unprivileged_userns)");
  }
  return why;
}

// Drops every capability for good: bounding set, ambient set, then the sets themselves.
absl::Status DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      return absl::InternalError(
          absl::StrCat("cannot drop capability ", cap, ": ", std::strerror(errno)));
    }
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct {
    uint32_t version;
    int pid;
  } header{0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    return absl::InternalError(absl::StrCat("cannot clear capabilities: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

[[noreturn]] void BecomeInit(Channel& ch, const Config& c) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // the outer agent gone: this namespace goes too
  ::close(kAgentConnectFd);                     // the outer agent's alone
  if (absl::Status st = MountProc(); !st.ok()) Fail(ch, std::string(st.message()));
  if (absl::Status st = DropCapabilities(); !st.ok()) Fail(ch, std::string(st.message()));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    Fail(ch, absl::StrCat("prctl: ", std::strerror(errno)));
  }
  int abi = 0;
  if (c.landlock) {
    std::vector<std::string> writable = c.scratch;
    writable.insert(writable.end(), c.writable.begin(), c.writable.end());
    auto applied = RestrictWithLandlock(writable);
    if (!applied.ok()) Fail(ch, std::string(applied.status().message()));
    abi = *applied;
  }
  if (!ch.Send(EncodeSimple(Msg::kReady, static_cast<uint64_t>(abi))).ok()) ::_exit(1);
  internal::RunInit(ch.fd(), c);
}

void TakeIds(Channel& ch, const Config& c) {
  if (::setresgid(c.gid, c.gid, c.gid) != 0) {
    Fail(ch, absl::StrCat("cannot take group ", c.gid, ": ", std::strerror(errno)));
  }
  if (c.drop_groups && ::setgroups(0, nullptr) != 0) {
    Fail(ch, absl::StrCat("cannot drop supplementary groups: ", std::strerror(errno)));
  }
  if (::setresuid(c.uid, c.uid, c.uid) != 0) {
    Fail(ch, absl::StrCat("cannot take user ", c.uid, ": ", std::strerror(errno)));
  }
}

// A TCP socket connected to 127.0.0.1:port in this process's network namespace, or -errno.
int ConnectLoopback(uint64_t port) {
  if (port == 0 || port > 65535) return -EINVAL;
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  while (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(s);
    return -err;
  }
  return s;
}

// The outer agent's loop while its init lives: answers the worker's kConnect requests on the
// connect channel (agent.h). Returns when the init ended or the worker closed that channel.
void ServeConnects(pid_t init) {
  Channel ch(kAgentConnectFd);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, init, 0));
  while (true) {
    pollfd fds[2] = {{ch.fd(), POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int n = ::poll(fds, pidfd >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN)) break;
    auto f = ch.Receive();
    if (!f.ok()) break;
    for (int fd : f->fds) ::close(fd);
    auto m = DecodeSimple(f->body);
    if (!m.ok() || m->type != Msg::kConnect) break;
    const int s = ConnectLoopback(m->value);
    const uint64_t err = s < 0 ? static_cast<uint64_t>(-s) : 0;
    const bool sent =
        ch.Send(EncodeSimple(Msg::kConnected, err), s >= 0 ? std::vector<int>{s} : std::vector<int>{})
            .ok();
    if (s >= 0) ::close(s);
    if (!sent) break;
  }
  if (pidfd >= 0) ::close(pidfd);
  ch.Shutdown();
}

}  // namespace

void AgentMain() {
  ::fcntl(kAgentChannelFd, F_SETFD, FD_CLOEXEC);  // never inherited by a task
  ::fcntl(kAgentConnectFd, F_SETFD, FD_CLOEXEC);
  Channel ch(kAgentChannelFd);
  auto setup = ch.Receive();
  if (!setup.ok()) ::_exit(1);
  auto config = DecodeSetup(setup->body);
  if (!config.ok()) Fail(ch, std::string(config.status().message()));
  const Config& c = *config;
  int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!c.host_network) flags |= CLONE_NEWNET;
  if (::unshare(flags) != 0) Fail(ch, UnshareError(errno));
  if (!ch.Send(EncodeSimple(Msg::kNeedMaps, static_cast<uint64_t>(::getpid()))).ok()) ::_exit(1);
  auto maps = ch.Receive();
  if (!maps.ok()) ::_exit(1);
  auto done = DecodeSimple(maps->body);
  if (!done.ok() || done->type != Msg::kMapsDone) ::_exit(1);
  auto sources = OpenSources(c);
  if (!sources.ok()) Fail(ch, std::string(sources.status().message()));
  TakeIds(ch, c);
  if (absl::Status st = ApplyMounts(c, *sources); !st.ok()) Fail(ch, std::string(st.message()));
  if (!c.host_network) {
    if (absl::Status st = BringUpLoopback(); !st.ok()) Fail(ch, std::string(st.message()));
  }
  if (::unshare(CLONE_NEWPID) != 0) Fail(ch, UnshareError(errno));
  const pid_t init = ::fork();
  if (init < 0) Fail(ch, absl::StrCat("fork: ", std::strerror(errno)));
  if (init == 0) BecomeInit(ch, c);
  ::close(kAgentChannelFd);  // only the init talks to the worker now
  ServeConnects(init);
  int status = 0;
  while (::waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace idlepool::sandbox
