#include "coordinator/job_owner.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace idlepool::coordinator {

grpc::Status MayChangeJob(const store::JobRecord& job, const trust::Principal& who,
                          std::string_view action) {
  const std::string& owner = job.sched.user;
  if (who.role == trust::Role::kOperator || owner.empty() || owner == who.user) {
    return grpc::Status::OK;
  }
  return grpc::Status(
      grpc::StatusCode::PERMISSION_DENIED,
      absl::StrCat("job ", job.id, " '", job.name, "' belongs to user ", owner, "; ", who.user,
                   " (role ", std::string(trust::RoleName(who.role)), ") may not ",
                   std::string(action),
                   " it: only its user may, or a token of role operator (`idlepool token create "
                   "--role operator` on the coordinator)"));
}

}  // namespace idlepool::coordinator
