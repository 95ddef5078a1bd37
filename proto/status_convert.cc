#include "status_convert.h"

namespace idlepool::wire {

absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(s.error_code());
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) code = absl::StatusCode::kUnavailable;
  return absl::Status(code, what + ": " + s.error_message());
}

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace idlepool::wire
