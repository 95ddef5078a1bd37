// What a worker measures of itself for the planner (issue 6): its CPU speed on a fixed
// calibration, and its link to the coordinator (round trip and throughput both ways).
//
// Calibration: SHA-256 (OpenSSL) over `bytes` of an in-memory buffer on one thread, timed in
// that thread's CPU time (platform::ThreadCpuNanos), so other load on the machine distorts it
// little. cpu_score = MB/s (10^6 bytes) of one core. 64 MiB: well under a second on any
// machine of the last decade (SHA-256 runs 0.3-2 GB/s per core).
//
// Link: the round trip is the minimum of `pings` unary Probe calls (after one warm-up call that
// opens the connection). Throughput is measured down (ProbeDown) and then up (ProbeUp) with
// transfers of start_bytes, doubling until one takes at least target_s or reaches max_bytes;
// the rate of the last (largest) transfer is reported. The coordinator serves throughput probes
// one at a time and marks when it starts serving one (proto: ProbeDown, ProbeUp), so time spent
// waiting for other workers' probes is never counted. Up: the coordinator's elapsed time
// includes one round trip, which is subtracted (at most half of it).
//
// Thread safety: the functions are reentrant; MeasureLink blocks for the probe's duration.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "core/types.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"

namespace idlepool::worker {

struct CalibrationOptions {
  uint64_t bytes = uint64_t{64} << 20;   // hashed in total
  std::function<int64_t()> cpu_nanos;    // default: platform::ThreadCpuNanos
};

struct Calibration {
  double cpu_score = 0;  // MB/s of SHA-256 on one core; 0 if the CPU clock was unusable
  uint32_t cores = 0;    // logical CPUs of the machine
};

Calibration Calibrate(const CalibrationOptions& options = {});

// Cancels a MeasureLink in progress from another thread (the worker stopping). Thread-safe.
class ProbeCanceller {
 public:
  void Cancel();
  // For MeasureLink: registers the call in progress (nullptr when none); false once cancelled.
  bool Track(grpc::ClientContext* ctx);

 private:
  std::mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;
  bool cancelled_ = false;
};

struct LinkProbeOptions {
  std::string token;  // pool secret (metadata x-idlepool-token)
  int pings = 5;
  uint64_t start_bytes = 256 << 10;
  uint64_t max_bytes = 16 << 20;       // the coordinator refuses more than 64 MiB
  double target_s = 0.5;
  core::Millis rpc_timeout{60000};     // per call (a transfer on a slow link, or a wait)
  std::function<int64_t()> steady_nanos;  // default: platform::SteadyNanos
  ProbeCanceller* canceller = nullptr;  // optional
};

struct LinkMeasurement {
  int64_t rtt_us = 0;
  uint64_t down_bytes_per_s = 0;
  uint64_t up_bytes_per_s = 0;
  uint64_t probe_bytes = 0;  // the larger of the two last transfers
};

// The size of the next transfer after one of `bytes` took `elapsed_s`, or 0 to stop (it took
// target_s or more, or max_bytes is reached).
uint64_t NextProbeBytes(uint64_t bytes, double elapsed_s, const LinkProbeOptions& options);

// Errors: the failing call's status (kUnavailable when the coordinator is gone,
// kResourceExhausted when it is busy with other probes); the caller retries later.
[[nodiscard]] absl::StatusOr<LinkMeasurement> MeasureLink(v1::Probes::StubInterface* stub,
                                                          const LinkProbeOptions& options);

}  // namespace idlepool::worker
