// Transfers: the attempt runner's blob traffic — inputs into the cache, outputs to the
// coordinator — behind an interface, so the attempt phases can be tested without a coordinator.
//
// BlobTransfers is the real one: inputs are fetched once into the blob cache (blob_cache.h;
// from peers and the coordinator at once with blob/swarm.h, else from the coordinator alone),
// verified, and pinned for the attempt's life; uploads resume (blob/transfer.h). Transport
// errors are retried with backoff (500 ms doubling to 5 s for fetches) for as long as the
// attempt is wanted. Every transfer counts as "moving" while it runs (TransferGauge), which
// the link prober (link_prober.h) waits out.
//
// Threads: any (runner threads, the checkpoint thread, the outbox thread); stateless beyond
// the gauge. Ownership: the stub, cache, peer server and stop signal are not owned (the
// worker's; the stub is created once, by the session). Errors: see each method.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blob/peer_server.h"
#include "blob/transfer.h"
#include "grpcpp/security/credentials.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"
#include "worker/attempt.h"
#include "worker/blob_cache.h"
#include "worker/sender.h"
#include "worker/stop_signal.h"

namespace idlepool::worker {

// What an upload reads: the open regular file `fd` when it is >= 0 (the caller's, left open: a
// task's file is uploaded from the descriptor that was checked and hashed), else the file at
// `path`, never through a symbolic link at its end. `path` names it in messages either way.
struct UploadSource {
  std::string path;
  int fd = -1;
};

class Transfers {
 public:
  virtual ~Transfers() = default;
  // Makes blob `sha256` of `size` bytes available for attempt `a` (verified, pinned while `a`
  // lives, counted in a.transfer) and returns its path. Stops (kCancelled) when `stopped` says
  // so. kInvalidArgument: a bad hash; kResourceExhausted: the disk or cache is full.
  [[nodiscard]] virtual absl::StatusOr<std::string> Stage(Attempt& a, const std::string& sha256,
                                                          uint64_t size,
                                                          const std::function<bool()>& stopped) = 0;
  // Uploads `source` as blob `file` unless the coordinator has it (resuming a cut upload; three
  // tries, callers retry further); adds the bytes sent to `*sent` when given. kDataLoss or
  // kNotFound: the file no longer holds the bytes hashed.
  [[nodiscard]] virtual absl::Status Upload(const UploadSource& source, const v1::OutputFile& file,
                                            std::atomic<uint64_t>* sent) = 0;
};

// Counts the transfers in flight (inputs or outputs moving).
class TransferGauge {
 public:
  class Scope {
   public:
    explicit Scope(TransferGauge& g) : g_(g) { ++g_.n_; }
    ~Scope() { --g_.n_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    TransferGauge& g_;
  };
  [[nodiscard]] bool moving() const { return n_.load() > 0; }

 private:
  std::atomic<int> n_{0};
};

struct BlobTransfersConfig {
  v1::Blobs::Stub* stub = nullptr;
  std::string token;
  std::string worker;   // this worker's name (swarm)
  std::string boot_id;  // seeds the swarm's tie-breaks
  BlobCache* cache = nullptr;
  blob::PeerServer* peer_server = nullptr;  // null: fetch from the coordinator alone
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials;  // this worker's, to call peers
  const platform::Clock* clock = nullptr;
  StopSignal* stop = nullptr;
  TransferGauge* gauge = nullptr;
  Sender send;  // the cache's changes after each fetch
};

class BlobTransfers final : public Transfers {
 public:
  explicit BlobTransfers(BlobTransfersConfig config) : c_(std::move(config)) {}
  [[nodiscard]] absl::StatusOr<std::string> Stage(Attempt& a, const std::string& sha256,
                                                  uint64_t size,
                                                  const std::function<bool()>& stopped) override;
  [[nodiscard]] absl::Status Upload(const UploadSource& source, const v1::OutputFile& file,
                                    std::atomic<uint64_t>* sent) override;

 private:
  struct Fetched {
    uint64_t from_coordinator = 0, from_peers = 0;
  };
  absl::StatusOr<uint64_t> Fetch(const std::string& sha256, uint64_t size,
                                 const blob::TransferOptions& opts, blob::BlobStore& store,
                                 Fetched* fetched);
  void SendCacheChanges();
  const BlobTransfersConfig c_;
};

}  // namespace idlepool::worker
