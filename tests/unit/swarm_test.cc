// Swarm downloads against the real coordinator (127.0.0.1, ephemeral port) and in-process peers
// (blob::PeerServer over their own BlobStores), registered as workers through real sessions.
#include "blob/swarm.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "blob/blob.h"
#include "blob/peer_server.h"
#include "blob/transfer.h"
#include "coordinator/coordinator.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "idlepool.grpc.pb.h"
#include "trust/ca.h"
#include "trust/grpc_tls.h"
#include "wire/wire.h"
#include "worker/identity.h"

namespace idlepool::blob {
namespace {
namespace fs = std::filesystem;

constexpr const char* kTokenKey = "x-idlepool-token";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/idlepool-swarm-XXXXXX";
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

// A worker session kept open so the coordinator's tracker knows the worker and its address.
class FakeSession {
 public:
  FakeSession(v1::WorkerSession::Stub* stub, const std::string& name,
              const std::string& peer_address, const std::vector<v1::CachedBlob>& cached = {}) {
    stream_ = stub->Session(&ctx_);
    v1::WorkerMessage m;
    auto* h = m.mutable_hello();
    h->set_protocol_version(wire::kProtocolVersion);
    h->set_worker(name);
    h->set_boot_id(name + "-boot");
    h->mutable_capacity()->set_cpus(1);
    h->set_peer_address(peer_address);
    for (const auto& b : cached) *h->add_cached() = b;
    stream_->Write(m);
    v1::CoordinatorMessage reply;
    welcomed_ = stream_->Read(&reply) && reply.has_welcome();
  }
  ~FakeSession() {
    ctx_.TryCancel();
    stream_->Finish();
  }
  bool welcomed() const { return welcomed_; }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  bool welcomed_ = false;
};

// A peer that claims every blob and serves zeros: every chunk it sends fails verification.
class LyingPeer final : public v1::Peer::Service {
 public:
  grpc::Status GetChunk(grpc::ServerContext*, const v1::GetChunkRequest* req,
                        v1::ChunkData* reply) override {
    ++calls;
    reply->set_sha256(req->sha256());
    reply->set_index(req->index());
    reply->set_data(std::string(kChunkBytes, '\0'));
    return grpc::Status::OK;
  }
  grpc::Status HaveChunks(grpc::ServerContext*, const v1::HaveChunksRequest*,
                          v1::HaveChunksReply* reply) override {
    reply->set_complete(true);
    return grpc::Status::OK;
  }
  std::atomic<int> calls{0};
};

// A worker of the pool: joined with a join token; its mTLS stubs.
struct Member {
  worker::Identity id;
  std::unique_ptr<v1::Blobs::Stub> blobs;
  std::unique_ptr<v1::WorkerSession::Stub> session;
};

class SwarmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coordinator::Options o;
    o.listen = "127.0.0.1:0";
    o.data_dir = dir_.path() + "/coord";
    auto c = coordinator::Coordinator::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    coord_ = std::move(*c);
    addr_ = absl::StrCat("127.0.0.1:", coord_->port());
    auto submit = coord_->CreateToken("submit", 0, -1, "test");
    ASSERT_TRUE(submit.ok()) << submit.status();
    submit_ = *submit;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    uploader_ = v1::Blobs::NewStub(
        grpc::CreateCustomChannel(addr_, trust::CaOnlyChannelCredentials(coord_->ca_pem()), args));
  }
  void TearDown() override {
    if (coord_) coord_->Shutdown();
  }

  Member JoinAs(const std::string& name) {
    auto join = coord_->CreateToken("worker", 60, 1, "");
    EXPECT_TRUE(join.ok()) << join.status();
    auto id = worker::Join(addr_, *join, name, dir_.path() + "/id-" + name);
    EXPECT_TRUE(id.ok()) << id.status();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto ch = grpc::CreateCustomChannel(addr_, trust::WorkerChannelCredentials(id->tls), args);
    return Member{*id, v1::Blobs::NewStub(ch), v1::WorkerSession::NewStub(ch)};
  }

  // Uploads `chunks` MiB (plus a short tail) of seeded random bytes; returns its digest.
  FileDigest Upload(int chunks, uint64_t seed) {
    const std::string path = dir_.path() + "/input" + std::to_string(seed);
    std::mt19937_64 rng(seed);
    std::string data(size_t(chunks) * kChunkBytes + 12345, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    std::ofstream(path, std::ios::binary).write(data.data(), static_cast<long>(data.size()));
    auto d = HashFile(path);
    EXPECT_TRUE(d.ok());
    auto up = UploadResumable(uploader_.get(), submit_, path, *d);
    EXPECT_TRUE(up.ok()) << up.status();
    return *d;
  }

  static SwarmOptions Options(const Member& m) {
    SwarmOptions so;
    so.worker = m.id.name;
    so.peer_credentials = trust::WorkerChannelCredentials(m.id.tls);
    so.seed = std::hash<std::string>{}(m.id.name);
    return so;
  }
  static PeerServerOptions PeerOptions(const Member& m) {
    PeerServerOptions po;
    po.listen = "127.0.0.1:0";
    po.credentials = trust::PeerServerCredentials(m.id.tls);
    return po;
  }

  TempDir dir_;
  std::unique_ptr<coordinator::Coordinator> coord_;
  std::string addr_, submit_;
  std::unique_ptr<v1::Blobs::Stub> uploader_;  // the submitter's (an access token)
};

struct Node {
  Member member;
  std::unique_ptr<BlobStore> store;
  std::unique_ptr<PeerServer> server;
  std::unique_ptr<FakeSession> session;
};

TEST_F(SwarmTest, ConcurrentDownloadersExchangeChunksAndTheCoordinatorSendsEachAboutOnce) {
  const int kChunks = 24, kNodes = 3;
  const FileDigest d = Upload(kChunks, 7);
  std::vector<Node> nodes(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    nodes[i].member = JoinAs("w" + std::to_string(i));
    nodes[i].store = std::make_unique<BlobStore>(dir_.path() + "/w" + std::to_string(i));
    ASSERT_TRUE(nodes[i].store->Init(0).ok());
    auto s = PeerServer::Start(*nodes[i].store, PeerOptions(nodes[i].member));
    ASSERT_TRUE(s.ok()) << s.status();
    nodes[i].server = std::move(*s);
    nodes[i].session = std::make_unique<FakeSession>(
        nodes[i].member.session.get(), "w" + std::to_string(i), nodes[i].server->address());
    ASSERT_TRUE(nodes[i].session->welcomed());
  }
  std::vector<absl::StatusOr<SwarmStats>> results(kNodes, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      results[i] = SwarmDownload(nodes[i].member.blobs.get(), d.sha256, d.size, *nodes[i].store,
                                 Options(nodes[i].member));
    });
  }
  for (auto& t : threads) t.join();
  uint64_t from_coordinator = 0, from_peers = 0, served = 0;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(results[i].ok()) << "w" << i << ": " << results[i].status();
    from_coordinator += results[i]->coordinator_bytes;
    from_peers += results[i]->peer_bytes;
    served += nodes[i].server->bytes_served();
    auto got = HashFile(nodes[i].store->PathOf(d.sha256));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->sha256, d.sha256);
    EXPECT_EQ(results[i]->coordinator_bytes + results[i]->peer_bytes, d.size) << "w" << i;
  }
  std::printf("blob %llu bytes, %d downloaders: %llu from the coordinator, %llu from peers\n",
              (unsigned long long)d.size, kNodes, (unsigned long long)from_coordinator,
              (unsigned long long)from_peers);
  // Centralized fan-out would send kNodes x the blob; the swarm sends each chunk about once.
  EXPECT_LT(from_coordinator, 2 * d.size);
  EXPECT_GE(from_peers, d.size);
  EXPECT_EQ(from_peers, served);
}

TEST_F(SwarmTest, PeersServeOnlyWorkersOfThePoolAndHeldChunksOnly) {
  const FileDigest d = Upload(3, 8);
  Member solo = JoinAs("solo"), asker = JoinAs("asker");
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  auto server = PeerServer::Start(store, PeerOptions(solo));
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub_with = [&](std::shared_ptr<grpc::ChannelCredentials> creds) {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride(trust::kWorkerSanName);
    return v1::Peer::NewStub(grpc::CreateCustomChannel((*server)->address(), creds, args));
  };
  auto get = [&](v1::Peer::Stub* peer, const std::string& sha, uint32_t index, v1::ChunkData* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetChunkRequest req;
    req.set_sha256(sha);
    req.set_index(index);
    return peer->GetChunk(&ctx, req, out).error_code();
  };
  auto peer = stub_with(trust::WorkerChannelCredentials(asker.id.tls));
  v1::ChunkData chunk;
  EXPECT_EQ(get(peer.get(), d.sha256, 0, &chunk), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(SwarmDownload(solo.blobs.get(), d.sha256, d.size, store, Options(solo)).ok());
  // Plain text, or TLS without a worker certificate: no handshake, nothing served.
  auto plain = stub_with(grpc::InsecureChannelCredentials());
  EXPECT_EQ(get(plain.get(), d.sha256, 0, &chunk), grpc::StatusCode::UNAVAILABLE);
  auto no_cert = stub_with(trust::CaOnlyChannelCredentials(coord_->ca_pem()));
  EXPECT_EQ(get(no_cert.get(), d.sha256, 0, &chunk), grpc::StatusCode::UNAVAILABLE);
  ASSERT_EQ(get(peer.get(), d.sha256, 3, &chunk), grpc::StatusCode::OK);
  EXPECT_EQ(chunk.data().size(), 12345u);  // the short last chunk, nothing past the blob
  EXPECT_EQ(get(peer.get(), d.sha256, 4, &chunk), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(get(peer.get(), "../../etc/passwd", 0, &chunk), grpc::StatusCode::INVALID_ARGUMENT);
  // Evicted: simply not found.
  ASSERT_TRUE(store.Remove(d.sha256).ok());
  EXPECT_EQ(get(peer.get(), d.sha256, 0, &chunk), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SwarmTest, ChunksFailingVerificationAreFetchedElsewhere) {
  const FileDigest d = Upload(4, 9);
  Member liar_member = JoinAs("liar"), honest = JoinAs("honest");
  LyingPeer liar;
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", trust::PeerServerCredentials(liar_member.id.tls), &port);
  b.RegisterService(&liar);
  auto server = b.BuildAndStart();
  ASSERT_NE(port, 0);
  v1::CachedBlob cached;
  cached.set_sha256(d.sha256);
  cached.set_size(d.size);
  FakeSession liar_session(liar_member.session.get(), "liar", absl::StrCat("127.0.0.1:", port),
                           {cached});
  ASSERT_TRUE(liar_session.welcomed());
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  auto got = SwarmDownload(honest.blobs.get(), d.sha256, d.size, store, Options(honest));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(liar.calls.load(), 0);
  EXPECT_GT(got->chunks_rejected, 0u);
  EXPECT_EQ(got->peer_bytes, 0u);
  EXPECT_EQ(got->coordinator_bytes, d.size);
  auto h = HashFile(store.PathOf(d.sha256));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->sha256, d.sha256);
  server->Shutdown();
}

TEST_F(SwarmTest, UnknownBlobAndBadRequestsAreRefusedByTheCoordinator) {
  Member w = JoinAs("w");
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  auto got = SwarmDownload(w.blobs.get(), std::string(64, 'a'), 10, store, Options(w));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();

  const FileDigest d = Upload(2, 10);
  auto fetch = [&](v1::Blobs::Stub* stub, const std::string& token, std::vector<uint32_t> wanted,
                   std::string worker) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
    v1::FetchChunkRequest req;
    req.set_sha256(d.sha256);
    req.set_worker(worker);
    for (uint32_t i : wanted) req.add_wanted(i);
    v1::ChunkData out;
    return stub->FetchChunk(&ctx, req, &out).error_code();
  };
  // A submitter's token is not a worker's credential.
  EXPECT_EQ(fetch(uploader_.get(), submit_, {0}, "w"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(fetch(w.blobs.get(), "", {}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(w.blobs.get(), "", {3}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(w.blobs.get(), "", {0, 1, 2, 0}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(w.blobs.get(), "", {0}, ""), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(w.blobs.get(), "", {0}, "someone-else"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(fetch(w.blobs.get(), "", {2}, "w"), grpc::StatusCode::OK);
  grpc::ClientContext ctx;
  v1::LocateBlobRequest req;
  req.set_sha256("nothex");
  req.set_worker("w");
  v1::LocateBlobReply reply;
  EXPECT_EQ(w.blobs->LocateBlob(&ctx, req, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace idlepool::blob
