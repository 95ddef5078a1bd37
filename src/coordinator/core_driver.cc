#include "coordinator/core_driver.h"

#include <algorithm>
#include <variant>

namespace idlepool::coordinator {

absl::Status CoreDriver::Apply(const std::vector<core::Decision>& batch) {
  if (std::any_of(batch.begin(), batch.end(), core::IsRecord)) {
    if (absl::Status st = sink_.Commit(batch); !st.ok()) return st;
  }
  target_.Committed(batch);
  for (const core::Decision& d : batch) {
    target_.Each(d);
    std::visit(
        [this](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, core::AttemptCreated>) {
            target_.AttemptCreated(v);
          } else if constexpr (std::is_same_v<T, core::AttemptEnded>) {
            target_.AttemptEnded(v);
          } else if constexpr (std::is_same_v<T, core::TaskCheckpointed>) {
            target_.TaskCheckpointed(v);
          } else if constexpr (std::is_same_v<T, core::JobChanged>) {
            target_.JobChanged(v);
          } else if constexpr (std::is_same_v<T, core::WorkerLost>) {
            target_.WorkerLost(v);
          } else if constexpr (std::is_same_v<T, core::AssignAttempt>) {
            target_.Assign(v);
          } else if constexpr (std::is_same_v<T, core::KillAttempt>) {
            target_.Kill(v);
          } else if constexpr (std::is_same_v<T, core::AckReport>) {
            target_.Ack(v);
          } else if constexpr (std::is_same_v<T, core::RefuseSession>) {
            target_.Refuse(v);
          }
          // TaskChanged, AttemptSuspended: records only, nothing for the shell to do.
        },
        d);
  }
  return absl::OkStatus();
}

}  // namespace idlepool::coordinator
