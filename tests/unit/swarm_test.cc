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
#include "wire/wire.h"

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
  FakeSession(v1::WorkerSession::Stub* stub, const std::string& token, const std::string& name,
              const std::string& peer_address, const std::vector<v1::CachedBlob>& cached = {}) {
    ctx_.AddMetadata(kTokenKey, token);
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

class SwarmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coordinator::Options o;
    o.listen = "127.0.0.1:0";
    o.data_dir = dir_.path() + "/coord";
    auto c = coordinator::Coordinator::Start(o);
    ASSERT_TRUE(c.ok()) << c.status();
    coord_ = std::move(*c);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", coord_->port()),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Blobs::NewStub(channel_);
    session_stub_ = v1::WorkerSession::NewStub(channel_);
  }
  void TearDown() override {
    if (coord_) coord_->Shutdown();
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
    auto up = UploadResumable(stub_.get(), coord_->token(), path, *d);
    EXPECT_TRUE(up.ok()) << up.status();
    return *d;
  }

  SwarmOptions Options(const std::string& worker) {
    SwarmOptions so;
    so.worker = worker;
    so.token = coord_->token();
    so.seed = std::hash<std::string>{}(worker);
    return so;
  }

  TempDir dir_;
  std::unique_ptr<coordinator::Coordinator> coord_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Blobs::Stub> stub_;
  std::unique_ptr<v1::WorkerSession::Stub> session_stub_;
};

struct Node {
  std::unique_ptr<BlobStore> store;
  std::unique_ptr<PeerServer> server;
  std::unique_ptr<FakeSession> session;
};

TEST_F(SwarmTest, ConcurrentDownloadersExchangeChunksAndTheCoordinatorSendsEachAboutOnce) {
  const int kChunks = 24, kNodes = 3;
  const FileDigest d = Upload(kChunks, 7);
  std::vector<Node> nodes(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    nodes[i].store = std::make_unique<BlobStore>(dir_.path() + "/w" + std::to_string(i));
    ASSERT_TRUE(nodes[i].store->Init(0).ok());
    PeerServerOptions po;
    po.listen = "127.0.0.1:0";
    po.token = coord_->token();
    auto s = PeerServer::Start(*nodes[i].store, po);
    ASSERT_TRUE(s.ok()) << s.status();
    nodes[i].server = std::move(*s);
    nodes[i].session = std::make_unique<FakeSession>(
        session_stub_.get(), coord_->token(), "w" + std::to_string(i), nodes[i].server->address());
    ASSERT_TRUE(nodes[i].session->welcomed());
  }
  std::vector<absl::StatusOr<SwarmStats>> results(kNodes, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      results[i] = SwarmDownload(stub_.get(), d.sha256, d.size, *nodes[i].store,
                                 Options("w" + std::to_string(i)));
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

TEST_F(SwarmTest, PeersRefuseAWrongTokenAndServeHeldChunksOnly) {
  const FileDigest d = Upload(3, 8);
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  PeerServerOptions po;
  po.listen = "127.0.0.1:0";
  po.token = coord_->token();
  auto server = PeerServer::Start(store, po);
  ASSERT_TRUE(server.ok());
  auto peer = v1::Peer::NewStub(grpc::CreateChannel((*server)->address(),
                                                    grpc::InsecureChannelCredentials()));
  auto get = [&](const std::string& token, const std::string& sha, uint32_t index,
                 v1::ChunkData* out) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata(kTokenKey, token);
    v1::GetChunkRequest req;
    req.set_sha256(sha);
    req.set_index(index);
    return peer->GetChunk(&ctx, req, out).error_code();
  };
  v1::ChunkData chunk;
  EXPECT_EQ(get(coord_->token(), d.sha256, 0, &chunk), grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(SwarmDownload(stub_.get(), d.sha256, d.size, store, Options("solo")).ok());
  EXPECT_EQ(get("", d.sha256, 0, &chunk), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(get(std::string(coord_->token().size(), 'x'), d.sha256, 0, &chunk),
            grpc::StatusCode::PERMISSION_DENIED);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenKey, "wrong");
    v1::HaveChunksRequest req;
    req.set_sha256(d.sha256);
    v1::HaveChunksReply reply;
    EXPECT_EQ(peer->HaveChunks(&ctx, req, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  ASSERT_EQ(get(coord_->token(), d.sha256, 3, &chunk), grpc::StatusCode::OK);
  EXPECT_EQ(chunk.data().size(), 12345u);  // the short last chunk, nothing past the blob
  EXPECT_EQ(get(coord_->token(), d.sha256, 4, &chunk), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(get(coord_->token(), "../../etc/passwd", 0, &chunk),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Evicted: simply not found.
  ASSERT_TRUE(store.Remove(d.sha256).ok());
  EXPECT_EQ(get(coord_->token(), d.sha256, 0, &chunk), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SwarmTest, ChunksFailingVerificationAreFetchedElsewhere) {
  const FileDigest d = Upload(4, 9);
  LyingPeer liar;
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&liar);
  auto server = b.BuildAndStart();
  ASSERT_NE(port, 0);
  v1::CachedBlob cached;
  cached.set_sha256(d.sha256);
  cached.set_size(d.size);
  FakeSession liar_session(session_stub_.get(), coord_->token(), "liar",
                           absl::StrCat("127.0.0.1:", port), {cached});
  ASSERT_TRUE(liar_session.welcomed());
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  auto got = SwarmDownload(stub_.get(), d.sha256, d.size, store, Options("honest"));
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
  BlobStore store(dir_.path() + "/w");
  ASSERT_TRUE(store.Init(0).ok());
  auto got = SwarmDownload(stub_.get(), std::string(64, 'a'), 10, store, Options("w"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();

  const FileDigest d = Upload(2, 10);
  auto fetch = [&](const std::string& token, std::vector<uint32_t> wanted, std::string worker) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenKey, token);
    v1::FetchChunkRequest req;
    req.set_sha256(d.sha256);
    req.set_worker(worker);
    for (uint32_t i : wanted) req.add_wanted(i);
    v1::ChunkData out;
    return stub_->FetchChunk(&ctx, req, &out).error_code();
  };
  EXPECT_EQ(fetch("bad", {0}, "w"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(fetch(coord_->token(), {}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(coord_->token(), {3}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(coord_->token(), {0, 1, 2, 0}, "w"), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(coord_->token(), {0}, ""), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(fetch(coord_->token(), {2}, "w"), grpc::StatusCode::OK);
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenKey, coord_->token());
  v1::LocateBlobRequest req;
  req.set_sha256("nothex");
  req.set_worker("w");
  v1::LocateBlobReply reply;
  EXPECT_EQ(stub_->LocateBlob(&ctx, req, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace idlepool::blob
