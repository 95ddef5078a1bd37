// The Probes service (proto: Probe, ProbeDown, ProbeUp): link measurement for workers
// (worker/measure.h). A round trip, and throughput down and up, at most 64 MiB per transfer and
// 1 MiB per message. Throughput probes pass one at a time (ProbeGate), so workers joining
// together each measure the link alone; at most 16 wait, up to a minute each, else
// RESOURCE_EXHAUSTED.
//
// Threads: gRPC's handler threads, concurrently. Holds the token check and the clock (must
// outlive it) and its own incompressible payload; the gate locks itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "coordinator/auth.h"
#include "core/types.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "platform/clock.h"

namespace idlepool::coordinator {

// Most bytes one throughput probe may ask for (also bounds LinkMeasured.probe_bytes).
inline constexpr uint64_t kMaxProbeBytes = uint64_t{64} << 20;

// Serialises throughput probes: one transfer at a time. Thread-safe.
class ProbeGate {
 public:
  // Waits for the gate; false when too many already wait, the wait passed `deadline`, or the
  // call was cancelled.
  bool Enter(grpc::ServerContext* ctx, const platform::Clock& clock, core::MonoTime deadline);
  void Leave();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

class ProbeService final : public v1::Probes::Service {
 public:
  ProbeService(const Authorizer& authz, const platform::Clock& clock);

  // A round trip: nothing to do (Probe.bytes must be 0).
  grpc::Status Probe(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                     v1::ProbeReply* reply) override;
  // Throughput down: once this probe has the gate, an empty message (go), then the bytes.
  grpc::Status ProbeDown(grpc::ServerContext* ctx, const v1::ProbeRequest* req,
                         grpc::ServerWriter<v1::ProbeData>* writer) override;
  // Throughput up: the announced size, go, the bytes, and the time from go to the last byte.
  grpc::Status ProbeUp(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::ProbeReply, v1::ProbeData>* stream) override;

 private:
  const Authorizer& authz_;
  const platform::Clock& clock_;
  const std::string payload_;  // kProbeChunk incompressible bytes, sent by ProbeDown
  ProbeGate gate_;
};

}  // namespace idlepool::coordinator
