// A worker pointed at a server that does not serve its session protocol (another idlepool
// version; here a TLS gRPC server of the same pool with only the Jobs service) stops with a
// clear error instead of retrying forever.
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "idlepool.grpc.pb.h"
#include "test_tls.h"
#include "trust/grpc_tls.h"
#include "worker/session.h"

namespace idlepool::worker {
namespace {

class NoHandler final : public SessionHandler {
 public:
  void FillHello(v1::Hello* hello) override { hello->mutable_capacity()->set_cpus(1); }
  void AfterHello(std::vector<v1::WorkerMessage>*) override {}
  void OnWelcome() override {}
  void OnAssign(const v1::Assignment&) override {}
  void OnKill(const v1::Kill&) override {}
  void OnAck(const v1::ReportAck&) override {}
};

TEST(SessionProtocol, AServerWithoutTheSessionServiceStopsTheWorker) {
  idlepool::testing::TestTls tls;
  v1::Jobs::Service jobs_only;
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", tls.ServerCredentials(), &port);
  b.RegisterService(&jobs_only);
  auto server = b.BuildAndStart();
  ASSERT_NE(port, 0);

  const trust::TlsIdentity worker = tls.WorkerIdentity("w1");
  StopSignal stop;
  NoHandler handler;
  SessionConfig config;
  config.coordinator = "127.0.0.1:" + std::to_string(port);
  config.credentials = trust::WorkerChannelCredentials(worker);
  config.name = "w1";
  config.boot_id = "boot";
  Session session(config, stop, handler);
  session.Connect(/*probe=*/false);
  const absl::Status st = session.Serve();
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_NE(st.message().find("does not serve this worker's protocol"), std::string::npos) << st;
  server->Shutdown();
}

}  // namespace
}  // namespace idlepool::worker
