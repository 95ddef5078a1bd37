// Authorization by role against a real coordinator on 127.0.0.1 (TLS, real SQLite): who may call
// what (issue 16, tests a, d, e, f, g), with real join tokens, worker certificates, access tokens
// and the admin socket.
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "idlepool.grpc.pb.h"
#include "trust.grpc.pb.h"
#include "trust/grpc_tls.h"
#include "wire/wire.h"
#include "worker/identity.h"

namespace idlepool {
namespace {

namespace fs = std::filesystem;
using grpc::StatusCode;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/idlepool-authz-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class AuthzTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void TearDown() override {
    if (coord_) coord_->Shutdown();
  }
  void Start() {
    coordinator::Options o;
    o.listen = port_ ? absl::StrCat("127.0.0.1:", port_) : "127.0.0.1:0";
    o.data_dir = dir_.path() + "/coord";
    auto c = coordinator::Coordinator::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    coord_ = std::move(*c);
    port_ = coord_->port();
    addr_ = absl::StrCat("127.0.0.1:", port_);
  }
  std::string Token(const std::string& role) {
    auto t = coord_->CreateToken(role, 0, -1, "");
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  // A worker joined with a fresh join token: its mTLS channel.
  std::shared_ptr<grpc::Channel> JoinAs(const std::string& name) {
    auto id = worker::Join(addr_, Token("worker"), name, dir_.path() + "/id-" + name);
    EXPECT_TRUE(id.ok()) << id.status();
    return grpc::CreateChannel(addr_, trust::WorkerChannelCredentials(id->tls));
  }
  std::shared_ptr<grpc::Channel> TokenChannel() {
    return grpc::CreateChannel(addr_, trust::CaOnlyChannelCredentials(coord_->ca_pem()));
  }
  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "") {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) ctx->AddMetadata("x-idlepool-token", token);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }
  StatusCode Submit(const std::shared_ptr<grpc::Channel>& ch, const std::string& token) {
    v1::SubmitJobRequest req;
    v1::SubmitJobReply reply;
    return v1::Jobs::NewStub(ch)->SubmitJob(Ctx(token).get(), req, &reply).error_code();
  }
  StatusCode Cancel(const std::shared_ptr<grpc::Channel>& ch, const std::string& token) {
    v1::JobRef ref;
    ref.set_job(12345);
    v1::CancelJobReply reply;
    return v1::Jobs::NewStub(ch)->CancelJob(Ctx(token).get(), ref, &reply).error_code();
  }
  StatusCode GetJob(const std::shared_ptr<grpc::Channel>& ch, const std::string& token) {
    v1::JobRef ref;
    ref.set_job(12345);
    v1::JobStatus reply;
    return v1::Jobs::NewStub(ch)->GetJob(Ctx(token).get(), ref, &reply).error_code();
  }
  // Opens a session saying Hello as `name`; the status it ends with, or OK once welcomed.
  StatusCode Hello(const std::shared_ptr<grpc::Channel>& ch, const std::string& token,
                   const std::string& name) {
    auto ctx = Ctx(token);
    auto stream = v1::WorkerSession::NewStub(ch)->Session(ctx.get());
    v1::WorkerMessage m;
    auto* h = m.mutable_hello();
    h->set_protocol_version(wire::kProtocolVersion);
    h->set_worker(name);
    h->set_boot_id("boot");
    h->mutable_capacity()->set_cpus(1);
    stream->Write(m);
    v1::CoordinatorMessage reply;
    if (stream->Read(&reply) && reply.has_welcome()) {
      ctx->TryCancel();
      stream->Finish();
      return StatusCode::OK;
    }
    return stream->Finish().error_code();
  }
  StatusCode Locate(const std::shared_ptr<grpc::Channel>& ch, const std::string& as) {
    v1::LocateBlobRequest req;
    req.set_sha256(std::string(64, 'a'));
    req.set_worker(as);
    v1::LocateBlobReply reply;
    return v1::Blobs::NewStub(ch)->LocateBlob(Ctx().get(), req, &reply).error_code();
  }

  TempDir dir_;
  int port_ = 0;
  std::string addr_;
  std::unique_ptr<coordinator::Coordinator> coord_;
};

bool Refused(StatusCode c) {
  return c == StatusCode::PERMISSION_DENIED || c == StatusCode::UNAUTHENTICATED;
}

TEST_F(AuthzTest, APlainTextClientIsRefused) {
  auto plain = grpc::CreateChannel(addr_, grpc::InsecureChannelCredentials());
  EXPECT_EQ(GetJob(plain, Token("submit")), StatusCode::UNAVAILABLE);
}

TEST_F(AuthzTest, NoCredentialAndOldPoolTokensAreRefused) {
  EXPECT_EQ(GetJob(TokenChannel(), ""), StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GetJob(TokenChannel(), std::string(64, 'f')), StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthzTest, ASubmitTokenCannotCallWorkerMethods) {
  const std::string submit = Token("submit");
  EXPECT_TRUE(Refused(Hello(TokenChannel(), submit, "w1")));
  v1::ProbeRequest req;
  v1::ProbeReply reply;
  EXPECT_TRUE(Refused(
      v1::Probes::NewStub(TokenChannel())->Probe(Ctx(submit).get(), req, &reply).error_code()));
  EXPECT_TRUE(Refused(Locate(TokenChannel(), "w1")));
  // ... and may submit and read (an empty spec is bad input, not a refusal).
  EXPECT_EQ(Submit(TokenChannel(), submit), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(GetJob(TokenChannel(), submit), StatusCode::NOT_FOUND);
}

TEST_F(AuthzTest, AWorkerCertificateCannotSubmitOrCancel) {
  auto w = JoinAs("w1");
  EXPECT_EQ(Submit(w, ""), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Cancel(w, ""), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(GetJob(w, ""), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Hello(w, "", "w1"), StatusCode::OK);
}

// Jobs belong to their submitter's user: another user's submit token may read them but not
// cancel, delete or scale them (the refusal names the job's user and the role that may); an
// operator may; the job's status names its user.
TEST_F(AuthzTest, AJobIsChangedOnlyByItsUserOrAnOperator) {
  auto token = [&](const std::string& role, const std::string& name) {
    auto t = coord_->CreateToken(role, 0, -1, name);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  };
  const std::string alice = token("submit", "alice"), bob = token("submit", "bob");
  const std::string ops = token("operator", "ops"), reader = token("read", "");
  auto jobs = v1::Jobs::NewStub(TokenChannel());
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_name("mine");
  req.mutable_spec()->add_command("true");
  req.mutable_spec()->set_count(1);
  req.mutable_spec()->set_max_attempts(1);
  req.mutable_spec()->set_priority(7);
  req.mutable_spec()->mutable_resources()->set_cpus(1);
  v1::SubmitJobReply submitted;
  grpc::Status st = jobs->SubmitJob(Ctx(alice).get(), req, &submitted);
  ASSERT_TRUE(st.ok()) << st.error_message();
  v1::JobRef ref;
  ref.set_job(submitted.job());
  v1::JobStatus status;
  ASSERT_TRUE(jobs->GetJob(Ctx(reader).get(), ref, &status).ok());
  EXPECT_EQ(status.user(), "alice");
  EXPECT_EQ(status.priority(), 7);
  v1::CancelJobReply cancelled;
  st = jobs->CancelJob(Ctx(bob).get(), ref, &cancelled);
  EXPECT_EQ(st.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("belongs to user alice"), std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("role operator"), std::string::npos) << st.error_message();
  v1::DeleteJobRequest del;
  del.set_job(submitted.job());
  del.set_cancel(true);
  v1::DeleteJobReply deleted;
  EXPECT_EQ(jobs->DeleteJob(Ctx(bob).get(), del, &deleted).error_code(),
            StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(jobs->CancelJob(Ctx(reader).get(), ref, &cancelled).error_code(),
            StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(jobs->GetJob(Ctx(bob).get(), ref, &status).ok()) << "reading is not owning";
  EXPECT_EQ(status.state(), "running");
  st = jobs->CancelJob(Ctx(ops).get(), ref, &cancelled);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(cancelled.state(), "cancelled");
  EXPECT_TRUE(jobs->DeleteJob(Ctx(alice).get(), del, &deleted).ok());
}

TEST_F(AuthzTest, AReadTokenCannotSubmitOrCancel) {
  const std::string read = Token("read");
  EXPECT_EQ(Submit(TokenChannel(), read), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Cancel(TokenChannel(), read), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(GetJob(TokenChannel(), read), StatusCode::NOT_FOUND);
}

TEST_F(AuthzTest, AWorkerCannotSpeakAsAnotherWorker) {
  auto w1 = JoinAs("w1");
  JoinAs("w2");
  EXPECT_EQ(Hello(w1, "", "w2"), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Locate(w1, "w2"), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Locate(w1, "w1"), StatusCode::NOT_FOUND);  // its own name: no such blob
}

TEST_F(AuthzTest, ATakenNameCannotJoinAgain) {
  JoinAs("w1");
  auto again = worker::Join(addr_, Token("worker"), "w1", dir_.path() + "/other");
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
}

TEST_F(AuthzTest, ARevokedWorkerIsRefusedAlsoAfterARestart) {
  auto w = JoinAs("w1");
  ASSERT_EQ(Hello(w, "", "w1"), StatusCode::OK);
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel("unix:" + coord_->admin_socket(), grpc::InsecureChannelCredentials()));
  v1::RevokeWorkerRequest req;
  req.set_name("w1");
  v1::RevokeWorkerReply reply;
  ASSERT_TRUE(admin->RevokeWorker(Ctx().get(), req, &reply).ok());
  EXPECT_EQ(Hello(w, "", "w1"), StatusCode::UNAUTHENTICATED);
  coord_->Shutdown();
  coord_.reset();
  Start();
  auto kept = worker::LoadIdentity(dir_.path() + "/id-w1");
  ASSERT_TRUE(kept.ok() && kept->has_value());
  auto again = grpc::CreateChannel(addr_, trust::WorkerChannelCredentials((*kept)->tls));
  EXPECT_EQ(Hello(again, "", "w1"), StatusCode::UNAUTHENTICATED);
}

TEST_F(AuthzTest, AdministrationIsNotServedOnTheNetworkPort) {
  v1::CreateTokenRequest req;
  req.set_role("submit");
  v1::CreateTokenReply reply;
  auto st =
      v1::Admin::NewStub(TokenChannel())->CreateToken(Ctx(Token("submit")).get(), req, &reply);
  EXPECT_EQ(st.error_code(), StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace idlepool
