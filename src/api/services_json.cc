// JSON view of Jobs.ListServices (json.h).
#include "api/json.h"

namespace idlepool::api {

namespace {

// Time to first token of recent answers (proto/serve.proto, TimeToFirstToken): null
// percentiles when no answer came in the window.
void AddTtft(nlohmann::json& j, const v1::TimeToFirstToken& t) {
  j["ttft_answers"] = t.answers();
  j["ttft_p50_ms"] = t.answers() > 0 ? nlohmann::json(t.p50_ms()) : nlohmann::json(nullptr);
  j["ttft_p95_ms"] = t.answers() > 0 ? nlohmann::json(t.p95_ms()) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json ServicesJson(const v1::ListServicesReply& r) {
  nlohmann::json services = nlohmann::json::array();
  for (const v1::ServiceStatus& s : r.services()) {
    nlohmann::json replicas = nlohmann::json::array();
    for (const v1::ReplicaStatus& x : s.replica_status()) {
      replicas.push_back({{"replica", x.replica()},
                          {"attempt", x.attempt()},
                          {"worker", x.worker()},
                          {"state", x.state()},
                          {"in_flight", x.in_flight()},
                          {"requests", x.requests()},
                          {"errors", x.errors()},
                          {"attempts", x.attempts()}});
      AddTtft(replicas.back(), x.ttft());
    }
    services.push_back({{"job", s.job()},
                        {"name", s.name()},
                        {"state", s.state()},
                        {"protocol", s.spec().protocol()},
                        {"model", s.spec().model()},
                        {"replicas", s.replicas()},
                        {"min_replicas", s.spec().min_replicas()},
                        {"max_replicas", s.spec().max_replicas()},
                        {"max_concurrent", s.spec().max_concurrent()},
                        {"queue_length", s.queue_length()},
                        {"requests", s.requests()},
                        {"errors", s.errors()},
                        {"replica_status", replicas}});
    AddTtft(services.back(), s.ttft());
  }
  return {{"gateway", r.gateway()}, {"services", services}};
}

}  // namespace idlepool::api
