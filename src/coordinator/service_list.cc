// Jobs.ListServices (issue 17): the running services, each replica with its worker and state,
// merged from the core (which replicas should run, which attempt runs each) and the gateway
// (routing state: starting, ready, draining, ejected; in flight, requests, errors).
#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/gateway_view.h"
#include "coordinator/job_service.h"

namespace idlepool::coordinator {

namespace {

void SetTtft(const RoutedTtft& from, v1::TimeToFirstToken* to) {
  to->set_answers(from.answers);
  to->set_p50_ms(from.p50_ms);
  to->set_p95_ms(from.p95_ms);
}

struct ServiceRow {
  core::JobSummary summary;
  v1::JobSpec spec;
  std::vector<std::optional<core::AttemptId>> current;  // per replica index
};

// A replica's worker and state from the bridge (`view`, null when unknown) and the gateway.
template <typename It>
void FillReplica(const ServeBridge::ReplicaView* view, It routed, It none, v1::ReplicaStatus* r) {
  if (view != nullptr) r->set_worker(view->worker);
  const bool draining = view != nullptr && view->draining;
  r->set_state(draining ? "draining" : "starting");
  if (routed == none) return;
  auto rr = routed->second.replicas.find(r->attempt());
  if (rr == routed->second.replicas.end()) return;
  if (!draining) r->set_state(rr->second.state);
  r->set_in_flight(rr->second.in_flight);
  r->set_requests(rr->second.requests);
  r->set_errors(rr->second.errors);
  SetTtft(rr->second.ttft, r->mutable_ttft());
}

}  // namespace

grpc::Status JobService::ListServices(grpc::ServerContext* ctx, const v1::ListServicesRequest*,
                                      v1::ListServicesReply* reply) {
  if (auto st = d_.authz.Check(ctx, "/idlepool.v1.Jobs/ListServices"); !st.ok()) return st;
  return ListServicesInternal(reply);
}

grpc::Status JobService::ListServicesInternal(v1::ListServicesReply* reply) {
  auto rows = d_.core.Query<std::vector<ServiceRow>>([this] {
    std::vector<ServiceRow> out;
    for (const auto& [id, info] : d_.core.jobs()) {
      if (!info.spec.has_service()) continue;
      auto summary = d_.core.sched().Job(id);
      if (!summary) continue;
      ServiceRow row{*summary, info.spec, {}};
      for (uint32_t i = 0; i < summary->tasks; ++i) {
        row.current.push_back(d_.core.sched().CurrentAttempt(core::TaskKey{id, i}));
      }
      out.push_back(std::move(row));
    }
    return out;
  });
  const ServeBridge* serve = d_.serve;
  const auto routing = ParseRouting(serve ? serve->GatewaySnapshot() : "");
  if (serve) reply->set_gateway(serve->url());
  for (const ServiceRow& row : rows) {
    v1::ServiceStatus* s = reply->add_services();
    const core::JobId job = row.summary.job;
    s->set_job(job);
    s->set_name(row.spec.name().empty() ? absl::StrCat("job-", job) : row.spec.name());
    *s->mutable_spec() = row.spec.service();
    s->set_replicas(row.summary.replicas);
    s->set_state(std::string(core::ToString(row.summary.state)));
    auto routed = routing.find(s->name());
    if (routed != routing.end()) {
      s->set_queue_length(routed->second.queue_length);
      s->set_requests(routed->second.requests);
      s->set_errors(routed->second.errors);
      SetTtft(routed->second.ttft, s->mutable_ttft());
    }
    std::map<core::AttemptId, ServeBridge::ReplicaView> views;
    if (serve) {
      for (auto& v : serve->Replicas(job)) views[v.attempt] = v;
    }
    for (uint32_t i = 0; i < row.current.size(); ++i) {
      v1::ReplicaStatus* r = s->add_replica_status();
      r->set_replica(i);
      if (serve) r->set_attempts(serve->Starts(job, i));
      const auto& cur = row.current[i];
      if (!cur) {
        r->set_state("stopped");
        continue;
      }
      r->set_attempt(*cur);
      auto v = views.find(*cur);
      FillReplica(v == views.end() ? nullptr : &v->second, routed, routing.end(), r);
      if (v != views.end()) views.erase(v);
    }
    // Replicas the core no longer runs but the gateway still drains (retiring, serve_bridge.h).
    for (const auto& [attempt, view] : views) {
      v1::ReplicaStatus* r = s->add_replica_status();
      r->set_replica(view.index);
      r->set_attempt(attempt);
      FillReplica(&view, routed, routing.end(), r);
    }
  }
  return grpc::Status::OK;
}

}  // namespace idlepool::coordinator
