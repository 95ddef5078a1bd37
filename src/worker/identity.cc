#include "worker/identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "idlepool.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "platform/write_file.h"
#include "trust.grpc.pb.h"
#include "trust/ca.h"
#include "trust/pinned_fetch.h"
#include "trust/token.h"
#include "wire/wire.h"

namespace idlepool::worker {
namespace {

namespace fs = std::filesystem;
constexpr auto kJoinTimeout = std::chrono::seconds(15);

absl::StatusOr<std::string> ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::DataLossError(absl::StrCat("cannot read ", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes the identity: key last-but-one, meta last (its presence means "complete").
absl::Status Save(const Identity& id, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);
  const fs::path d(dir);
  if (auto st = platform::WriteFileAtomically((d / "ca.pem").string(), id.tls.ca_pem, 0644);
      !st.ok())
    return st;
  if (auto st = platform::WriteFileAtomically((d / "cert.pem").string(), id.tls.cert_pem, 0644);
      !st.ok())
    return st;
  if (auto st = platform::WriteFileAtomically((d / "key.pem").string(), id.tls.key_pem, 0600);
      !st.ok())
    return st;
  nlohmann::json meta = {{"name", id.name},
                         {"coordinator", id.coordinator},
                         {"not_before", id.not_before},
                         {"not_after", id.not_after}};
  return platform::WriteFileAtomically((d / "identity.json").string(), meta.dump(2) + "\n", 0600);
}

void Adopt(const v1::JoinReply& reply, Identity* id) {
  id->name = reply.name();
  id->tls.cert_pem = reply.cert_pem();
  id->tls.ca_pem = reply.ca_pem();
  id->not_before = reply.not_before_unix_s();
  id->not_after = reply.not_after_unix_s();
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address,
                                         std::shared_ptr<grpc::ChannelCredentials> creds) {
  return grpc::CreateChannel(address, std::move(creds));
}

absl::Status FromCall(const grpc::Status& st, const std::string& address) {
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("cannot reach ", address, ": ", st.error_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat(address, " refused: ", st.error_message()));
}

}  // namespace

std::string IdentityDir(const std::string& work_dir) {
  return (fs::path(work_dir) / "identity").string();
}

absl::StatusOr<std::optional<Identity>> LoadIdentity(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::exists(d / "identity.json", ec)) {
    if (ec) return absl::DataLossError(absl::StrCat("cannot read ", dir, ": ", ec.message()));
    return std::optional<Identity>();
  }
  Identity id;
  auto meta = ReadAll(d / "identity.json");
  if (!meta.ok()) return meta.status();
  auto j = nlohmann::json::parse(*meta, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["name"].is_string() || !j["coordinator"].is_string()) {
    return absl::DataLossError(absl::StrCat((d / "identity.json").string(), " is damaged"));
  }
  id.name = j["name"];
  id.coordinator = j["coordinator"];
  id.not_before = j.value("not_before", int64_t{0});
  id.not_after = j.value("not_after", int64_t{0});
  for (auto [file, out] :
       {std::pair{"key.pem", &id.tls.key_pem}, std::pair{"cert.pem", &id.tls.cert_pem},
        std::pair{"ca.pem", &id.tls.ca_pem}}) {
    auto data = ReadAll(d / file);
    if (!data.ok()) return data.status();
    *out = std::move(*data);
  }
  return std::optional<Identity>(std::move(id));
}

absl::StatusOr<Identity> Join(const std::string& coordinator, const std::string& token,
                              const std::string& name, const std::string& dir) {
  auto parts = trust::ParseToken(token);
  if (!parts.ok()) return parts.status();
  if (parts->kind != trust::TokenKind::kJoin) {
    return absl::InvalidArgumentError(
        "this is an access token (ipt1_); a worker joins with a join token (ipj1_, from "
        "`idlepool token create --role worker`)");
  }
  // Nothing secret has been sent yet; it is only sent if the coordinator proves the pinned CA.
  auto ca = trust::FetchPinnedCa(coordinator, parts->pin, kJoinTimeout);
  if (!ca.ok()) return ca.status();
  Identity id;
  id.coordinator = coordinator;
  auto key = trust::NewPrivateKeyPem();
  if (!key.ok()) return key.status();
  auto pub = trust::PublicKeyPemOf(*key);
  if (!pub.ok()) return pub.status();
  id.tls.key_pem = *key;
  auto stub = v1::Join::NewStub(ChannelTo(coordinator, trust::CaOnlyChannelCredentials(*ca)));
  grpc::ClientContext ctx;
  ctx.set_deadline(platform::DeadlineAfter(kJoinTimeout));
  v1::JoinRequest req;
  req.set_token_id(parts->id);
  req.set_secret(parts->secret);
  req.set_name(name);
  req.set_public_key_pem(*pub);
  req.set_protocol_version(wire::kProtocolVersion);
  v1::JoinReply reply;
  if (auto st = stub->JoinPool(&ctx, req, &reply); !st.ok()) return FromCall(st, coordinator);
  Adopt(reply, &id);
  if (id.tls.ca_pem != *ca) {
    return absl::PermissionDeniedError("the coordinator answered with another CA than it showed");
  }
  if (auto st = Save(id, dir); !st.ok()) return st;
  return id;
}

bool RenewalDue(const Identity& id, int64_t now) {
  const int64_t life = id.not_after - id.not_before;
  return life > 0 && now >= id.not_before + life * 2 / 3;
}

absl::Status Renew(Identity* id, const std::string& dir) {
  auto key = trust::NewPrivateKeyPem();
  if (!key.ok()) return key.status();
  auto pub = trust::PublicKeyPemOf(*key);
  if (!pub.ok()) return pub.status();
  auto stub =
      v1::Join::NewStub(ChannelTo(id->coordinator, trust::WorkerChannelCredentials(id->tls)));
  grpc::ClientContext ctx;
  ctx.set_deadline(platform::DeadlineAfter(kJoinTimeout));
  v1::RenewRequest req;
  req.set_public_key_pem(*pub);
  v1::JoinReply reply;
  if (auto st = stub->RenewCertificate(&ctx, req, &reply); !st.ok()) {
    return FromCall(st, id->coordinator);
  }
  Identity next = *id;
  next.tls.key_pem = *key;
  Adopt(reply, &next);
  if (auto st = Save(next, dir); !st.ok()) return st;
  *id = std::move(next);
  return absl::OkStatus();
}

}  // namespace idlepool::worker
