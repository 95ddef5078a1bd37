// Who may change a job (cancel, delete, scale): its own user, through a token of role submit or
// operator, or anyone with role operator. A job submitted before users existed (user "") is any
// submitter's, as it was then. Reading is never restricted here (role read sees every job).
//
// Pure: the caller reads the job's header (store::Store::GetJobHeader) and the caller's
// principal (Authorizer::Check).
#pragma once

#include <string_view>

#include "grpcpp/grpcpp.h"
#include "store/store.h"
#include "trust/role.h"

namespace idlepool::coordinator {

// OK when `who` may `action` ("cancel", "delete", "scale") job `job`; else PERMISSION_DENIED
// naming the job's user, the caller and the role that may.
grpc::Status MayChangeJob(const store::JobRecord& job, const trust::Principal& who,
                          std::string_view action);

}  // namespace idlepool::coordinator
