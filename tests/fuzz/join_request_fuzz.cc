// Fuzz target: what a joining machine sends before it has any certificate (issue 16), as the
// coordinator's Join service checks it: the token's id and secret against the credential store
// (trust/credential_store.h), the name it asks for (WorkerNameProblem) and its public key, which
// the pool CA certifies (trust/ca.h); and a token as people paste it (trust::ParseToken).
// Input: the first byte picks the surface; the rest is a serialized v1::JoinRequest, or a token.
//
// Properties, beyond not crashing: errors are the codes the headers list, in valid UTF-8, and
// never echo the secret; only the store's one live join token passes, and only with its secret;
// a certificate is issued only for a name WorkerNameProblem accepts, for that name, and verifies
// against the CA; a token that parses formats back to the same text (hex in lower case).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "coordinator/worker_input.h"
#include "fuzz_util.h"
#include "idlepool.pb.h"
#include "text/utf8.h"
#include "trust/ca.h"
#include "trust/credential_store.h"
#include "trust/token.h"

namespace idlepool::fuzz {
namespace {

constexpr int64_t kNow = 1'800'000'000;

struct Pool {
  std::unique_ptr<trust::CertificateAuthority> ca;
  std::unique_ptr<trust::CredentialStore> store;
  trust::TokenParts token;  // the one live join token
};

Pool& ThePool() {
  static Pool* pool = [] {
    auto* p = new Pool;
    const auto dir = MakeScratchDir("join_request_fuzz");
    bool created = false;
    auto ca = trust::CertificateAuthority::LoadOrCreate(dir.string(), kNow, &created);
    FUZZ_CHECK(ca.ok(), ca.status().ToString());
    p->ca = std::move(*ca);
    auto store = trust::CredentialStore::Open((dir / "trust.db").string());
    FUZZ_CHECK(store.ok(), store.status().ToString());
    p->store = std::move(*store);
    auto t = p->store->CreateToken(
        trust::NewTokenSpec{trust::TokenKind::kJoin, trust::Role::kWorker, 3600, -1, "", ""},
        p->ca->pin(), kNow);
    FUZZ_CHECK(t.ok(), t.status().ToString());
    p->token = *t;
    return p;
  }();
  return *pool;
}

// `s` came from input holding `secret`; `other` from the same input with the secret replaced by
// as many 'Z's. The message may hold the secret's text only where that text is the message's
// own words (the fuzzer finds secrets such as "should start"): then it is there either way.
void CheckMessage(const absl::Status& s, std::string_view secret, const absl::Status& other) {
  const std::string_view m(s.message().data(), s.message().size());
  FUZZ_CHECK(text::IsValidUtf8(m), s.ToString());
  if (secret.size() < 8 || m.find(secret) == std::string_view::npos) return;
  const std::string_view o(other.message().data(), other.message().size());
  FUZZ_CHECK(o.find(secret) != std::string_view::npos, s.ToString());
}
void CheckMessage(const absl::Status& s) { CheckMessage(s, "", s); }

void FuzzJoin(const v1::JoinRequest& req) {
  Pool& pool = ThePool();
  auto rec = pool.store->CheckToken(req.token_id(), req.secret(), kNow, trust::TokenKind::kJoin);
  if (!rec.ok()) {
    const std::string zs(req.secret().size(), 'Z');
    CheckMessage(
        rec.status(), req.secret(),
        pool.store->CheckToken(req.token_id(), zs, kNow, trust::TokenKind::kJoin).status());
    FUZZ_CHECK(req.token_id() != pool.token.id || req.secret() != pool.token.secret,
               rec.status().ToString());
  } else {
    FUZZ_CHECK(req.token_id() == pool.token.id && req.secret() == pool.token.secret,
               "a token passed that is not the store's");
  }
  const std::string problem = coordinator::WorkerNameProblem(req.name());
  FUZZ_CHECK(text::IsValidUtf8(problem), problem);
  if (!problem.empty() || req.name().size() > 64) return;
  auto issued = pool.ca->IssueWorker(req.public_key_pem(), req.name(), kNow);
  if (!issued.ok()) {
    CheckMessage(issued.status());
    return;
  }
  FUZZ_CHECK(pool.ca->Verify(issued->cert_pem, kNow).ok(), issued->cert_pem);
  auto info = trust::InspectCertificate(issued->cert_pem);
  FUZZ_CHECK(info.ok() && info->common_name == req.name(), req.name());
}

void FuzzToken(std::string_view text) {
  auto parts = trust::ParseToken(text);
  if (!parts.ok()) {
    const size_t dot = text.rfind('.');
    if (dot == std::string_view::npos) return CheckMessage(parts.status());
    const std::string zs =
        std::string(text.substr(0, dot + 1)) + std::string(text.size() - dot - 1, 'Z');
    CheckMessage(parts.status(), text.substr(dot + 1), trust::ParseToken(zs).status());
    return;
  }
  // Pasted text loses its surrounding white space; the pin and id are hex, read in either case
  // and kept in lower case; the secret as it is.
  const absl::string_view t =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  FUZZ_CHECK(
      absl::AsciiStrToLower(trust::FormatToken(*parts)) == absl::AsciiStrToLower(std::string(t)) &&
          absl::EndsWith(t, parts->secret),
      std::string(text));
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    idlepool::v1::JoinRequest req;
    if (req.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) {
      idlepool::fuzz::FuzzJoin(req);
    }
  } else {
    idlepool::fuzz::FuzzToken(rest);
  }
  return 0;
}
