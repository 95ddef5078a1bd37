// The gateway's own counters (issue 17, point 7): answers by service and HTTP status, time to
// first byte and total latency histograms per service, broken streams, the time to first token
// of recent answers per service and replica (recent_latency.h); with the router's
// snapshot (in flight and queue length per replica, retries, drains, ejections) rendered as
// Prometheus text (format 0.0.4) and as the JSON `idlepool services` reads.
//
// GatewayMetrics is owned by the gateway's io thread (no locking); a MetricsSnapshot is a copy
// that any thread may render. Latencies are in seconds, in metrics::LatencyBuckets() bounds
// (100 us .. 10 s).
//
// Time to first token: the time from a request read to the first byte of its answer's body
// reaching the client, for 2xx answers from a replica (the gateway's own answers and error
// answers have no token). For server-sent events that byte starts the first event, the first
// token; for an answer not streamed it starts the whole answer. Kept for the last
// RecentLatencies::kCapacity answers of each service and of each replica, and summarized over
// the last RecentLatencies::kWindow: what clients get now, not since the gateway started.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "serve/recent_latency.h"
#include "serve/router_types.h"
#include "serve/served_usage.h"

namespace idlepool::serve {

struct LatencyHistogram {
  std::vector<uint64_t> counts;  // per bucket of metrics::LatencyBuckets(), then above them all
  uint64_t count = 0;
  double sum_seconds = 0;
  void Observe(std::chrono::microseconds took);
};

struct ServiceCounters {
  std::map<int, uint64_t> answers_by_code;  // every answer the gateway gave for this service
  LatencyHistogram ttfb;                    // request read -> first byte to the client
  LatencyHistogram total;                   // request read -> last byte to the client
  uint64_t streams_broken = 0;              // ended by an error event / a cut after a byte
};

struct MetricsSnapshot {
  std::map<std::string, ServiceCounters> services;  // by name; "" = no service (401, 404...)
  RouterSnapshot router;
  uint64_t connections_open = 0;
  uint64_t connections_accepted = 0;
  // Time to first token over the window ending when the snapshot was taken: by service (those
  // added and not removed) and by replica (likewise).
  std::map<std::string, LatencySummary> ttft;
  std::map<ReplicaId, LatencySummary> replica_ttft;
};

class GatewayMetrics {
 public:
  void Answer(const std::string& service, int status) {
    ++services_[service].answers_by_code[status];
  }
  // An answer's first byte reached its client `took` after the request was read, at `now`;
  // a 2xx answer's is its time to first token (see the top of this file).
  void FirstByte(const std::string& service, ReplicaId replica, int status, Time now, Micros took);
  void Done(const std::string& service, std::chrono::microseconds took) {
    services_[service].total.Observe(took);
  }
  void StreamBroken(const std::string& service) { ++services_[service].streams_broken; }
  void Accepted() { ++accepted_, ++open_; }
  void Closed() { --open_; }
  // Recent times to first token are kept for added services and replicas, until removed.
  void ServiceAdded(const std::string& name) { service_ttft_.try_emplace(name); }
  void ServiceRemoved(const std::string& name) { service_ttft_.erase(name); }
  void ReplicaAdded(ReplicaId id) { replica_ttft_.try_emplace(id); }
  void ReplicaRemoved(ReplicaId id) { replica_ttft_.erase(id); }

  MetricsSnapshot Snapshot(RouterSnapshot router, Time now) const;

 private:
  std::map<std::string, ServiceCounters> services_;
  std::map<std::string, RecentLatencies> service_ttft_;
  std::unordered_map<ReplicaId, RecentLatencies> replica_ttft_;
  uint64_t accepted_ = 0;
  uint64_t open_ = 0;
};

// Families: idlepool_serve_requests_total{service,code}, idlepool_serve_ttfb_seconds{service},
// idlepool_serve_request_seconds{service}, idlepool_serve_in_flight{service,replica},
// idlepool_serve_queue_length{service}, idlepool_serve_retries_total{service},
// idlepool_serve_drains_total{service}, idlepool_serve_ejections_total{service},
// idlepool_serve_streams_broken_total{service}, idlepool_serve_connections_open.
std::string RenderPrometheus(const MetricsSnapshot& m);
// {"services":[{"name","queue_length","requests","answers":{"200":n},"retries",...,
//   "ttft_answers","ttft_p50_ms","ttft_p95_ms",
//   "replicas":[{"id","state","in_flight","capacity","weight","requests","ok","errors",
//   "ttft_answers","ttft_p50_ms","ttft_p95_ms"}]}]}; ttft_answers: answers in the window (0:
//   none, and both percentiles 0); the percentiles in milliseconds.
std::string RenderJson(const MetricsSnapshot& m);
// idlepool_serve_user_requests_total{user}, idlepool_serve_user_tokens_total{user} (served by a
// replica; tokens as the answers report them), idlepool_serve_user_refused_total{user} (429).
std::string RenderServedPrometheus(const std::map<std::string, UserServed>& totals);

}  // namespace idlepool::serve
