// SlotSandbox: the worker's handle on one slot's sandbox agent (agent.h): started once, then
// reused for every task the slot runs while its Config (network, devices) stays the same.
//
// Start spawns `agent_exe sandbox-agent` with an empty environment, sends the Config, writes the
// agent's uid and gid maps when it asks (the uid and gid mapped to themselves; "deny" to
// setgroups unless the worker is root) and waits for kReady. Launch starts a command in it and
// returns a platform::Process adopted from the agent: the worker pumps its logs and enforces its
// timeout as for any task, signals reach the whole sandbox through the agent, and Wait returns
// once every process of the task is gone.
//
// Thread safety: Launch and the returned Process's Wait from one thread at a time (the slot's
// runner); the Process's Kill/Terminate/Suspend/Resume from any thread. One task at a time: the
// Process must be destroyed before the next Launch. Ownership: the SlotSandbox must outlive the
// Processes it launched; destroying it ends the agent and every process in the sandbox.
// Errors: Start: kFailedPrecondition with the agent's reason (namespaces disabled, a mount
// refused...), kInternal; Launch: as platform::Process::Start (kNotFound: no such command,
// kResourceExhausted: out of processes or descriptors), kUnavailable when the agent is gone.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "platform/process.h"
#include "platform/unique_fd.h"
#include "sandbox/channel.h"
#include "sandbox/messages.h"

namespace idlepool::sandbox {

class SlotSandbox {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SlotSandbox>> Start(
      const Config& config, const std::string& agent_exe);
  ~SlotSandbox();
  SlotSandbox(const SlotSandbox&) = delete;
  SlotSandbox& operator=(const SlotSandbox&) = delete;

  [[nodiscard]] absl::StatusOr<std::unique_ptr<platform::Process>> Launch(
      const platform::SpawnOptions& opts);

  const Config& config() const { return config_; }
  int landlock_abi() const { return landlock_abi_; }
  // False once the agent stopped answering: the slot needs a new sandbox.
  bool alive() const { return alive_.load(); }

  // A TCP socket connected to 127.0.0.1:`port` as the sandbox's tasks see it (their own
  // loopback under network "none"): how a worker reaches a service replica listening in its
  // sandbox. Blocking, short (a loopback connect); any thread, one request at a time.
  // Errors: kUnavailable (nothing listens there yet: ECONNREFUSED, or the agent is gone),
  // kInvalidArgument (port 0 or above 65535), kInternal otherwise.
  [[nodiscard]] absl::StatusOr<platform::UniqueFd> ConnectLoopback(uint32_t port);

  // For the adopted Process (slot_sandbox.cc): every process of the running task gets `sig`.
  void SignalTask(int sig);
  // Blocks until the agent reports the task's end.
  platform::ReapResult AwaitExit();

 private:
  SlotSandbox(Config config, pid_t agent, int fd, int connect_fd)
      : config_(std::move(config)), agent_(agent), ch_(fd), connect_ch_(connect_fd) {}
  [[nodiscard]] absl::Status Handshake();
  [[nodiscard]] absl::Status WriteMaps();

  const Config config_;
  const pid_t agent_;
  Channel ch_;
  std::mutex send_mu_;  // Launch and SignalTask may send from two threads
  Channel connect_ch_;  // kConnect requests (agent.h kAgentConnectFd)
  std::mutex connect_mu_;
  std::atomic<bool> alive_{true};
  int landlock_abi_ = 0;
};

}  // namespace idlepool::sandbox
