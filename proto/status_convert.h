// Canonical status codes across the wire: gRPC status <-> absl::Status. The codes are the same
// canonical set; only the types differ. Pure functions, thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace idlepool::wire {

// `what` prefixes the message ("upload of frame01.png: ..."). DEADLINE_EXCEEDED maps to
// kUnavailable: for a client both mean "try again".
absl::Status FromGrpc(const grpc::Status& s, const std::string& what);
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace idlepool::wire
