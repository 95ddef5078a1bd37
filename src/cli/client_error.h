// A client's failed call, said in one line a person can act on: what failed, and what to do.
// gRPC's own text ("failed to connect to all addresses; ... Connection refused", "C-ares status
// is not ARES_SUCCESS ...") names neither the coordinator the client tried nor the flag that
// chose it, so every failure to reach it, to be let in, or to be understood is rewritten here:
//   - unreachable: refused (nothing listens), the name does not resolve, no answer in time;
//   - the token refused (unknown, expired, revoked: UNAUTHENTICATED) or its role too low
//     (PERMISSION_DENIED: the coordinator names the role the call needs);
//   - a coordinator that does not know the call (UNIMPLEMENTED: another idlepool version).
// Other codes keep the coordinator's message ("job 12: no such job"), prefixed with `what`.
//
// Pure functions of their arguments; thread-safe. The codes stay canonical (kUnavailable for
// unreachable, so callers may still retry), only the messages change.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace idlepool::cli {

// `st` of a call to the coordinator at `address` ("host:port") doing `what` ("submit",
// "job 12").
[[nodiscard]] absl::Status ExplainCall(const grpc::Status& st, const std::string& address,
                                       const std::string& what);

// An error of fetching the pool CA before any call (trust/pinned_fetch.h): unreachable and pin
// mismatch said the same way; anything else unchanged.
[[nodiscard]] absl::Status ExplainConnect(const absl::Status& st, const std::string& address);

// Where the address came from, for the "what to do" part of an unreachable message.
inline constexpr const char* kAddressSources =
    "--coordinator, IDLEPOOL_COORDINATOR or the address `idlepool login` saved";

}  // namespace idlepool::cli
