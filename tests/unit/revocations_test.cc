// trust/revocations.h and the certificates it reads (trust/ca.h): roles compared whole, gateway
// certificates bound to their token, and what a worker's ports refuse once told the pool's
// revocations.
#include "trust/revocations.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "trust/ca.h"

namespace idlepool::trust {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kNow = 1'800'000'000;

class RevocationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("revocations_test." + std::to_string(::getpid()));
    bool created = false;
    auto ca = CertificateAuthority::LoadOrCreate(dir_.string(), kNow, &created);
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = std::move(*ca);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string PublicKey() {
    auto key = NewPrivateKeyPem();
    EXPECT_TRUE(key.ok());
    auto pub = PublicKeyPemOf(*key);
    EXPECT_TRUE(pub.ok());
    return *pub;
  }
  CertInfo Worker(const std::string& name, int64_t issued) {
    auto c = ca_->IssueWorker(PublicKey(), name, issued);
    EXPECT_TRUE(c.ok()) << c.status();
    auto info = InspectCertificate(c->cert_pem);
    EXPECT_TRUE(info.ok()) << info.status();
    return *info;
  }
  CertInfo Gateway(const std::string& name, const std::string& token) {
    auto c = ca_->IssueGateway(PublicKey(), name, kNow, 3600, token);
    EXPECT_TRUE(c.ok()) << c.status();
    auto info = InspectCertificate(c->cert_pem);
    EXPECT_TRUE(info.ok()) << info.status();
    return *info;
  }

  fs::path dir_;
  std::unique_ptr<CertificateAuthority> ca_;
};

TEST_F(RevocationsTest, GatewayCertificateNamesItsToken) {
  EXPECT_EQ(Gateway("edge", "0123456789ab").token_id, "0123456789ab");
  EXPECT_EQ(Gateway("edge", "").token_id, "");
  EXPECT_EQ(ca_->IssueGateway(PublicKey(), "edge", kNow, 3600, "a,DNS:x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Worker("w1", kNow).token_id, "");
}

TEST_F(RevocationsTest, RolesAreComparedWhole) {
  RevocationList list;
  list.Replace({});
  // A gateway named so that its subject's text says "OU=worker" is still a gateway.
  CertInfo tricky = Gateway("OU=worker", "");
  EXPECT_EQ(tricky.role, "gateway");
  EXPECT_EQ(tricky.common_name, "OU=worker");
  EXPECT_TRUE(list.Refusal(tricky, "worker").has_value());
  EXPECT_FALSE(list.Refusal(tricky, "gateway").has_value());
  CertInfo w = Worker("w1", kNow);
  EXPECT_FALSE(list.Refusal(w, "worker").has_value());
  EXPECT_TRUE(list.Refusal(w, "gateway").has_value());
  w.role = "workers";
  EXPECT_TRUE(list.Refusal(w, "worker").has_value());
}

TEST_F(RevocationsTest, NothingPassesUntilTheListIsKnown) {
  RevocationList list;
  EXPECT_FALSE(list.known());
  EXPECT_TRUE(list.Refusal(Worker("w1", kNow), "worker").has_value());
  list.Replace({});
  EXPECT_TRUE(list.known());
  EXPECT_FALSE(list.Refusal(Worker("w1", kNow), "worker").has_value());
}

TEST_F(RevocationsTest, RevokedWorkerAndTokenAreRefused) {
  RevocationList list;
  Revoked r;
  r.workers["w1"] = kNow;
  r.tokens.insert("0123456789ab");
  list.Replace(r);
  // Issued before the revocation, or at it: refused. Issued well after (a new join): served.
  EXPECT_TRUE(list.Refusal(Worker("w1", kNow - 86400), "worker").has_value());
  EXPECT_TRUE(list.Refusal(Worker("w1", kNow), "worker").has_value());
  EXPECT_FALSE(list.Refusal(Worker("w1", kNow + 600), "worker").has_value());
  EXPECT_FALSE(list.Refusal(Worker("w2", kNow - 86400), "worker").has_value());
  EXPECT_TRUE(list.Refusal(Gateway("edge", "0123456789ab"), "gateway").has_value());
  EXPECT_FALSE(list.Refusal(Gateway("edge", "ba9876543210"), "gateway").has_value());
  EXPECT_FALSE(list.Refusal(Gateway("coordinator gateway", ""), "gateway").has_value());
  list.Replace({});
  EXPECT_FALSE(list.Refusal(Worker("w1", kNow - 86400), "worker").has_value());
}

}  // namespace
}  // namespace idlepool::trust
