#include "coordinator/auth.h"

#include <openssl/crypto.h>

namespace idlepool::coordinator {

grpc::Status TokenCheck::operator()(const grpc::ServerContext* ctx) const {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenKey);
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "no pool token; pass --token or set IDLEPOOL_TOKEN");
  }
  const auto& got = it->second;
  if (got.size() != token_.size() || CRYPTO_memcmp(got.data(), token_.data(), got.size()) != 0) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "wrong pool token");
  }
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
