// `idlepool report` (cli/report_command.h) against an in-process Jobs service that serves a
// canned timeline: the file written (HTML or --svg), atomically, to stdout with --out -, and the
// exit codes for an unknown job, a coordinator without timelines and a bad --out.
#include "cli/report_command.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test_tls.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

class TimelinePool final : public v1::Jobs::Service {
 public:
  grpc::Status GetJobTimeline(grpc::ServerContext*, const v1::TimelineRequest* req,
                              v1::JobTimeline* reply) override {
    last_max_attempts = req->max_attempts();
    if (req->job() != 7) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no job 9");
    reply->mutable_job()->set_job(7);
    reply->mutable_job()->set_state("succeeded");
    reply->mutable_job()->set_submitted_ms(1'700'000'000'000);
    reply->mutable_job()->set_finished_ms(1'700'000'060'000);
    reply->set_now_ms(1'700'000'070'000);
    auto* a = reply->add_attempts();
    a->set_attempt(3);
    a->set_task(0);
    a->set_worker("w<1>");
    a->set_outcome("succeeded");
    a->set_started_ms(1'700'000'001'000);
    a->set_ended_ms(1'700'000'050'000);
    a->set_log_tail("rendered frame 1\n");
    return grpc::Status::OK;
  }
  uint32_t last_max_attempts = 0;
};

class Server {
 public:
  explicit Server(grpc::Service* service) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", tls_.ServerCredentials(), &port_);
    b.RegisterService(service);
    server_ = b.BuildAndStart();
  }
  ~Server() { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& ca_pem() const { return tls_.ca_pem(); }

 private:
  idlepool::testing::TestTls tls_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("report_command_test." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReportCommand, WritesTheHtmlReportAtomically) {
  TimelinePool pool;
  Server server(&pool);
  PoolClient client(server.address(), "token", server.ca_pem());
  const fs::path out = dir_ / "r.html";
  std::ofstream(out) << "old";
  ReportCommandOptions o{.job = 7, .out = out.string(), .max_attempts = 500};
  EXPECT_EQ(RunReport(client, o), 0);
  EXPECT_EQ(pool.last_max_attempts, 500u);
  const std::string html = Slurp(out);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("class=\"attempt outcome-succeeded\" data-attempt=\"3\""), std::string::npos);
  EXPECT_NE(html.find("data-worker=\"w&lt;1&gt;\""), std::string::npos);
  EXPECT_NE(html.find("<pre>rendered frame 1\n</pre>"), std::string::npos);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path() != out;
  EXPECT_EQ(files, 0u) << "a temp file was left behind";
}

TEST_F(ReportCommand, SvgAloneAndStdout) {
  TimelinePool pool;
  Server server(&pool);
  PoolClient client(server.address(), "token", server.ca_pem());
  const fs::path out = dir_ / "t.svg";
  EXPECT_EQ(RunReport(client, {.job = 7, .out = out.string(), .svg = true}), 0);
  const std::string svg = Slurp(out);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg.find("<html"), std::string::npos);

  ::testing::internal::CaptureStdout();
  const int rc = RunReport(client, {.job = 7, .out = "-"});
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(printed.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_FALSE(fs::exists("-"));
}

TEST_F(ReportCommand, ErrorsAndExitCodes) {
  TimelinePool pool;
  Server server(&pool);
  PoolClient client(server.address(), "token", server.ca_pem());
  const fs::path out = dir_ / "r.html";
  EXPECT_EQ(RunReport(client, {.job = 9, .out = out.string()}), 1);  // unknown job
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(RunReport(client, {.job = 7, .out = (dir_ / "missing" / "r.html").string()}), 2);
  EXPECT_EQ(RunReport(client, {.job = 7, .out = dir_.string()}), 2);  // a directory
  EXPECT_EQ(RunReport(client, {.job = 7, .out = ""}), 2);

  v1::Jobs::Service bare;  // a coordinator without GetJobTimeline: UNIMPLEMENTED
  Server old(&bare);
  PoolClient old_client(old.address(), "token", old.ca_pem());
  EXPECT_EQ(RunReport(old_client, {.job = 7, .out = out.string()}), 1);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace idlepool::cli
