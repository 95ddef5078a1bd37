#include "worker/measure.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"
#include "grpcpp/grpcpp.h"
#include "platform/clock.h"

namespace idlepool::worker {
namespace {

constexpr const char* kTokenKey = "x-idlepool-token";
constexpr size_t kPayloadChunk = 256 << 10;

double SecondsOf(int64_t ns) {
  return std::chrono::duration<double>(std::chrono::nanoseconds(ns)).count();
}

std::unique_ptr<grpc::ClientContext> Context(const LinkProbeOptions& o) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!o.token.empty()) ctx->AddMetadata(kTokenKey, o.token);
  ctx->set_deadline(platform::DeadlineAfter(o.rpc_timeout));
  return ctx;
}

absl::Status FromGrpc(const grpc::Status& s, const char* what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// Registers `ctx` with the options' canceller for the life of one call.
class Tracked {
 public:
  Tracked(const LinkProbeOptions& o, grpc::ClientContext* ctx) : c_(o.canceller) {
    if (c_ != nullptr && !c_->Track(ctx)) ctx->TryCancel();
  }
  ~Tracked() {
    if (c_ != nullptr) c_->Track(nullptr);
  }

 private:
  ProbeCanceller* c_;
};

}  // namespace

void ProbeCanceller::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool ProbeCanceller::Track(grpc::ClientContext* ctx) {
  std::lock_guard lock(mu_);
  ctx_ = ctx;
  return !cancelled_;
}

Calibration Calibrate(const CalibrationOptions& options) {
  const auto cpu = options.cpu_nanos ? options.cpu_nanos : platform::ThreadCpuNanos;
  Calibration c;
  c.cores = std::max(1u, std::thread::hardware_concurrency());
  // A fixed buffer (not zeros, so nothing can shortcut it), hashed repeatedly.
  const std::string buf = blob::PseudoRandomBytes(1 << 20);
  const int64_t start = cpu();
  blob::Sha256 h;
  for (uint64_t done = 0; done < options.bytes; done += buf.size()) {
    h.Update(buf.data(), std::min<uint64_t>(buf.size(), options.bytes - done));
  }
  (void)h.RawDigest();
  const int64_t ns = cpu() - start;
  if (ns > 0) c.cpu_score = static_cast<double>(options.bytes) / 1e6 / SecondsOf(ns);
  return c;
}

uint64_t NextProbeBytes(uint64_t bytes, double elapsed_s, const LinkProbeOptions& o) {
  if (elapsed_s >= o.target_s || bytes >= o.max_bytes) return 0;
  return std::min(bytes * 2, o.max_bytes);
}

namespace {

using NowNs = std::function<int64_t()>;

// Round trip: a warm-up call (it may open the connection), then the minimum of `pings`: other
// traffic on the link only adds queueing delay, so the smallest round trip is the link's own
// (the min-RTT filter of TCP BBR: Cardwell et al., "BBR: congestion-based congestion
// control", ACM Queue 14(5), 2016). Microseconds.
absl::StatusOr<int64_t> MinRoundTripUs(v1::Probes::StubInterface* stub, const LinkProbeOptions& o,
                                       const NowNs& now_ns) {
  std::vector<int64_t> rtts;
  for (int i = 0; i <= std::max(1, o.pings); ++i) {
    auto ctx = Context(o);
    Tracked tracked(o, ctx.get());
    v1::ProbeRequest req;
    v1::ProbeReply reply;
    const int64_t t0 = now_ns();
    grpc::Status st = stub->Probe(ctx.get(), req, &reply);
    const int64_t t1 = now_ns();
    if (!st.ok()) return FromGrpc(st, "Probe");
    if (i > 0) {
      rtts.push_back(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::nanoseconds(t1 - t0))
              .count());
    }
  }
  return *std::min_element(rtts.begin(), rtts.end());
}

// Down: the clock starts when the coordinator says it serves this probe (an empty message).
// Sets m->down_bytes_per_s; *last_bytes: the size of the last transfer.
absl::Status ProbeDown(v1::Probes::StubInterface* stub, const LinkProbeOptions& o,
                       const NowNs& now_ns, LinkMeasurement* m, uint64_t* last_bytes) {
  for (uint64_t bytes = o.start_bytes; bytes != 0;) {
    auto ctx = Context(o);
    Tracked tracked(o, ctx.get());
    v1::ProbeRequest req;
    req.set_bytes(bytes);
    auto reader = stub->ProbeDown(ctx.get(), req);
    v1::ProbeData d;
    if (!reader->Read(&d)) return FromGrpc(reader->Finish(), "ProbeDown");
    const int64_t t0 = now_ns();
    uint64_t got = 0;
    while (reader->Read(&d)) got += d.data().size();
    const int64_t t1 = now_ns();
    grpc::Status st = reader->Finish();
    if (!st.ok()) return FromGrpc(st, "ProbeDown");
    if (got != bytes) {
      return absl::DataLossError(absl::StrCat("ProbeDown: got ", got, " bytes of ", bytes));
    }
    const double s = SecondsOf(std::max<int64_t>(1, t1 - t0));
    m->down_bytes_per_s = static_cast<uint64_t>(static_cast<double>(bytes) / s);
    *last_bytes = bytes;
    bytes = NextProbeBytes(bytes, s, o);
  }
  return absl::OkStatus();
}

// Up: after the coordinator's go, the bytes; it times go-to-last-byte (plus one round trip).
// Sets m->up_bytes_per_s (m->rtt_us must be set); *last_bytes: the size of the last transfer.
absl::Status ProbeUp(v1::Probes::StubInterface* stub, const LinkProbeOptions& o, LinkMeasurement* m,
                     uint64_t* last_bytes) {
  const std::string payload = blob::PseudoRandomBytes(kPayloadChunk);
  for (uint64_t bytes = o.start_bytes; bytes != 0;) {
    auto ctx = Context(o);
    Tracked tracked(o, ctx.get());
    auto stream = stub->ProbeUp(ctx.get());
    v1::ProbeData head;
    head.set_bytes(bytes);
    v1::ProbeReply r;
    if (!stream->Write(head) || !stream->Read(&r)) {
      stream->WritesDone();
      return FromGrpc(stream->Finish(), "ProbeUp");
    }
    v1::ProbeData d;
    bool ok = true;
    for (uint64_t sent = 0; ok && sent < bytes; sent += kPayloadChunk) {
      d.set_data(payload.data(), std::min<uint64_t>(kPayloadChunk, bytes - sent));
      ok = stream->Write(d);
    }
    stream->WritesDone();
    const bool have_reply = ok && stream->Read(&r);
    grpc::Status st = stream->Finish();
    if (!st.ok()) return FromGrpc(st, "ProbeUp");
    if (!have_reply || r.bytes() != bytes) {
      return absl::DataLossError(absl::StrCat("ProbeUp: the coordinator got ", r.bytes(),
                                              " bytes of ", bytes));
    }
    using Us = std::chrono::duration<double, std::micro>;
    const Us elapsed(static_cast<double>(r.elapsed_us()));
    const Us busy = std::max({Us(1.0), elapsed - Us(static_cast<double>(m->rtt_us)), elapsed / 2});
    m->up_bytes_per_s = static_cast<uint64_t>(static_cast<double>(bytes) /
                                              std::chrono::duration<double>(busy).count());
    *last_bytes = bytes;
    bytes = NextProbeBytes(bytes, std::chrono::duration<double>(elapsed).count(), o);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LinkMeasurement> MeasureLink(v1::Probes::StubInterface* stub,
                                            const LinkProbeOptions& o) {
  const NowNs now_ns = o.steady_nanos ? o.steady_nanos : NowNs(platform::SteadyNanos);
  LinkMeasurement m;
  absl::StatusOr<int64_t> rtt = MinRoundTripUs(stub, o, now_ns);
  if (!rtt.ok()) return rtt.status();
  m.rtt_us = *rtt;
  uint64_t down_bytes = 0, up_bytes = 0;
  if (absl::Status st = ProbeDown(stub, o, now_ns, &m, &down_bytes); !st.ok()) return st;
  if (absl::Status st = ProbeUp(stub, o, &m, &up_bytes); !st.ok()) return st;
  m.probe_bytes = std::max(down_bytes, up_bytes);
  return m;
}

}  // namespace idlepool::worker
