// Resumable blob transfers over a real in-process gRPC server whose blob calls are served by
// blob::BlobStore, exactly as the coordinator serves them.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "blob/manifest.h"
#include "blob/store.h"
#include "blob/transfer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "platform/clock.h"
#include "platform/random.h"
#include "status_convert.h"

namespace idlepool::blob {
namespace {
namespace fs = std::filesystem;

constexpr const char* kToken = "test-token";

class BlobServer final : public v1::Blobs::Service {
 public:
  explicit BlobServer(BlobStore& store) : store_(store) {}
  grpc::Status PutBlob(grpc::ServerContext*, grpc::ServerReader<v1::BlobChunk>* reader,
                       v1::PutBlobReply* reply) override {
    ++put_calls;
    auto got = store_.ReceiveUpload([&](v1::BlobChunk* m) { return reader->Read(m); });
    if (!got.ok()) return wire::ToGrpc(got.status());
    *reply = *got;
    return grpc::Status::OK;
  }
  grpc::Status GetBlob(grpc::ServerContext*, const v1::GetBlobRequest* req,
                       grpc::ServerWriter<v1::BlobChunk>* writer) override {
    return wire::ToGrpc(
        store_.ServeRange(*req, [&](const v1::BlobChunk& m) { return writer->Write(m); }));
  }
  grpc::Status HasBlobs(grpc::ServerContext*, const v1::HasBlobsRequest* req,
                        v1::HasBlobsReply* reply) override {
    *reply = store_.Query(*req);
    return grpc::Status::OK;
  }
  grpc::Status GetManifest(grpc::ServerContext*, const v1::GetManifestRequest* req,
                           v1::BlobManifest* reply) override {
    auto m = store_.GetManifest(req->sha256());
    if (!m.ok()) return wire::ToGrpc(m.status());
    *reply = ToProto(*m);
    return grpc::Status::OK;
  }
  std::atomic<int> put_calls{0};

 private:
  BlobStore& store_;
};

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("blob-transfer-" + platform::RandomHex(6));
    fs::create_directories(root_);
    store_ = std::make_unique<BlobStore>((root_ / "server").string());
    ASSERT_TRUE(store_->Init(platform::SystemClock().WallMs()).ok());
    service_ = std::make_unique<BlobServer>(*store_);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(service_.get());
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    stub_ = v1::Blobs::NewStub(channel);
  }
  void TearDown() override {
    server_->Shutdown();
    fs::remove_all(root_);
  }
  std::string WriteFile(const std::string& name, size_t n) {
    std::string bytes(n, '\0');
    uint32_t x = 12345;
    for (auto& c : bytes) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 24);
    }
    std::ofstream(root_ / name, std::ios::binary) << bytes;
    bytes_ = bytes;
    return (root_ / name).string();
  }
  static std::string ReadAll(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // A cancel hook that says "stop" once `n` chunks went by (it is asked once before each try
  // and once after every chunk).
  static std::function<bool()> StopAfterChunks(int n) {
    auto asked = std::make_shared<int>(0);
    return [asked, n] { return (*asked)++ >= n; };
  }

  fs::path root_;
  std::string bytes_;
  std::unique_ptr<BlobStore> store_;
  std::unique_ptr<BlobServer> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Blobs::Stub> stub_;
};

TEST_F(TransferTest, ACutUploadResumesFromTheVerifiedOffsetAndSendsOnlyTheRest) {
  const std::string path = WriteFile("in", 5 * kChunkBytes + 100);
  auto digest = HashFile(path);
  ASSERT_TRUE(digest.ok());
  TransferOptions cut;
  cut.cancelled = StopAfterChunks(2);
  auto first = UploadResumable(stub_.get(), kToken, path, *digest, cut);
  EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled) << first.status();
  EXPECT_FALSE(store_->Has(digest->sha256));
  EXPECT_EQ(store_->ResumeOffset(digest->sha256), 2 * kChunkBytes);

  auto second = UploadResumable(stub_.get(), kToken, path, *digest);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->bytes_sent, bytes_.size() - 2 * kChunkBytes);
  EXPECT_EQ(second->calls, 1u);
  ASSERT_TRUE(store_->Has(digest->sha256));
  EXPECT_EQ(ReadAll(store_->PathOf(digest->sha256)), bytes_);

  auto third = UploadResumable(stub_.get(), kToken, path, *digest);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->already_present);
  EXPECT_EQ(third->bytes_sent, 0u);
}

TEST_F(TransferTest, AnEmptyBlobUploadsAndDownloads) {
  const std::string path = WriteFile("empty", 0);
  auto digest = HashFile(path);
  ASSERT_TRUE(digest.ok());
  ASSERT_TRUE(UploadResumable(stub_.get(), kToken, path, *digest).ok());
  ASSERT_TRUE(store_->Has(digest->sha256));
  const std::string dest = (root_ / "empty.out").string();
  auto got = DownloadToFile(stub_.get(), kToken, digest->sha256, 0, dest);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(fs::file_size(dest), 0u);
}

TEST_F(TransferTest, ACutDownloadResumesAfterARestartFromTheChunksHeld) {
  const std::string path = WriteFile("in", 4 * kChunkBytes + 1);
  auto digest = HashFile(path);
  ASSERT_TRUE(UploadResumable(stub_.get(), kToken, path, *digest).ok());

  const std::string dest = (root_ / "out" / "file").string();
  TransferOptions cut;
  cut.cancelled = StopAfterChunks(3);
  auto first = DownloadToFile(stub_.get(), kToken, digest->sha256, digest->size, dest, cut);
  EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled) << first.status();
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_TRUE(fs::exists(dest + ".partial"));
  // A new call opens the partial from disk as a restarted process would.
  auto second = DownloadToFile(stub_.get(), kToken, digest->sha256, digest->size, dest);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->bytes_received, bytes_.size() - 3 * kChunkBytes);
  EXPECT_EQ(ReadAll(dest), bytes_);
  EXPECT_FALSE(fs::exists(dest + ".partial"));
  EXPECT_FALSE(fs::exists(dest + ".partial.manifest"));

  // Into a store (a worker's cache), cut and then resumed by a restarted store.
  const std::string cache = (root_ / "cache").string();
  {
    BlobStore local(cache);
    ASSERT_TRUE(local.Init(platform::SystemClock().WallMs()).ok());
    cut.cancelled = StopAfterChunks(3);
    auto cut2 = DownloadToStore(stub_.get(), kToken, digest->sha256, digest->size, local, cut);
    EXPECT_EQ(cut2.status().code(), absl::StatusCode::kCancelled);
  }
  BlobStore local(cache);
  ASSERT_TRUE(local.Init(platform::SystemClock().WallMs()).ok());
  auto rest = DownloadToStore(stub_.get(), kToken, digest->sha256, digest->size, local);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->bytes_received, bytes_.size() - 3 * kChunkBytes);
  EXPECT_EQ(ReadAll(local.PathOf(digest->sha256)), bytes_);
}

TEST_F(TransferTest, ASizeThatDoesNotMatchTheCoordinatorsIsDataLoss) {
  const std::string path = WriteFile("in", 10);
  auto digest = HashFile(path);
  ASSERT_TRUE(UploadResumable(stub_.get(), kToken, path, *digest).ok());
  auto got = DownloadToFile(stub_.get(), kToken, digest->sha256, 11, (root_ / "o").string());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  auto missing = DownloadToFile(stub_.get(), kToken, std::string(64, 'a'), 1,
                                (root_ / "o").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TransferTest, AFileChangedSinceItWasHashedIsNotUploaded) {
  const std::string path = WriteFile("in", 100);
  auto digest = HashFile(path);
  std::ofstream(path, std::ios::app) << "more";
  auto up = UploadResumable(stub_.get(), kToken, path, *digest);
  EXPECT_EQ(up.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(service_->put_calls.load(), 0);
}

// A worker uploads a task's file from the descriptor it checked: what the path names by then
// (here a link to another file) is never read.
TEST_F(TransferTest, AnUploadFromAnOpenFileReadsThatFileNotThePath) {
  const std::string path = WriteFile("in", 2 * kChunkBytes + 7);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::lseek(fd, 5, SEEK_SET);  // the offset does not matter
  auto digest = HashFd(fd, path);
  ASSERT_TRUE(digest.ok()) << digest.status();
  const std::string secret = (root_ / "secret").string();
  std::ofstream(secret) << "the owner's key";
  fs::remove(path);
  fs::create_symlink(secret, path);
  TransferOptions from_fd;
  from_fd.source_fd = fd;
  auto up = UploadResumable(stub_.get(), kToken, path, *digest, from_fd);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(ReadAll(store_->PathOf(digest->sha256)), bytes_);
  EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "the caller's descriptor was closed";
  ::close(fd);
  // By the path the link is refused as before.
  auto by_path = UploadResumable(stub_.get(), kToken, path, *HashFile(secret), [] {
    TransferOptions o;
    o.follow_symlinks = false;
    return o;
  }());
  EXPECT_FALSE(by_path.ok());
}

TEST(RetryTest, UnavailableIsRetriedWithDoublingBackoffThenGivenUp) {
  RetryPolicy policy;
  policy.max_tries = 4;
  policy.initial_backoff = std::chrono::milliseconds(100);
  policy.max_backoff = std::chrono::milliseconds(250);
  std::vector<int64_t> waits;
  policy.wait = [&](std::chrono::milliseconds d) { waits.push_back(d.count()); };
  int tries = 0;
  absl::Status st = RetryUnavailable(policy, {}, [&] {
    ++tries;
    return absl::UnavailableError("down");
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(tries, 4);
  EXPECT_EQ(waits, (std::vector<int64_t>{100, 200, 250}));
  // Other errors are not retried; a cancel stops before the next try.
  tries = 0;
  st = RetryUnavailable(policy, {}, [&] {
    ++tries;
    return absl::DataLossError("bad");
  });
  EXPECT_EQ(tries, 1);
  bool cancel = false;
  st = RetryUnavailable(policy, [&] { return cancel; }, [&] {
    cancel = true;
    return absl::UnavailableError("down");
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace idlepool::blob
