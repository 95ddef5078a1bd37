// SandboxSlots: the worker's task sandboxes (sandbox/), one per slot, each started once and
// reused by every attempt the slot runs while its network and devices stay the same.
//
// An attempt takes the lowest free slot number when it is assigned (Acquire) and gives it back
// when its runner is done with it (Release), after its last process is gone. Its task and
// checkpoint dirs live in WORK_DIR/slots/<slot>/ (AttemptPaths::InSlot), the only part of the
// work dir its sandbox shows; the runner empties them out of the slot when the attempt ends, so
// the next attempt in the slot never sees them. Launch (re)starts the slot's sandbox when it
// has none, when the one it has was made for another network or other devices, or when it died.
// In tier uid each slot runs as its own uid and gid (Settings::uid_base + slot): Owner says
// whose the slot's files must be.
//
// Thread safety: any thread; one mutex guards the slot table. A slot's sandbox is used only by
// the thread holding the slot. Ownership: owns the sandboxes; destroying it ends them all (and
// any task in them). Errors: Launch's, from sandbox::SlotSandbox (kFailedPrecondition when the
// sandbox cannot start: a machine fault, not the task's).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "platform/process.h"
#include "sandbox/probe.h"
#include "sandbox/slot_sandbox.h"
#include "worker/launcher.h"

namespace idlepool::worker {

class SandboxSlots {
 public:
  explicit SandboxSlots(sandbox::Settings settings) : settings_(std::move(settings)) {}

  const sandbox::Settings& settings() const { return settings_; }
  // The lowest free slot, now taken; its dir exists (owned by the slot's user in tier uid).
  int Acquire();
  void Release(int slot);
  std::string SlotDir(int slot) const;
  // The uid and gid a slot's files must belong to (tier uid); nullopt: the worker's own.
  std::optional<std::pair<uid_t, gid_t>> Owner(int slot) const;

  [[nodiscard]] absl::StatusOr<std::unique_ptr<TaskProcess>> Launch(
      int slot, const platform::SpawnOptions& opts, bool host_network,
      const std::vector<std::string>& devices);

  // A socket connected to 127.0.0.1:`port` inside the slot's sandbox (SlotSandbox::
  // ConnectLoopback): how the replica tunnel reaches a service replica. kUnavailable when the
  // slot has no live sandbox or nothing listens there. Holds the slot table's lock for the
  // connect (a loopback round trip through the agent), so calls are one at a time.
  [[nodiscard]] absl::StatusOr<platform::UniqueFd> ConnectLoopback(int slot, uint16_t port);

 private:
  const sandbox::Settings settings_;
  std::mutex mu_;
  std::vector<bool> used_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::unique_ptr<sandbox::SlotSandbox>> sandboxes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace idlepool::worker
