// src/trust: the pool CA and what it issues (checked with OpenSSL's own verifier and host and IP
// matchers), tokens, the credential store on a real SQLite file, and the pinned fetch of a CA
// against an in-process OpenSSL TLS server on 127.0.0.1.
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trust/ca.h"
#include "trust/credential_store.h"
#include "trust/pinned_fetch.h"
#include "trust/role.h"
#include "trust/token.h"

namespace idlepool::trust {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A fixed "now" for everything that does not meet OpenSSL's own clock: 2026-01-01T00:00:00Z.
constexpr int64_t kNow = 1767225600;

// A fresh directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::path(::testing::TempDir()) / "trust_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<CertificateAuthority> MakeCa(const std::string& dir, int64_t now = kNow) {
  absl::StatusOr<std::unique_ptr<CertificateAuthority>> ca =
      CertificateAuthority::LoadOrCreate(dir, now, nullptr);
  if (!ca.ok()) ADD_FAILURE() << ca.status();
  return ca.ok() ? *std::move(ca) : nullptr;
}

struct KeyPair {
  std::string private_pem, public_pem;
};
KeyPair NewKeyPair() {
  absl::StatusOr<std::string> priv = NewPrivateKeyPem();
  EXPECT_TRUE(priv.ok()) << priv.status();
  absl::StatusOr<std::string> pub = PublicKeyPemOf(*priv);
  EXPECT_TRUE(pub.ok()) << pub.status();
  return {*priv, *pub};
}

using X509Owned = std::unique_ptr<X509, decltype(&X509_free)>;
X509Owned ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Owned cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr), &X509_free);
  BIO_free(bio);
  EXPECT_NE(cert, nullptr);
  return cert;
}

// ---- roles

TEST(TrustRoleTest, NamesRoundTrip) {
  for (Role r : {Role::kWorker, Role::kSubmit, Role::kRead, Role::kAdmin}) {
    EXPECT_EQ(ParseRole(RoleName(r)), r);
  }
  EXPECT_EQ(ParseRole("root"), std::nullopt);
  EXPECT_EQ(ParseRole("Admin"), std::nullopt);
  RoleSet set = RoleSet(Role::kSubmit) | Role::kRead;
  EXPECT_TRUE(set.Has(Role::kRead));
  EXPECT_FALSE(set.Has(Role::kAdmin));
}

// ---- the CA

TEST(TrustCaTest, CreatesOnceThenLoadsTheSameCa) {
  TempDir dir;
  bool created = false;
  auto first = CertificateAuthority::LoadOrCreate(dir.path(), kNow, &created);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(created);
  EXPECT_THAT((*first)->pin(), ::testing::MatchesRegex("[0-9a-f]{64}"));

  struct stat st;
  ASSERT_EQ(::stat((dir / "ca.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(dir / "ca.key.tmp"));

  auto second = CertificateAuthority::LoadOrCreate(dir.path(), kNow + 86400, &created);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(created);
  EXPECT_EQ((*second)->pin(), (*first)->pin());
  EXPECT_EQ((*second)->cert_pem(), (*first)->cert_pem());
  EXPECT_EQ(CertPin((*second)->cert_pem()).value_or(""), (*first)->pin());
  EXPECT_EQ(PublicKeyPin(ReadAll(dir / "ca.key")).value_or(""), (*first)->pin());

  absl::StatusOr<CertInfo> info = InspectCertificate((*first)->cert_pem());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->role, "ca");
  EXPECT_EQ(info->not_after - kNow, kCaValiditySeconds);
  X509Owned cert = ParseCert((*first)->cert_pem());
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
}

TEST(TrustCaTest, CreatesAMissingDataDir) {
  TempDir dir;
  auto ca = CertificateAuthority::LoadOrCreate(dir / "data", kNow, nullptr);
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_TRUE(fs::exists(dir / "data/ca.pem"));
}

TEST(TrustCaTest, OneFileWithoutTheOtherIsDataLoss) {
  for (const char* missing : {"ca.pem", "ca.key"}) {
    TempDir dir;
    ASSERT_NE(MakeCa(dir.path()), nullptr);
    fs::remove(dir / missing);
    auto ca = CertificateAuthority::LoadOrCreate(dir.path(), kNow, nullptr);
    EXPECT_EQ(ca.status().code(), absl::StatusCode::kDataLoss) << missing;
    EXPECT_THAT(ca.status().message(), HasSubstr(dir / missing));
    EXPECT_FALSE(fs::exists(dir / missing)) << "a half CA must not be completed silently";
  }
}

TEST(TrustCaTest, CertificateOfAnotherKeyIsDataLoss) {
  TempDir a, b;
  ASSERT_NE(MakeCa(a.path()), nullptr);
  ASSERT_NE(MakeCa(b.path()), nullptr);
  fs::copy_file(b / "ca.pem", a / "ca.pem", fs::copy_options::overwrite_existing);
  auto ca = CertificateAuthority::LoadOrCreate(a.path(), kNow, nullptr);
  EXPECT_EQ(ca.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(ca.status().message(), HasSubstr("does not match"));

  std::ofstream(a / "ca.key") << "not a key\n";
  ca = CertificateAuthority::LoadOrCreate(a.path(), kNow, nullptr);
  EXPECT_EQ(ca.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(ca.status().message(), HasSubstr(a / "ca.key"));
}

TEST(TrustCaTest, WorkerCertificateVerifiesAgainstItsCaOnly) {
  TempDir a, b;
  auto ca = MakeCa(a.path());
  auto other = MakeCa(b.path());
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(other, nullptr);
  KeyPair key = NewKeyPair();
  absl::StatusOr<Issued> issued = ca->IssueWorker(key.public_pem, "render-01", kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();

  EXPECT_TRUE(ca->Verify(issued->cert_pem, kNow).ok());
  absl::Status s = other->Verify(issued->cert_pem, kNow);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  // The certificate holds the worker's key, whichever way its pin is taken.
  EXPECT_EQ(CertPin(issued->cert_pem).value_or("a"), PublicKeyPin(key.public_pem).value_or("b"));
  EXPECT_EQ(PublicKeyPin(key.private_pem).value_or("c"), PublicKeyPin(key.public_pem).value_or(""));
  // The leaf names its issuer's key, as chain builders look it up.
  X509Owned leaf = ParseCert(issued->cert_pem), root = ParseCert(ca->cert_pem());
  const ASN1_OCTET_STRING* aki = X509_get0_authority_key_id(leaf.get());
  ASSERT_NE(aki, nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(aki, X509_get0_subject_key_id(root.get())), 0);
}

TEST(TrustCaTest, VerifyRespectsTheValidityWindow) {
  TempDir dir;
  auto ca = MakeCa(dir.path());
  ASSERT_NE(ca, nullptr);
  const int64_t validity = 3600;
  absl::StatusOr<Issued> issued = ca->IssueWorker(NewKeyPair().public_pem, "w", kNow, validity);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_TRUE(ca->Verify(issued->cert_pem, kNow + validity - 1).ok());
  EXPECT_TRUE(ca->Verify(issued->cert_pem, kNow - 60).ok()) << "backdated for slow clocks";

  absl::Status late = ca->Verify(issued->cert_pem, kNow + validity + 1);
  EXPECT_EQ(late.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(late.message(), HasSubstr("expired"));
  absl::Status early = ca->Verify(issued->cert_pem, kNow - 3600);
  EXPECT_EQ(early.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(early.message(), HasSubstr("not yet valid"));
}

TEST(TrustCaTest, InspectCertificateReadsWhatWasIssued) {
  TempDir dir;
  auto ca = MakeCa(dir.path());
  ASSERT_NE(ca, nullptr);
  KeyPair key = NewKeyPair();
  absl::StatusOr<Issued> a = ca->IssueWorker(key.public_pem, "gpu-box", kNow);
  absl::StatusOr<Issued> b = ca->IssueWorker(key.public_pem, "gpu-box", kNow);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<CertInfo> info = InspectCertificate(a->cert_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->common_name, "gpu-box");
  EXPECT_EQ(info->role, "worker");
  EXPECT_EQ(info->serial_hex, a->serial_hex);
  EXPECT_THAT(info->serial_hex, ::testing::MatchesRegex("[0-9a-f]{32}"));
  EXPECT_NE(a->serial_hex, b->serial_hex);
  EXPECT_EQ(info->not_before, kNow - 300);
  EXPECT_EQ(info->not_after, kNow + kWorkerValiditySeconds);
  EXPECT_EQ(a->not_before, info->not_before);
  EXPECT_EQ(a->not_after, info->not_after);

  X509Owned cert = ParseCert(a->cert_pem);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_host(cert.get(), kWorkerSanName, 0, 0, nullptr), 1);
}

TEST(TrustCaTest, GatewayCertificateIsAClientOnlyCertificateOfItsCa) {
  TempDir a, b;
  auto ca = MakeCa(a.path());
  auto other = MakeCa(b.path());
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(other, nullptr);
  absl::StatusOr<Issued> issued = ca->IssueGateway(NewKeyPair().public_pem, "coordinator", kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();
  absl::StatusOr<CertInfo> info = InspectCertificate(issued->cert_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->common_name, "coordinator");
  EXPECT_EQ(info->role, "gateway");
  EXPECT_EQ(info->not_before, kNow - 300);
  EXPECT_EQ(info->not_after, kNow + kServerValiditySeconds);
  EXPECT_TRUE(ca->Verify(issued->cert_pem, kNow).ok());
  EXPECT_EQ(other->Verify(issued->cert_pem, kNow).code(), absl::StatusCode::kPermissionDenied);

  // It authenticates a client; it can serve neither as a worker nor as the coordinator.
  X509Owned cert = ParseCert(issued->cert_pem);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 0);
  EXPECT_NE(X509_check_host(cert.get(), kWorkerSanName, 0, 0, nullptr), 1);

  EXPECT_EQ(ca->IssueGateway(NewKeyPair().public_pem, "", kNow).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ca->IssueGateway(NewKeyPair().public_pem, "g", kNow, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TrustCaTest, ServerCertificateHasIpAndDnsNamesApart) {
  TempDir dir;
  auto ca = MakeCa(dir.path());
  ASSERT_NE(ca, nullptr);
  absl::StatusOr<Issued> issued =
      ca->IssueServer(NewKeyPair().public_pem, {"127.0.0.1", "::1", "coord.example"}, kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();
  X509Owned cert = ParseCert(issued->cert_pem);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.1", 0), 0);
  EXPECT_EQ(X509_check_host(cert.get(), "coord.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "127.0.0.1", 0, 0, nullptr), 0) << "an IP is no DNS name";
  EXPECT_EQ(X509_check_host(cert.get(), "other.example", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 0);
  absl::StatusOr<CertInfo> info = InspectCertificate(issued->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->common_name, "idlepool coordinator");
  EXPECT_EQ(info->role, "coordinator");
  EXPECT_TRUE(ca->Verify(issued->cert_pem, kNow).ok());
}

TEST(TrustCaTest, RefusesMalformedInput) {
  TempDir dir;
  auto ca = MakeCa(dir.path());
  ASSERT_NE(ca, nullptr);
  const std::string pub = NewKeyPair().public_pem;
  auto code = [](const auto& r) { return r.status().code(); };
  EXPECT_EQ(code(ca->IssueWorker("not pem", "w", kNow)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ca->IssueWorker(pub, "", kNow)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ca->IssueWorker(pub, std::string(65, 'w'), kNow)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ca->IssueServer(pub, {"a b"}, kNow)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ca->IssueServer(pub, {"x,IP:1.2.3.4"}, kNow)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ca->Verify("garbage", kNow).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(InspectCertificate("")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(PublicKeyPemOf(pub)), absl::StatusCode::kInvalidArgument);
}

// ---- tokens

const std::string kPin(64, 'a');

TEST(TrustTokenTest, FormatAndParseRoundTrip) {
  for (TokenKind kind : {TokenKind::kJoin, TokenKind::kAccess}) {
    TokenParts parts = NewToken(kind, kPin);
    const std::string text = FormatToken(parts);
    EXPECT_THAT(text, ::testing::MatchesRegex(kind == TokenKind::kJoin
                                                  ? "ipj1_a{64}_[0-9a-f]{12}\\.[A-Za-z0-9_-]{43}"
                                                  : "ipt1_a{64}_[0-9a-f]{12}\\.[A-Za-z0-9_-]{43}"));
    absl::StatusOr<TokenParts> back = ParseToken(text + "\n");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->kind, kind);
    EXPECT_EQ(back->pin, kPin);
    EXPECT_EQ(back->id, parts.id);
    EXPECT_EQ(back->secret, parts.secret);
  }
  TokenParts a = NewToken(TokenKind::kJoin, kPin), b = NewToken(TokenKind::kJoin, kPin);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.secret, b.secret);
}

TEST(TrustTokenTest, RejectsMalformedTokensWithoutEchoingTheSecret) {
  const std::string secret = "Zm9vYmFyYmF6cXV4LXNlY3JldC12YWx1ZS0xMjM0NTY";  // 43 characters
  ASSERT_EQ(secret.size(), 43u);
  const std::string id = "0123456789ab";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"ipx1_" + kPin + "_" + id + "." + secret, "should start with ipj1_ or ipt1_"},
      {"ipj1_" + kPin.substr(1) + "_" + id + "." + secret, "the CA pin should be 64 hex digits"},
      {"ipj1_" + std::string(64, 'g') + "_" + id + "." + secret, "the CA pin should be 64 hex"},
      {"ipj1_" + kPin + id + "." + secret, "the CA pin"},
      {"ipj1_" + kPin + "_" + id + "0." + secret, "the token id should be 12 hex digits"},
      {"ipj1_" + kPin + "_" + id + secret, "the token id"},
      {"ipj1_" + kPin + "_" + id + "." + secret.substr(1), "43 characters of base64url"},
      {"ipj1_" + kPin + "_" + id + "." + secret.substr(1) + "+", "base64url"},
      {"ipj1_" + kPin + "_" + id + "." + secret + "=", "base64url"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TokenParts> parsed = ParseToken(c.text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.expect)) << c.text;
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr(secret.substr(1, 12)))) << c.text;
  }
}

TEST(TrustTokenTest, HashesSecretsWithSha256) {
  EXPECT_EQ(HashSecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(SameHash(HashSecret("abc"), HashSecret("abc")));
  EXPECT_FALSE(SameHash(HashSecret("abc"), HashSecret("abd")));
  EXPECT_FALSE(SameHash(HashSecret("abc"), HashSecret("abc").substr(1)));
}

// ---- the credential store

class CredentialStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<CredentialStore>> s = CredentialStore::Open(path_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }
  TokenParts Create(TokenKind kind, Role role, int64_t ttl, int64_t uses,
                    const std::string& name = "", const std::string& user = "") {
    absl::StatusOr<TokenParts> t =
        store_->CreateToken(NewTokenSpec{kind, role, ttl, uses, name, user}, kPin, kNow);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(TokenParts{});
  }

  TempDir dir_;
  const std::string path_ = dir_ / "trust.db";
  std::unique_ptr<CredentialStore> store_;
};

TEST_F(CredentialStoreTest, FileIsPrivateAndHoldsNoSecret) {
  TokenParts t = Create(TokenKind::kAccess, Role::kSubmit, 0, -1);
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  store_.reset();  // closing checkpoints the WAL into the file
  const std::string bytes = ReadAll(path_) + ReadAll(path_ + "-wal");
  EXPECT_THAT(bytes, Not(HasSubstr(t.secret)));
  EXPECT_THAT(bytes, HasSubstr(HashSecret(t.secret)));
  EXPECT_THAT(bytes, HasSubstr(t.id));
}

TEST_F(CredentialStoreTest, JoinTokenIsSpentAfterItsUses) {
  TokenParts once = Create(TokenKind::kJoin, Role::kWorker, 0, 1, "render-01");
  absl::StatusOr<TokenRecord> r = store_->SpendToken(once.id, once.secret, kNow + 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->role, Role::kWorker);
  EXPECT_EQ(r->name, "render-01");
  EXPECT_EQ(r->uses_left, 0);
  r = store_->SpendToken(once.id, once.secret, kNow + 2);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("spent"));

  TokenParts twice = Create(TokenKind::kJoin, Role::kWorker, 0, 2);
  EXPECT_EQ(store_->SpendToken(twice.id, twice.secret, kNow).value().uses_left, 1);
  EXPECT_EQ(store_->SpendToken(twice.id, twice.secret, kNow).value().uses_left, 0);
  EXPECT_FALSE(store_->SpendToken(twice.id, twice.secret, kNow).ok());
}

TEST_F(CredentialStoreTest, ConcurrentSpendsNeverExceedTheUses) {
  TokenParts t = Create(TokenKind::kJoin, Role::kWorker, 0, 5);
  std::atomic<int> spent{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (store_->SpendToken(t.id, t.secret, kNow).ok()) ++spent;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(spent.load(), 5);
}

TEST_F(CredentialStoreTest, AccessTokenChecks) {
  TokenParts t = Create(TokenKind::kAccess, Role::kRead, 0, -1, "grafana");
  absl::StatusOr<TokenRecord> r = store_->CheckToken(t.id, t.secret, kNow + 100000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->role, Role::kRead);
  EXPECT_EQ(r->name, "grafana");
  EXPECT_EQ(r->uses_left, -1);
  EXPECT_EQ(r->created, kNow);

  const std::string wrong = NewToken(TokenKind::kAccess, kPin).secret;
  r = store_->CheckToken(t.id, wrong, kNow);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(r.status().message(), HasSubstr("wrong secret for token " + t.id));
  EXPECT_THAT(r.status().message(), Not(HasSubstr(wrong)));
  EXPECT_THAT(r.status().message(), Not(HasSubstr(t.secret)));
  EXPECT_EQ(store_->CheckToken("0000000000ff", t.secret, kNow).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CredentialStoreTest, KindsAreNotInterchangeable) {
  TokenParts join = Create(TokenKind::kJoin, Role::kWorker, 0, 1);
  TokenParts access = Create(TokenKind::kAccess, Role::kSubmit, 0, -1);
  EXPECT_EQ(store_->CheckToken(join.id, join.secret, kNow).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->SpendToken(access.id, access.secret, kNow).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_->SpendToken(join.id, join.secret, kNow).ok()) << "not spent by the refusal";
  auto code = [&](TokenKind k, Role r, int64_t ttl, int64_t uses) {
    return store_->CreateToken(NewTokenSpec{k, r, ttl, uses, "", ""}, kPin, kNow).status().code();
  };
  EXPECT_EQ(code(TokenKind::kJoin, Role::kSubmit, 0, 1), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kAccess, Role::kAdmin, 0, -1), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kJoin, Role::kWorker, 0, 0), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kJoin, Role::kWorker, -1, 1), absl::StatusCode::kInvalidArgument);
}

// An access token acts for its --user, else its name when that is a user name, else its id; a
// join token for nobody; an operator token is an access token; bad user names are refused.
TEST_F(CredentialStoreTest, AccessTokensActForAUser) {
  TokenParts alice = Create(TokenKind::kAccess, Role::kSubmit, 0, -1, "laptop", "alice");
  TokenParts named = Create(TokenKind::kAccess, Role::kSubmit, 0, -1, "bob");
  TokenParts spaced = Create(TokenKind::kAccess, Role::kRead, 0, -1, "idlepool run");
  TokenParts op = Create(TokenKind::kAccess, Role::kOperator, 0, -1, "", "carol");
  TokenParts join = Create(TokenKind::kJoin, Role::kWorker, 0, 1, "w1");
  EXPECT_EQ(store_->CheckToken(alice.id, alice.secret, kNow)->user, "alice");
  EXPECT_EQ(store_->CheckToken(named.id, named.secret, kNow)->user, "bob");
  EXPECT_EQ(store_->CheckToken(spaced.id, spaced.secret, kNow)->user, spaced.id);
  EXPECT_EQ(store_->CheckToken(op.id, op.secret, kNow)->role, Role::kOperator);
  EXPECT_EQ(store_->SpendToken(join.id, join.secret, kNow)->user, "");
  Reopen();  // kept
  EXPECT_EQ(store_->CheckToken(alice.id, alice.secret, kNow)->user, "alice");
  auto code = [&](TokenKind k, Role r, const std::string& user) {
    return store_
        ->CreateToken(NewTokenSpec{k, r, 0, k == TokenKind::kJoin ? 1 : -1, "", user}, kPin, kNow)
        .status()
        .code();
  };
  EXPECT_EQ(code(TokenKind::kJoin, Role::kWorker, "alice"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kAccess, Role::kSubmit, "a b"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kAccess, Role::kSubmit, std::string(65, 'a')),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(TokenKind::kAccess, Role::kSubmit, "dana@lab.example"), absl::StatusCode::kOk);
}

// A trust.db of schema version 1 (before users) is migrated when opened: its tokens still open,
// with no user of their own (the coordinator then uses their name or id).
TEST_F(CredentialStoreTest, AVersionOneFileIsMigrated) {
  TokenParts old = Create(TokenKind::kAccess, Role::kSubmit, 0, -1, "old");
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  // Back to version 1's table: without the user column.
  const char* downgrade =
      "BEGIN; CREATE TABLE t1 AS SELECT id, kind, role, name, secret_sha256, created, expires, "
      "uses_left, revoked FROM tokens; DROP TABLE tokens; CREATE TABLE tokens (id TEXT PRIMARY "
      "KEY, kind TEXT NOT NULL, role TEXT NOT NULL, name TEXT NOT NULL DEFAULT '', secret_sha256 "
      "TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER NOT NULL DEFAULT 0, uses_left "
      "INTEGER NOT NULL DEFAULT -1, revoked INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID; INSERT "
      "INTO tokens SELECT * FROM t1; DROP TABLE t1; PRAGMA user_version = 1; COMMIT;";
  ASSERT_EQ(sqlite3_exec(db, downgrade, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  Reopen();
  absl::StatusOr<TokenRecord> r = store_->CheckToken(old.id, old.secret, kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->user, "");
  EXPECT_EQ(Create(TokenKind::kAccess, Role::kSubmit, 0, -1, "", "eve").id.size(), 12u);
}

// An access token keeps its gateway limits (--rate, --concurrency); a join token has none, and a
// rate or concurrency out of range is refused naming the flag.
TEST_F(CredentialStoreTest, AccessTokensKeepTheirGatewayLimits) {
  NewTokenSpec spec{TokenKind::kAccess, Role::kSubmit, 0, -1, "app", "alice", KeyLimit{2.5, 3}};
  absl::StatusOr<TokenParts> t = store_->CreateToken(spec, kPin, kNow);
  ASSERT_TRUE(t.ok()) << t.status();
  Reopen();
  absl::StatusOr<TokenRecord> r = store_->CheckToken(t->id, t->secret, kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->limit, (KeyLimit{2.5, 3}));
  EXPECT_EQ(store_->ListTokens().front().limit, (KeyLimit{2.5, 3}));
  auto refused = [&](NewTokenSpec s) {
    absl::Status st = store_->CreateToken(s, kPin, kNow).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    return std::string(st.message());
  };
  EXPECT_NE(
      refused({TokenKind::kJoin, Role::kWorker, 0, 1, "w", "", KeyLimit{1, 0}}).find("--rate"),
      std::string::npos);
  EXPECT_NE(
      refused({TokenKind::kAccess, Role::kSubmit, 0, -1, "a", "", KeyLimit{-1, 0}}).find("--rate"),
      std::string::npos);
  EXPECT_NE(refused({TokenKind::kAccess, Role::kSubmit, 0, -1, "a", "", KeyLimit{0, 2'000'000}})
                .find("--concurrency"),
            std::string::npos);
}

// A trust.db of schema version 2 (before gateway limits) is migrated: its tokens have none.
TEST_F(CredentialStoreTest, AVersionTwoFileIsMigrated) {
  TokenParts old = Create(TokenKind::kAccess, Role::kSubmit, 0, -1, "old", "olga");
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* downgrade =
      "BEGIN; ALTER TABLE tokens DROP COLUMN rate_per_s; ALTER TABLE tokens DROP COLUMN "
      "concurrency; PRAGMA user_version = 2; COMMIT;";
  ASSERT_EQ(sqlite3_exec(db, downgrade, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  Reopen();
  absl::StatusOr<TokenRecord> r = store_->CheckToken(old.id, old.secret, kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->user, "olga");
  EXPECT_EQ(r->limit, KeyLimit{});
}

TEST_F(CredentialStoreTest, TokensExpire) {
  TokenParts t = Create(TokenKind::kAccess, Role::kSubmit, 60, -1);
  EXPECT_TRUE(store_->CheckToken(t.id, t.secret, kNow + 59).ok());
  absl::StatusOr<TokenRecord> r = store_->CheckToken(t.id, t.secret, kNow + 60);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("expired at 2026-01-01T00:01:00Z"));
  TokenParts join = Create(TokenKind::kJoin, Role::kWorker, 60, 3);
  EXPECT_EQ(store_->SpendToken(join.id, join.secret, kNow + 61).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(CredentialStoreTest, RevokedTokensStayRevokedAcrossReopen) {
  TokenParts t = Create(TokenKind::kAccess, Role::kSubmit, 0, -1);
  TokenParts kept = Create(TokenKind::kAccess, Role::kRead, 0, -1);
  ASSERT_TRUE(store_->RevokeToken(t.id).ok());
  EXPECT_TRUE(store_->RevokeToken(t.id).ok()) << "revoking twice is fine";
  EXPECT_EQ(store_->RevokeToken("00000000abcd").code(), absl::StatusCode::kNotFound);
  Reopen();
  absl::StatusOr<TokenRecord> r = store_->CheckToken(t.id, t.secret, kNow);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("revoked"));
  EXPECT_TRUE(store_->CheckToken(kept.id, kept.secret, kNow).ok());
  std::vector<TokenRecord> all = store_->ListTokens();
  ASSERT_EQ(all.size(), 2u);
  for (const TokenRecord& rec : all) EXPECT_EQ(rec.revoked, rec.id == t.id) << rec.id;
}

TEST_F(CredentialStoreTest, SpentUsesSurviveReopen) {
  TokenParts t = Create(TokenKind::kJoin, Role::kWorker, 0, 2);
  ASSERT_TRUE(store_->SpendToken(t.id, t.secret, kNow).ok());
  Reopen();
  EXPECT_EQ(store_->SpendToken(t.id, t.secret, kNow).value().uses_left, 0);
  Reopen();
  EXPECT_FALSE(store_->SpendToken(t.id, t.secret, kNow).ok());
}

TEST_F(CredentialStoreTest, WorkersAreRecordedRenewedAndRevoked) {
  EXPECT_EQ(store_->FindWorker("w1"), std::nullopt);
  EXPECT_EQ(store_->RevokeWorker("w1", kNow).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->RecordWorkerCert("w2", "aa", kNow, kNow + 10).ok());
  ASSERT_TRUE(store_->RecordWorkerCert("w1", "bb", kNow, kNow + 10).ok());
  ASSERT_TRUE(store_->RecordWorkerCert("w1", "cc", kNow + 5, kNow + 15).ok());  // renewal
  std::optional<WorkerRecord> w = store_->FindWorker("w1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->serial_hex, "cc");
  EXPECT_EQ(w->issued, kNow + 5);
  EXPECT_EQ(w->not_after, kNow + 15);
  EXPECT_EQ(w->revoked_at, 0);

  ASSERT_TRUE(store_->RevokeWorker("w1", kNow + 7).ok());
  ASSERT_TRUE(store_->RecordWorkerCert("w1", "dd", kNow + 9, kNow + 19).ok());
  Reopen();
  w = store_->FindWorker("w1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->revoked_at, kNow + 7) << "a renewal does not lift a revocation";
  EXPECT_EQ(w->serial_hex, "dd");
  std::vector<WorkerRecord> all = store_->ListWorkers();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "w1");
  EXPECT_EQ(all[1].name, "w2");
  EXPECT_EQ(all[1].revoked_at, 0);
}

TEST(CredentialStoreOpenTest, RefusesAnotherSqliteFile) {
  TempDir dir;
  std::ofstream(dir / "junk.db") << "this is not a database, just some text that is long enough";
  EXPECT_FALSE(CredentialStore::Open(dir / "junk.db").ok());
}

// ---- pinned fetch

// A TLS server on 127.0.0.1 for one connection, presenting `chain_pem` (leaf first) with
// `key_pem`. It records what the client offered, then waits for the client to close.
class TlsServer {
 public:
  TlsServer(const std::string& key_pem, const std::string& chain_pem) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 4) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port_ = ntohs(addr.sin_port);
    ctx_ = MakeContext(key_pem, chain_pem);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes an accept that never got a client
    Join();
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  // Valid once the client is done (after FetchPinnedCa returned).
  std::string offered_alpn() {
    Join();
    return offered_alpn_;
  }
  std::string server_name() {
    Join();
    return server_name_;
  }

 private:
  static int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen,
                        const unsigned char* in, unsigned int inlen, void* arg) {
    static_cast<TlsServer*>(arg)->offered_alpn_.assign(reinterpret_cast<const char*>(in), inlen);
    return SSL_select_next_proto(const_cast<unsigned char**>(out), outlen,
                                 reinterpret_cast<const unsigned char*>("\x02h2"), 3, in,
                                 inlen) == OPENSSL_NPN_NEGOTIATED
               ? SSL_TLSEXT_ERR_OK
               : SSL_TLSEXT_ERR_NOACK;
  }

  SSL_CTX* MakeContext(const std::string& key_pem, const std::string& chain_pem) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
    EVP_PKEY_free(key);
    BIO_free(kb);
    BIO* cb = BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size()));
    for (int i = 0;; ++i) {
      X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
      if (cert == nullptr) break;
      EXPECT_EQ(i == 0 ? SSL_CTX_use_certificate(ctx, cert) : SSL_CTX_add1_chain_cert(ctx, cert),
                1);
      X509_free(cert);
    }
    BIO_free(cb);
    ERR_clear_error();
    SSL_CTX_set_alpn_select_cb(ctx, &TlsServer::SelectAlpn, this);
    return ctx;
  }

  void Serve() {
    // Writing to a client that has gone raises SIGPIPE in this thread only; blocked here, so a
    // SIGPIPE in the client's thread would still fail the test.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    timeval limit{30, 0};  // a safeguard against a hung client; not a timing assertion
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
      server_name_ = sni != nullptr ? sni : "";
      char buf[256];
      while (SSL_read(ssl, buf, sizeof buf) > 0) {
      }
    }
    SSL_free(ssl);
    ::close(fd);
  }

  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  int listen_fd_ = -1;
  int port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::thread thread_;
  std::string offered_alpn_, server_name_;
};

// A coordinator's TLS identity as gRPC would serve it: server key, "server cert + CA cert".
struct ServerIdentity {
  std::string key_pem, chain_pem;
};
ServerIdentity ServerOf(const CertificateAuthority& ca, const CertificateAuthority& signer) {
  KeyPair key = NewKeyPair();
  absl::StatusOr<Issued> issued =
      signer.IssueServer(key.public_pem, {"127.0.0.1", "localhost"}, std::time(nullptr));
  EXPECT_TRUE(issued.ok()) << issued.status();
  return {key.private_pem, issued->cert_pem + ca.cert_pem()};
}

class PinnedFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = MakeCa(a_.path(), std::time(nullptr));
    other_ = MakeCa(b_.path(), std::time(nullptr));
    ASSERT_NE(ca_, nullptr);
    ASSERT_NE(other_, nullptr);
  }
  TempDir a_, b_;
  std::unique_ptr<CertificateAuthority> ca_, other_;
  const std::chrono::milliseconds timeout_{10000};
};

TEST_F(PinnedFetchTest, ReturnsThePinnedCa) {
  ServerIdentity id = ServerOf(*ca_, *ca_);
  TlsServer server(id.key_pem, id.chain_pem);
  absl::StatusOr<std::string> got = FetchPinnedCa(server.address(), ca_->pin(), timeout_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, ca_->cert_pem());
  EXPECT_EQ(CertPin(*got).value_or(""), ca_->pin());
  EXPECT_EQ(server.offered_alpn(), std::string("\x02h2", 3)) << "gRPC servers require h2";
  EXPECT_EQ(server.server_name(), "") << "no SNI for an IP address";
}

TEST_F(PinnedFetchTest, SendsTheHostNameAsSni) {
  // A bare root (a fresh chroot) may have no /etc/hosts: then there is no name to send.
  addrinfo* res = nullptr;
  if (::getaddrinfo("localhost", nullptr, nullptr, &res) != 0) {
    GTEST_SKIP() << "localhost does not resolve on this machine";
  }
  ::freeaddrinfo(res);
  ServerIdentity id = ServerOf(*ca_, *ca_);
  TlsServer server(id.key_pem, id.chain_pem);
  // localhost may resolve to ::1 first, where nothing listens: the next address is tried.
  absl::StatusOr<std::string> got =
      FetchPinnedCa("localhost:" + std::to_string(server.port()), ca_->pin(), timeout_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(server.server_name(), "localhost");
}

TEST_F(PinnedFetchTest, AnotherPoolIsRefusedNamingBothPins) {
  ServerIdentity id = ServerOf(*ca_, *ca_);
  TlsServer server(id.key_pem, id.chain_pem);
  absl::StatusOr<std::string> got = FetchPinnedCa(server.address(), other_->pin(), timeout_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(got.status().message(), HasSubstr(server.address()));
  EXPECT_THAT(got.status().message(), HasSubstr("sha256:" + ca_->pin()));
  EXPECT_THAT(got.status().message(), HasSubstr("sha256:" + other_->pin()));
}

TEST_F(PinnedFetchTest, PinnedCaThatDidNotSignTheServerIsRefused) {
  // The server shows the pinned CA's certificate, but its own was signed by another CA.
  ServerIdentity id = ServerOf(*ca_, *other_);
  TlsServer server(id.key_pem, id.chain_pem);
  absl::StatusOr<std::string> got = FetchPinnedCa(server.address(), ca_->pin(), timeout_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(got.status().message(), HasSubstr("does not check against"));
}

TEST_F(PinnedFetchTest, ChainWithoutCaIsRefused) {
  KeyPair key = NewKeyPair();
  absl::StatusOr<Issued> issued =
      ca_->IssueServer(key.public_pem, {"127.0.0.1"}, std::time(nullptr));
  ASSERT_TRUE(issued.ok());
  TlsServer server(key.private_pem, issued->cert_pem);
  absl::StatusOr<std::string> got = FetchPinnedCa(server.address(), ca_->pin(), timeout_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(got.status().message(), HasSubstr("missing from its chain"));
}

TEST_F(PinnedFetchTest, ClosedPortIsUnavailable) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);  // bound, never listened: nothing accepts there
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  absl::StatusOr<std::string> got = FetchPinnedCa(where, ca_->pin(), timeout_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr(where));
}

TEST_F(PinnedFetchTest, SilentServerHitsTheDeadline) {
  // Listening, so the kernel completes the TCP handshake, but no TLS ever answers.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  absl::StatusOr<std::string> got =
      FetchPinnedCa(where, ca_->pin(), std::chrono::milliseconds(200));
  ::close(fd);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(got.status().message(), HasSubstr(where));
}

TEST_F(PinnedFetchTest, RefusesBadArguments) {
  EXPECT_EQ(FetchPinnedCa("127.0.0.1:1", "abc", timeout_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchPinnedCa("no-port", ca_->pin(), timeout_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idlepool::trust
