#include "coordinator/probe_service.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "blob/blob.h"

namespace idlepool::coordinator {
namespace {

constexpr size_t kMaxProbeMessage = 1 << 20;
constexpr size_t kProbeChunk = 256 << 10;
constexpr int kMaxProbeWaiters = 16;
constexpr core::Millis kProbeWait = std::chrono::minutes(1);

grpc::Status ProbeBusy() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "busy with other workers' link probes; try again later");
}

// Leaves the gate when the probe ends, however it ends.
struct GateHeld {
  ProbeGate& g;
  ~GateHeld() { g.Leave(); }
};

}  // namespace

bool ProbeGate::Enter(grpc::ServerContext* ctx, const platform::Clock& clock,
                      core::MonoTime deadline) {
  std::unique_lock lock(mu_);
  if (waiting_ >= kMaxProbeWaiters) return false;
  ++waiting_;
  while (busy_ && !ctx->IsCancelled() && clock.Now() < deadline) {
    cv_.wait_for(lock, core::Millis(100));
  }
  --waiting_;
  if (busy_) return false;
  busy_ = true;
  return true;
}

void ProbeGate::Leave() {
  std::lock_guard lock(mu_);
  busy_ = false;
  cv_.notify_one();
}

ProbeService::ProbeService(const Authorizer& authz, const platform::Clock& clock)
    : authz_(authz), clock_(clock), payload_(blob::PseudoRandomBytes(kProbeChunk)) {}

grpc::Status ProbeService::Probe(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                                 v1::ProbeReply*) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Probes/Probe"); !st.ok()) return st;
  if (req->bytes() != 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Probe.bytes must be 0");
  }
  return grpc::Status::OK;
}

grpc::Status ProbeService::ProbeDown(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                                     grpc::ServerWriter<v1::ProbeData>* writer) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Probes/ProbeDown"); !st.ok()) return st;
  if (req->bytes() == 0 || req->bytes() > kMaxProbeBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("ProbeDown.bytes must be 1 to ", kMaxProbeBytes));
  }
  if (!gate_.Enter(ctx, clock_, clock_.Now() + kProbeWait)) return ProbeBusy();
  GateHeld held{gate_};
  v1::ProbeData d;
  if (!writer->Write(d)) return grpc::Status::OK;
  for (uint64_t sent = 0; sent < req->bytes(); sent += kProbeChunk) {
    d.set_data(payload_.data(), std::min<uint64_t>(kProbeChunk, req->bytes() - sent));
    if (!writer->Write(d)) return grpc::Status::OK;
  }
  return grpc::Status::OK;
}

grpc::Status ProbeService::ProbeUp(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<v1::ProbeReply, v1::ProbeData>* stream) {
  if (auto st = authz_.Check(ctx, "/idlepool.v1.Probes/ProbeUp"); !st.ok()) return st;
  v1::ProbeData head;
  if (!stream->Read(&head)) return grpc::Status::OK;
  const uint64_t want = head.bytes();
  if (want == 0 || want > kMaxProbeBytes || !head.data().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("ProbeUp must start with ProbeData.bytes of 1 to ",
                                     kMaxProbeBytes, " and no data"));
  }
  if (!gate_.Enter(ctx, clock_, clock_.Now() + kProbeWait)) return ProbeBusy();
  GateHeld held{gate_};
  const int64_t t0 = platform::SteadyNanos();
  if (!stream->Write(v1::ProbeReply{})) return grpc::Status::OK;
  uint64_t got = 0;
  v1::ProbeData d;
  while (got < want && stream->Read(&d)) {
    if (d.data().size() > kMaxProbeMessage || d.bytes() != 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "ProbeUp: data messages carry at most 1 MiB and no size");
    }
    got += d.data().size();
  }
  const int64_t t1 = platform::SteadyNanos();
  if (got != want) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("ProbeUp: got ", got, " bytes, announced ", want));
  }
  v1::ProbeReply r;
  r.set_bytes(got);
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::nanoseconds(t1 - t0));
  r.set_elapsed_us(static_cast<uint64_t>(std::max<int64_t>(1, elapsed.count())));
  stream->Write(r);
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
