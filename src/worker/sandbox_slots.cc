#include "worker/sandbox_slots.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace idlepool::worker {

int SandboxSlots::Acquire() {
  int slot = 0;
  {
    std::lock_guard lock(mu_);
    while (slot < static_cast<int>(used_.size()) && used_[slot]) ++slot;
    if (slot == static_cast<int>(used_.size())) used_.push_back(false);
    used_[slot] = true;
  }
  // The slot dir stays the worker's (read-only inside); its task/ and checkpoint/ are the task's.
  const std::string dir = SlotDir(slot);
  for (const std::string sub : {"/task", "/checkpoint"}) {
    std::error_code ec;
    std::filesystem::create_directories(dir + sub, ec);
    if (ec) spdlog::warn("cannot create {}{}: {}", dir, sub, ec.message());
    if (auto owner = Owner(slot);
        owner && ::chown((dir + sub).c_str(), owner->first, owner->second) != 0) {
      spdlog::warn("cannot give {}{} to uid {}: {}", dir, sub, owner->first, std::strerror(errno));
    }
  }
  return slot;
}

void SandboxSlots::Release(int slot) {
  std::lock_guard lock(mu_);
  if (slot >= 0 && slot < static_cast<int>(used_.size())) used_[slot] = false;
}

std::string SandboxSlots::SlotDir(int slot) const {
  return absl::StrCat(settings_.work_dir, "/slots/", slot);
}

std::optional<std::pair<uid_t, gid_t>> SandboxSlots::Owner(int slot) const {
  if (settings_.tier != sandbox::Tier::kUid) return std::nullopt;
  const auto id = static_cast<uid_t>(settings_.uid_base + static_cast<uint64_t>(slot));
  return std::make_pair(id, static_cast<gid_t>(id));
}

absl::StatusOr<std::unique_ptr<TaskProcess>> SandboxSlots::Launch(
    int slot, const platform::SpawnOptions& opts, bool host_network,
    const std::vector<std::string>& devices) {
  const sandbox::Config want =
      sandbox::ConfigFor(settings_, slot, SlotDir(slot), host_network, devices);
  sandbox::SlotSandbox* sb = nullptr;
  std::unique_ptr<sandbox::SlotSandbox> old;
  {
    std::lock_guard lock(mu_);
    auto& held = sandboxes_[slot];
    if (held && held->alive() && held->config().host_network == host_network &&
        held->config().devices == want.devices) {
      sb = held.get();
    } else {
      old = std::move(held);
    }
  }
  old.reset();  // outside the lock: ending an agent waits for it
  if (sb == nullptr) {
    auto started = sandbox::SlotSandbox::Start(want, settings_.agent_exe);
    if (!started.ok()) return started.status();
    std::lock_guard lock(mu_);
    sandboxes_[slot] = std::move(*started);
    sb = sandboxes_[slot].get();
  }
  platform::SpawnOptions limited = opts;
  // A job that states no memory_mb gets the owner's default (sandbox/limits.h).
  if (limited.memory_limit_bytes == 0) limited.memory_limit_bytes = settings_.task_memory_bytes;
  auto p = sb->Launch(limited);
  if (!p.ok()) return p.status();
  return WrapProcess(std::move(*p));
}

absl::StatusOr<platform::UniqueFd> SandboxSlots::ConnectLoopback(int slot, uint16_t port) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(slot);
  if (it == sandboxes_.end() || !it->second || !it->second->alive()) {
    return absl::UnavailableError("the slot's sandbox is not running");
  }
  return it->second->ConnectLoopback(port);
}

}  // namespace idlepool::worker
