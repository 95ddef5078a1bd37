// Swarm download: fetches a blob's chunks from other workers of the pool (their Peer service)
// and from the coordinator at once, BitTorrent style, into a BlobStore's partial transfer.
//
// LocateBlob gives the manifest and up to 16 peers (workers holding the blob, or fetching it);
// the partial is opened (chunks already held count: resumable across restarts). Then up to
// `max_in_flight` chunk requests run at once, at most `max_per_peer` to one peer and
// `max_coordinator` to the coordinator. The next chunk from a peer is the rarest among the
// chunks peers hold (BitTorrent's rarest-first: spreads the scarce chunks before the common ones),
// ties broken by a seeded generator; chunks no usable peer holds come from the coordinator
// (FetchChunk, `wanted` = the missing chunks neither in flight nor held by a peer), which sends
// each chunk about once and answers RESOURCE_EXHAUSTED when everything wanted went out moments
// ago (see coordinator/tracker.h). Peers' bitmaps (HaveChunks, in parallel) are refreshed every
// `bitmap_refresh` and the peer list every `locate_refresh` while downloading. Every chunk is
// verified against the manifest before it is written (PartialBlob), so a peer can waste a fetch
// but never corrupt the blob; a peer whose chunk fails verification, or that fails or is slower
// than `peer_timeout`, is left alone for `peer_penalty` (doubling per strike). The finished blob
// is checked whole and published (PartialBlob::Publish).
//
// Defaults: 6 requests in flight keep a 100 Mbit/s LAN link busy with 1 MiB chunks while no peer
// or coordinator gets more than 2 (BitTorrent clients likewise pipeline a few requests per peer);
// 250 ms bitmap refresh is a few chunk times on such a link; 1.5 s peer-list refresh finds new
// fetchers well before the tracker's 10 s expiry.
//
// Thread safety: the function may run concurrently (for different blobs; two downloads of one blob
// share its partial and merely duplicate work). It blocks the caller and runs max_in_flight
// threads of its own. Errors: kCancelled when `cancelled` said so; kUnavailable when the
// coordinator stayed unreachable past the retry policy; kDataLoss when the coordinator's chunks,
// manifest or the whole blob do not verify; the coordinator's other codes (kNotFound,
// kPermissionDenied, kInvalidArgument) as it gave them. A coordinator that does not implement
// LocateBlob falls back to DownloadToStore.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "blob/store.h"
#include "blob/transfer.h"
#include "core/types.h"
#include "grpcpp/security/credentials.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"

namespace idlepool::blob {

struct SwarmOptions {
  std::string worker;  // this worker's name, as the coordinator knows it
  std::string token;   // an access token for the coordinator; empty for a worker (mTLS)
  // This worker's mTLS credentials for peers (trust::WorkerChannelCredentials); peers are
  // verified by the name every worker certificate carries (trust::kWorkerSanName).
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials;
  int max_in_flight = 6;
  int max_per_peer = 2;
  int max_coordinator = 2;
  core::Millis bitmap_refresh{250};
  core::Millis locate_refresh{1500};
  core::Millis peer_timeout{20000};  // deadline of one GetChunk (1 MiB at 0.5 Mbit/s)
  core::Millis peer_penalty{5000};   // a failing peer is skipped this long, doubling per strike
  core::Millis coordinator_timeout{60000};  // deadline of one FetchChunk
  // Asked every bitmap_refresh and before each request; true stops with kCancelled (in-flight
  // requests are cancelled).
  std::function<bool()> cancelled;
  // Consecutive coordinator failures (kUnavailable) tolerated, and the backoff between them.
  RetryPolicy retry;
  const platform::Clock* clock = nullptr;  // default: platform::SystemClock()
  uint64_t seed = 0;                       // tie-breaks between equally rare chunks
};

struct SwarmStats {
  uint64_t coordinator_bytes = 0;  // verified chunk bytes from the coordinator
  uint64_t peer_bytes = 0;         // verified chunk bytes from peers
  uint32_t chunks_rejected = 0;    // chunks that failed verification (refetched elsewhere)
  uint32_t peer_failures = 0;      // failed or refused peer requests
  bool already_present = false;    // the store had the blob
};

// Downloads blob `sha256` of `size` bytes into `store` (see above).
[[nodiscard]] absl::StatusOr<SwarmStats> SwarmDownload(v1::Blobs::Stub* coordinator,
                                                       const std::string& sha256, uint64_t size,
                                                       BlobStore& store,
                                                       const SwarmOptions& options);

}  // namespace idlepool::blob
