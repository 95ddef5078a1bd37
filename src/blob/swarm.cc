#include "blob/swarm.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "status_convert.h"

namespace idlepool::blob {

namespace {

constexpr const char* kTokenKey = "x-idlepool-token";
// Every worker certificate names it (trust/ca.h: kWorkerSanName); a peer's address is not in
// its certificate.
constexpr const char* kPeerName = "worker.idlepool";
constexpr core::Millis kLocateDeadline{30000};
constexpr core::Millis kHaveDeadline{2000};
constexpr core::Millis kBusyPenalty{300};  // a peer at its serving limit
constexpr core::Millis kPoll{50};          // fetchers re-check expired penalties this often

bool Cancelled(const SwarmOptions& o) { return o.cancelled && o.cancelled(); }

std::vector<bool> FromBitmap(const std::string& bits, uint32_t chunks) {
  std::vector<bool> have(chunks, false);
  for (uint32_t i = 0; i < chunks && i / 8 < bits.size(); ++i) {
    have[i] = (static_cast<unsigned char>(bits[i / 8]) >> (i % 8)) & 1;
  }
  return have;
}

class Swarm {
 public:
  Swarm(v1::Blobs::Stub* coordinator, BlobStore& store, const SwarmOptions& options,
        const platform::Clock& clock)
      : coord_(coordinator),
        store_(store),
        o_(options),
        clock_(clock),
        rng_(options.seed),
        coord_backoff_(options.retry.initial_backoff) {}

  // One run: locate, fetch until complete (or an error), publish. Stats accumulate in `stats`.
  absl::Status Run(const std::string& sha256, uint64_t size, SwarmStats* stats) {
    v1::LocateBlobReply located;
    if (absl::Status st = Locate(sha256, &located); !st.ok()) return st;
    absl::StatusOr<Manifest> m = FromProto(located.manifest());
    if (!m.ok() || m->sha256 != sha256) {
      return absl::DataLossError(absl::StrCat("the coordinator's manifest of blob ", sha256,
                                              " is invalid or another blob's"));
    }
    if (m->size != size) {
      return absl::DataLossError(absl::StrCat("blob ", sha256, ": the coordinator holds ",
                                              m->size, " bytes, expected ", size));
    }
    absl::StatusOr<std::shared_ptr<PartialBlob>> partial = store_.OpenPartial(*m);
    if (!partial.ok()) return partial.status();
    partial_ = *partial;
    manifest_ = *m;
    in_flight_.assign(manifest_.chunk_count(), false);
    MergePeers(located);

    std::vector<std::thread> fetchers;
    for (int i = 0; i < std::max(1, o_.max_in_flight); ++i) {
      fetchers.emplace_back([this] { FetchLoop(); });
    }
    RefreshLoop();
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      for (grpc::ClientContext* c : calls_) c->TryCancel();
      cv_.notify_all();
    }
    for (auto& t : fetchers) t.join();
    stats->coordinator_bytes += stats_.coordinator_bytes;
    stats->peer_bytes += stats_.peer_bytes;
    stats->chunks_rejected += stats_.chunks_rejected;
    stats->peer_failures += stats_.peer_failures;
    if (!error_.ok()) return error_;
    absl::Status p = partial_->Publish();
    if (!p.ok() && store_.Has(sha256)) return absl::OkStatus();  // a concurrent download won
    return p;
  }

 private:
  struct Peer {
    std::string worker;
    bool complete = false;
    bool have_known = false;
    std::vector<bool> have;
    int in_flight = 0;
    int strikes = 0;
    core::MonoTime skip_until{};
    std::unique_ptr<v1::Peer::Stub> stub;
  };
  struct Job {
    bool from_coordinator = false;
    std::string address;  // the peer's
    uint32_t index = 0;   // the peer job's chunk
    std::vector<uint32_t> wanted;
    bool no_usable_peer = false;  // coordinator jobs: every known peer is being skipped
  };

  std::shared_ptr<grpc::ChannelCredentials> PeerCreds() const {
    return o_.peer_credentials ? o_.peer_credentials : grpc::InsecureChannelCredentials();
  }

  absl::Status Locate(const std::string& sha256, v1::LocateBlobReply* reply) {
    grpc::ClientContext ctx;
    if (!o_.token.empty()) ctx.AddMetadata(kTokenKey, o_.token);
    ctx.set_deadline(platform::DeadlineAfter(kLocateDeadline));
    v1::LocateBlobRequest req;
    req.set_sha256(sha256);
    req.set_worker(o_.worker);
    grpc::Status st = coord_->LocateBlob(&ctx, req, reply);
    if (!st.ok()) return wire::FromGrpc(st, absl::StrCat("locating blob ", sha256));
    return absl::OkStatus();
  }

  void MergePeers(const v1::LocateBlobReply& reply) {
    std::lock_guard lock(mu_);
    for (const auto& p : reply.peers()) {
      if (p.address().empty() || p.address().size() > 256 || peers_.size() >= 64) continue;
      Peer& peer = peers_[p.address()];
      if (!peer.stub) {
        grpc::ChannelArguments args;
        args.SetMaxReceiveMessageSize(8 << 20);
        args.SetSslTargetNameOverride(kPeerName);
        peer.stub = v1::Peer::NewStub(grpc::CreateCustomChannel(p.address(), PeerCreds(), args));
      }
      peer.worker = p.worker();
      if (p.complete()) {
        peer.complete = true;
        peer.have_known = true;
        peer.have.assign(manifest_.chunk_count(), true);
      }
    }
    cv_.notify_all();
  }

  bool Usable(const Peer& p, core::MonoTime now) const {
    return p.have_known && now >= p.skip_until;
  }

  bool DoneLocked() const { return stop_ || !error_.ok() || partial_->complete(); }

  // The next request to make, if any. Rarest first among chunks peers hold; the coordinator for
  // chunks no usable peer holds.
  std::optional<Job> PickLocked(core::MonoTime now) {
    const uint32_t n = manifest_.chunk_count();
    std::optional<uint32_t> best;
    uint32_t best_count = 0;
    uint64_t best_tie = 0;
    std::vector<uint32_t> wanted;
    for (uint32_t i = 0; i < n; ++i) {
      if (in_flight_[i] || partial_->Has(i)) continue;
      uint32_t holders = 0;
      bool free_holder = false;
      for (const auto& [addr, p] : peers_) {
        if (!Usable(p, now) || !p.have[i]) continue;
        ++holders;
        if (p.in_flight < o_.max_per_peer) free_holder = true;
      }
      if (holders == 0) {
        wanted.push_back(i);
        continue;
      }
      if (!free_holder) continue;
      const uint64_t tie = rng_();
      if (!best || holders < best_count || (holders == best_count && tie < best_tie)) {
        best = i;
        best_count = holders;
        best_tie = tie;
      }
    }
    if (best) {
      Job job;
      job.index = *best;
      // The least busy holder; ties: partial peers first (they have upload to spare while
      // complete ones serve everyone), then address order.
      const Peer* chosen = nullptr;
      for (const auto& [addr, p] : peers_) {
        if (!Usable(p, now) || !p.have[*best] || p.in_flight >= o_.max_per_peer) continue;
        if (!chosen || p.in_flight < chosen->in_flight ||
            (p.in_flight == chosen->in_flight && chosen->complete && !p.complete)) {
          chosen = &p;
          job.address = addr;
        }
      }
      return job;
    }
    // No more coordinator requests in flight than chunks wanted from it: two requests for a
    // one-chunk blob would both be answered with that chunk, and its bytes sent twice.
    if (wanted.size() > static_cast<size_t>(coord_in_flight_) &&
        coord_in_flight_ < o_.max_coordinator && now >= coord_skip_until_) {
      Job job;
      job.from_coordinator = true;
      // Peers known but none usable now (each failed and is being skipped): say so, so that the
      // tracker does not send us back to them for its resend delay.
      job.no_usable_peer =
          !peers_.empty() && std::all_of(peers_.begin(), peers_.end(), [&](const auto& e) {
            return e.second.strikes > 0 && now < e.second.skip_until;
          });
      job.wanted = std::move(wanted);
      return job;
    }
    return std::nullopt;
  }

  void FetchLoop() {
    std::unique_lock lock(mu_);
    while (true) {
      std::optional<Job> job;
      while (!DoneLocked()) {
        job = PickLocked(clock_.Now());
        if (job) break;
        cv_.wait_for(lock, kPoll);
      }
      if (!job) return;
      if (job->from_coordinator) {
        ++coord_in_flight_;
      } else {
        in_flight_[job->index] = true;
        ++peers_[job->address].in_flight;
      }
      v1::ChunkData chunk;
      grpc::ClientContext ctx;
      // Only the coordinator sees a token; peers know each other by certificate.
      if (job->from_coordinator && !o_.token.empty()) ctx.AddMetadata(kTokenKey, o_.token);
      calls_.insert(&ctx);
      grpc::Status st;
      lock.unlock();
      if (job->from_coordinator) {
        ctx.set_deadline(platform::DeadlineAfter(o_.coordinator_timeout));
        v1::FetchChunkRequest req;
        req.set_sha256(manifest_.sha256);
        req.set_worker(o_.worker);
        for (uint32_t i : job->wanted) req.add_wanted(i);
        req.set_no_usable_peer(job->no_usable_peer);
        st = coord_->FetchChunk(&ctx, req, &chunk);
      } else {
        ctx.set_deadline(platform::DeadlineAfter(o_.peer_timeout));
        v1::GetChunkRequest req;
        req.set_sha256(manifest_.sha256);
        req.set_index(job->index);
        v1::Peer::Stub* stub;
        {
          std::lock_guard relock(mu_);
          stub = peers_[job->address].stub.get();
        }
        st = stub->GetChunk(&ctx, req, &chunk);
      }
      // Verified (and written) outside the lock: hashing 1 MiB takes milliseconds.
      absl::Status put;
      const bool index_ok = chunk.index() < manifest_.chunk_count() &&
                            (job->from_coordinator || chunk.index() == job->index);
      if (st.ok()) {
        put = index_ok ? partial_->PutChunk(chunk.index(), chunk.data())
                       : absl::DataLossError("a chunk with another index than asked");
      }
      lock.lock();
      calls_.erase(&ctx);
      if (job->from_coordinator) {
        OnCoordinatorReply(st, put, chunk);
      } else {
        in_flight_[job->index] = false;
        OnPeerReply(job->address, st, put, chunk);
      }
      cv_.notify_all();
    }
  }

  void OnCoordinatorReply(const grpc::Status& st, const absl::Status& put,
                          const v1::ChunkData& chunk) {
    --coord_in_flight_;
    const core::MonoTime now = clock_.Now();
    if (st.ok() && put.ok()) {
      stats_.coordinator_bytes += chunk.data().size();
      coord_failures_ = 0;
      coord_backoff_ = o_.retry.initial_backoff;
      return;
    }
    if (stop_) return;
    if (st.ok()) {
      ++stats_.chunks_rejected;
      error_ = absl::Status(put.code(), absl::StrCat("chunk from the coordinator: ", put.message()));
      return;
    }
    switch (st.error_code()) {
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        // Everything we want went to other workers moments ago: look for them now.
        coord_skip_until_ = now + o_.bitmap_refresh;
        refresh_now_ = true;
        return;
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::CANCELLED:
        ++coord_failures_;
        if (o_.retry.max_tries > 0 && coord_failures_ >= o_.retry.max_tries) {
          error_ = wire::FromGrpc(st, absl::StrCat("chunks of blob ", manifest_.sha256));
          if (error_.code() != absl::StatusCode::kUnavailable) {
            error_ = absl::UnavailableError(error_.message());
          }
          return;
        }
        coord_skip_until_ = now + coord_backoff_;
        coord_backoff_ = std::min(coord_backoff_ * 2, o_.retry.max_backoff);
        return;
      default:
        error_ = wire::FromGrpc(st, absl::StrCat("chunks of blob ", manifest_.sha256));
    }
  }

  void OnPeerReply(const std::string& address, const grpc::Status& st, const absl::Status& put,
                   const v1::ChunkData& chunk) {
    Peer& p = peers_[address];
    --p.in_flight;
    const core::MonoTime now = clock_.Now();
    if (st.ok() && put.ok()) {
      stats_.peer_bytes += chunk.data().size();
      p.strikes = 0;
      return;
    }
    if (stop_) return;
    if (st.ok()) {
      ++stats_.chunks_rejected;  // a lying or corrupt peer: long penalty, chunk refetched
      p.skip_until = now + o_.peer_penalty * (1 << std::min(p.strikes++, 6)) * 4;
      return;
    }
    ++stats_.peer_failures;
    switch (st.error_code()) {
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        p.skip_until = now + kBusyPenalty;
        return;
      case grpc::StatusCode::NOT_FOUND:
        // It lost the blob (evicted) or the chunk: forget what it had until it says again.
        if (!p.complete) {
          p.have_known = false;
        } else {
          p.complete = false;
          p.have_known = false;
        }
        return;
      default:
        p.skip_until = now + o_.peer_penalty * (1 << std::min(p.strikes++, 6));
    }
  }

  // Runs on the calling thread: refreshes peers' bitmaps and the peer list until done.
  void RefreshLoop() {
    core::MonoTime next_locate = clock_.Now() + o_.locate_refresh;
    core::MonoTime next_bitmaps = clock_.Now();
    std::unique_lock lock(mu_);
    while (!DoneLocked()) {
      if (Cancelled(o_)) {
        error_ = absl::CancelledError(absl::StrCat("download of ", manifest_.sha256, " cancelled"));
        break;
      }
      core::MonoTime now = clock_.Now();
      const bool refresh = refresh_now_;
      refresh_now_ = false;
      if (now >= next_locate || refresh) {
        lock.unlock();
        v1::LocateBlobReply located;
        if (Locate(manifest_.sha256, &located).ok()) MergePeers(located);
        lock.lock();
        next_locate = clock_.Now() + o_.locate_refresh;
      }
      if (now >= next_bitmaps || refresh) {
        RefreshBitmaps(lock);
        next_bitmaps = clock_.Now() + o_.bitmap_refresh;
      }
      if (DoneLocked()) break;
      const core::MonoTime wake = std::min(next_locate, next_bitmaps);
      now = clock_.Now();
      if (wake > now && !refresh_now_) {
        cv_.wait_for(lock, std::min<core::Millis>(
                               std::chrono::duration_cast<core::Millis>(wake - now) + core::Millis(1),
                               o_.bitmap_refresh));
      }
    }
  }

  // HaveChunks to every partial peer not being skipped, in parallel. Called with `lock` held;
  // releases it while the calls run.
  void RefreshBitmaps(std::unique_lock<std::mutex>& lock) {
    struct Call {
      std::string address;
      v1::Peer::Stub* stub;
      grpc::ClientContext ctx;
      v1::HaveChunksRequest req;
      v1::HaveChunksReply reply;
      grpc::Status status;
    };
    const core::MonoTime now = clock_.Now();
    std::vector<std::unique_ptr<Call>> calls;
    for (auto& [addr, p] : peers_) {
      if (p.complete || now < p.skip_until) continue;
      auto c = std::make_unique<Call>();
      c->address = addr;
      c->stub = p.stub.get();
      c->ctx.set_deadline(platform::DeadlineAfter(kHaveDeadline));
      c->req.set_sha256(manifest_.sha256);
      calls.push_back(std::move(c));
    }
    if (calls.empty()) return;
    lock.unlock();
    std::mutex done_mu;
    std::condition_variable done_cv;
    size_t pending = calls.size();
    for (auto& c : calls) {
      Call* call = c.get();
      call->stub->async()->HaveChunks(&call->ctx, &call->req, &call->reply,
                                      [&, call](grpc::Status s) {
                                        call->status = std::move(s);
                                        std::lock_guard l(done_mu);
                                        if (--pending == 0) done_cv.notify_all();
                                      });
    }
    {
      std::unique_lock l(done_mu);
      done_cv.wait(l, [&] { return pending == 0; });  // each call has a deadline
    }
    lock.lock();
    const core::MonoTime after = clock_.Now();
    for (auto& c : calls) {
      Peer& p = peers_[c->address];
      if (c->status.ok()) {
        if (c->reply.complete()) {
          p.complete = true;
          p.have.assign(manifest_.chunk_count(), true);
        } else {
          p.have = FromBitmap(c->reply.bitmap(), manifest_.chunk_count());
        }
        p.have_known = true;
      } else if (c->status.error_code() == grpc::StatusCode::NOT_FOUND) {
        p.have_known = false;  // not started yet, or evicted: nothing to ask it for
      } else {
        ++stats_.peer_failures;
        p.have_known = false;
        p.skip_until = after + o_.peer_penalty * (1 << std::min(p.strikes++, 6));
      }
    }
    cv_.notify_all();
  }

  v1::Blobs::Stub* const coord_;
  BlobStore& store_;
  const SwarmOptions& o_;
  const platform::Clock& clock_;

  std::mutex mu_;
  std::condition_variable cv_;
  Manifest manifest_;                     // set before the threads start
  std::shared_ptr<PartialBlob> partial_;  // set before the threads start
  std::mt19937_64 rng_;
  std::map<std::string, Peer> peers_;  // by address
  std::vector<bool> in_flight_;        // chunks requested from a peer right now
  int coord_in_flight_ = 0;
  int coord_failures_ = 0;  // consecutive
  core::Millis coord_backoff_{200};
  core::MonoTime coord_skip_until_{};
  bool refresh_now_ = false;
  bool stop_ = false;
  absl::Status error_;
  std::set<grpc::ClientContext*> calls_;  // in flight, cancelled on stop
  SwarmStats stats_;
};

}  // namespace

absl::StatusOr<SwarmStats> SwarmDownload(v1::Blobs::Stub* coordinator, const std::string& sha256,
                                         uint64_t size, BlobStore& store,
                                         const SwarmOptions& options) {
  SwarmStats stats;
  if (!IsSha256Hex(sha256)) return absl::InvalidArgumentError("bad blob hash");
  if (store.Has(sha256)) {
    stats.already_present = true;
    return stats;
  }
  const platform::Clock& clock = options.clock ? *options.clock : platform::SystemClock();
  bool fallback = false;
  absl::Status st = RetryUnavailable(options.retry, options.cancelled, [&]() -> absl::Status {
    Swarm swarm(coordinator, store, options, clock);
    absl::Status run = swarm.Run(sha256, size, &stats);
    if (run.code() == absl::StatusCode::kUnimplemented) fallback = true;
    return run;
  });
  if (fallback) {
    // A coordinator without LocateBlob: the whole blob from it, resumably.
    TransferOptions t;
    t.cancelled = options.cancelled;
    t.retry = options.retry;
    absl::StatusOr<TransferStats> got =
        DownloadToStore(coordinator, options.token, sha256, size, store, t);
    if (!got.ok()) return got.status();
    stats.coordinator_bytes += got->bytes_received;
    return stats;
  }
  if (!st.ok()) return st;
  return stats;
}

}  // namespace idlepool::blob
