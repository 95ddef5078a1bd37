#include "worker/launcher.h"

#include <utility>

namespace idlepool::worker {
namespace {

class RealProcess final : public TaskProcess {
 public:
  explicit RealProcess(std::unique_ptr<platform::Process> p) : p_(std::move(p)) {}
  platform::ExitInfo Wait(std::chrono::milliseconds timeout,
                          std::chrono::milliseconds kill_grace) override {
    return p_->Wait(timeout, kill_grace);
  }
  void Kill(int sig) override { p_->Kill(sig); }
  void Terminate(std::chrono::milliseconds grace) override { p_->Terminate(grace); }
  absl::Status Suspend() override { return p_->Suspend(); }
  void Resume() override { p_->Resume(); }
  std::vector<pid_t> TreePids() const override { return p_->TreePids(); }

 private:
  std::unique_ptr<platform::Process> p_;
};

}  // namespace

std::unique_ptr<TaskProcess> WrapProcess(std::unique_ptr<platform::Process> p) {
  return std::make_unique<RealProcess>(std::move(p));
}

absl::StatusOr<std::unique_ptr<TaskProcess>> RealLauncher::Start(
    const platform::SpawnOptions& options) {
  auto p = platform::Process::Start(options);
  if (!p.ok()) return p.status();
  return WrapProcess(std::move(*p));
}

}  // namespace idlepool::worker
