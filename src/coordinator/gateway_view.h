// The gateway's routing state as the coordinator reads it (Gateway::SnapshotJson, rendered by
// serve/gateway_metrics.cc): per service its queue and counters, per replica (by attempt id)
// its state and requests; for both, the time to first token of recent answers. For `idlepool
// services` (service_list.cc) and the autoscaler (service_autoscaler.cc). Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace idlepool::coordinator {

// Time to first token of recent answers (serve/gateway_metrics.h); answers 0: none.
struct RoutedTtft {
  uint32_t answers = 0;
  double p50_ms = 0, p95_ms = 0;
};
struct RoutedReplica {
  std::string state;
  uint32_t in_flight = 0;
  uint64_t requests = 0, errors = 0;
  RoutedTtft ttft;
};
struct RoutedService {
  uint32_t queue_length = 0;
  uint64_t requests = 0, errors = 0;
  RoutedTtft ttft;
  std::map<uint64_t, RoutedReplica> replicas;  // by attempt id
};

// By service name; empty for "" or anything that does not parse.
std::map<std::string, RoutedService> ParseRouting(const std::string& snapshot);

}  // namespace idlepool::coordinator
