// The pool token check every coordinator RPC starts with: the call's metadata
// "x-idlepool-token" must hold the pool token (compared in constant time), else
// PERMISSION_DENIED. Shared by the gRPC services (session, blob, probe, job).
//
// Thread-safe: immutable after construction; holds a copy of the token.
#pragma once

#include <string>
#include <utility>

#include "grpcpp/grpcpp.h"

namespace idlepool::coordinator {

inline constexpr const char* kTokenKey = "x-idlepool-token";

class TokenCheck {
 public:
  explicit TokenCheck(std::string token) : token_(std::move(token)) {}

  // OK, or PERMISSION_DENIED: "no pool token; ..." (no metadata) or "wrong pool token".
  [[nodiscard]] grpc::Status operator()(const grpc::ServerContext* ctx) const;

  const std::string& token() const { return token_; }

 private:
  const std::string token_;
};

}  // namespace idlepool::coordinator
