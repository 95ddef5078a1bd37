#include "worker/transfers.h"

#include <algorithm>

#include "blob/blob.h"
#include "blob/swarm.h"
#include "blob/transfer.h"
#include "spdlog/spdlog.h"

namespace idlepool::worker {

absl::StatusOr<uint64_t> BlobTransfers::Fetch(const std::string& sha256, uint64_t size,
                                              const blob::TransferOptions& opts,
                                              blob::BlobStore& store, Fetched* fetched) {
  if (!c_.peer_server) {
    auto got = blob::DownloadToStore(c_.stub, c_.token, sha256, size, store, opts);
    if (!got.ok()) return got.status();
    fetched->from_coordinator = got->bytes_received;
    return got->bytes_received;
  }
  blob::SwarmOptions so;
  so.worker = c_.worker;
  so.token = c_.token;
  so.peer_credentials = c_.peer_credentials;
  so.cancelled = opts.cancelled;
  so.retry = opts.retry;
  so.clock = c_.clock;
  so.seed = std::hash<std::string>{}(c_.boot_id + sha256);
  auto got = blob::SwarmDownload(c_.stub, sha256, size, store, so);
  if (!got.ok()) return got.status();
  fetched->from_coordinator = got->coordinator_bytes;
  fetched->from_peers = got->peer_bytes;
  if (got->chunks_rejected > 0) {
    spdlog::warn("blob {}: {} chunks failed verification and were fetched again",
                 sha256.substr(0, 12), got->chunks_rejected);
  }
  return got->coordinator_bytes + got->peer_bytes;
}

absl::StatusOr<std::string> BlobTransfers::Stage(Attempt& a, const std::string& sha256,
                                                 uint64_t size,
                                                 const std::function<bool()>& stopped) {
  if (!blob::IsSha256Hex(sha256)) return absl::InvalidArgumentError("bad blob hash");
  blob::TransferOptions opts;
  opts.cancelled = stopped;
  opts.retry.max_tries = 5;
  opts.retry.wait = [this](std::chrono::milliseconds d) { c_.stop->WaitFor(d); };
  Fetched fetched;  // by this call's fetch
  // A network blip is never the task's fault: transport errors are retried (resuming from the
  // chunks already held) for as long as the attempt is wanted. If the coordinator gives up on
  // the attempt meanwhile (lease expired), it kills it and staging stops.
  std::chrono::milliseconds backoff{500};
  auto transient = [](const absl::Status& st) {
    return st.code() == absl::StatusCode::kUnavailable ||
           st.code() == absl::StatusCode::kDeadlineExceeded ||
           st.code() == absl::StatusCode::kAborted;
  };
  absl::StatusOr<BlobCache::Pin> pin = absl::UnavailableError("not fetched yet");
  TransferGauge::Scope moving(*c_.gauge);
  while (true) {
    pin = c_.cache->Acquire(sha256, size, [&](blob::BlobStore& store) {
      return Fetch(sha256, size, opts, store, &fetched);
    });
    if (pin.ok() || !transient(pin.status()) || stopped() || c_.stop->stopping()) break;
    spdlog::warn("attempt {}: fetching blob {} failed ({}); retrying in {} ms", a.id,
                 sha256.substr(0, 12), std::string(pin.status().message()), backoff.count());
    c_.stop->WaitFor(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  SendCacheChanges();
  if (!pin.ok()) return pin.status();
  a.transfer.Staged(size, pin->hit(), fetched.from_coordinator, fetched.from_peers);
  std::lock_guard lock(a.mu);
  a.pins.push_back(std::move(*pin));
  return c_.cache->PathOf(sha256);
}

absl::Status BlobTransfers::Upload(const UploadSource& source, const v1::OutputFile& file,
                                   std::atomic<uint64_t>* sent) {
  blob::TransferOptions opts;
  opts.follow_symlinks = false;
  opts.source_fd = source.fd;
  // Not cancelled when the worker stops: a vacated attempt's final checkpoint still goes up.
  opts.retry.max_tries = 3;  // callers retry further on their own schedule
  opts.retry.wait = [this](std::chrono::milliseconds d) { c_.stop->WaitFor(d); };
  TransferGauge::Scope moving(*c_.gauge);
  auto stats = blob::UploadResumable(c_.stub, c_.token, source.path,
                                     blob::FileDigest{file.sha256(), file.size()}, opts);
  if (!stats.ok()) return stats.status();
  if (sent != nullptr) *sent += stats->bytes_sent;
  return absl::OkStatus();
}

// Tells the coordinator what the cache gained and lost (dropped while no session is up: the
// next Hello lists the whole cache).
void BlobTransfers::SendCacheChanges() {
  v1::WorkerMessage m;
  *m.mutable_cache() = c_.cache->TakeChanges();
  if (m.cache().added_size() > 0 || m.cache().removed_size() > 0) c_.send(m);
}

}  // namespace idlepool::worker
