// The gateway's routing state as the coordinator reads it (Gateway::SnapshotJson, rendered by
// serve/gateway_metrics.cc): per service its queue and counters, per replica (by attempt id)
// its state and requests. For `idlepool services` (service_list.cc) and the autoscaler
// (service_autoscaler.cc). Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace idlepool::coordinator {

struct RoutedReplica {
  std::string state;
  uint32_t in_flight = 0;
  uint64_t requests = 0, errors = 0;
};
struct RoutedService {
  uint32_t queue_length = 0;
  uint64_t requests = 0, errors = 0;
  std::map<uint64_t, RoutedReplica> replicas;  // by attempt id
};

// By service name; empty for "" or anything that does not parse.
std::map<std::string, RoutedService> ParseRouting(const std::string& snapshot);

}  // namespace idlepool::coordinator
