#include "serve/gateway_metrics.h"

#include <algorithm>

#include "metrics/metrics.h"
#include "nlohmann/json.hpp"

namespace idlepool::serve {

namespace {

const std::vector<double>& Bounds() {
  static const std::vector<double> bounds = metrics::LatencyBuckets();
  return bounds;
}

void AddTtft(nlohmann::json& j, const LatencySummary* s) {
  j["ttft_answers"] = s ? s->count : 0;
  j["ttft_p50_ms"] = s ? static_cast<double>(s->p50.count()) / 1000 : 0.0;
  j["ttft_p95_ms"] = s ? static_cast<double>(s->p95.count()) / 1000 : 0.0;
}

template <typename Map, typename Key>
const LatencySummary* Find(const Map& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? nullptr : &it->second;
}

std::string Label(const std::string& v) { return "\"" + metrics::EscapeLabelValue(v) + "\""; }

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name + "{" + labels + "} " + metrics::FormatValue(v) + "\n";
}

void HistogramLines(std::string& out, const char* name, const std::string& service,
                    const LatencyHistogram& h) {
  std::string svc = "service=" + Label(service);
  uint64_t cumulative = 0;
  const auto& bounds = Bounds();
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    Sample(out, std::string(name) + "_bucket",
           svc + ",le=" + Label(metrics::FormatValue(bounds[i])), static_cast<double>(cumulative));
  }
  Sample(out, std::string(name) + "_bucket", svc + ",le=\"+Inf\"", static_cast<double>(h.count));
  Sample(out, std::string(name) + "_sum", svc, h.sum_seconds);
  Sample(out, std::string(name) + "_count", svc, static_cast<double>(h.count));
}

}  // namespace

void LatencyHistogram::Observe(std::chrono::microseconds took) {
  const auto& bounds = Bounds();
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  double s = std::max<double>(0, took.count()) / 1e6;
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), s) - bounds.begin();
  ++counts[i];
  ++count;
  sum_seconds += s;
}

void GatewayMetrics::FirstByte(const std::string& service, ReplicaId replica, int status, Time now,
                               Micros took) {
  services_[service].ttfb.Observe(took);
  if (status < 200 || status > 299) return;
  if (auto it = service_ttft_.find(service); it != service_ttft_.end()) {
    it->second.Observe(now, took);
  }
  if (auto it = replica_ttft_.find(replica); it != replica_ttft_.end()) {
    it->second.Observe(now, took);
  }
}

MetricsSnapshot GatewayMetrics::Snapshot(RouterSnapshot router, Time now) const {
  MetricsSnapshot m;
  m.services = services_;
  m.router = std::move(router);
  m.connections_open = open_;
  m.connections_accepted = accepted_;
  for (const auto& [name, recent] : service_ttft_) m.ttft[name] = recent.Summarize(now);
  for (const auto& [id, recent] : replica_ttft_) m.replica_ttft[id] = recent.Summarize(now);
  return m;
}

std::string RenderPrometheus(const MetricsSnapshot& m) {
  std::string out;
  Header(out, "idlepool_serve_requests_total", "counter", "Answers by service and HTTP status.");
  for (const auto& [service, c] : m.services) {
    for (const auto& [code, n] : c.answers_by_code) {
      Sample(out, "idlepool_serve_requests_total",
             "service=" + Label(service) + ",code=" + Label(std::to_string(code)),
             static_cast<double>(n));
    }
  }
  Header(out, "idlepool_serve_ttfb_seconds", "histogram",
         "Time from the request read to its first byte sent to the client.");
  for (const auto& [service, c] : m.services) {
    if (c.ttfb.count > 0) HistogramLines(out, "idlepool_serve_ttfb_seconds", service, c.ttfb);
  }
  Header(out, "idlepool_serve_request_seconds", "histogram",
         "Time from the request read to its last byte sent to the client.");
  for (const auto& [service, c] : m.services) {
    if (c.total.count > 0) HistogramLines(out, "idlepool_serve_request_seconds", service, c.total);
  }
  Header(out, "idlepool_serve_in_flight", "gauge", "Requests on a replica now.");
  for (const ServiceSnapshot& s : m.router.services) {
    for (const ReplicaSnapshot& r : s.replicas) {
      Sample(out, "idlepool_serve_in_flight",
             "service=" + Label(s.name) + ",replica=" + Label(std::to_string(r.id)), r.in_flight);
    }
  }
  Header(out, "idlepool_serve_queue_length", "gauge", "Requests waiting for a replica.");
  for (const ServiceSnapshot& s : m.router.services) {
    Sample(out, "idlepool_serve_queue_length", "service=" + Label(s.name), s.queue_length);
  }
  Header(out, "idlepool_serve_retries_total", "counter", "Requests retried on another replica.");
  for (const ServiceSnapshot& s : m.router.services) {
    Sample(out, "idlepool_serve_retries_total", "service=" + Label(s.name),
           static_cast<double>(s.retries));
  }
  Header(out, "idlepool_serve_drains_total", "counter", "Replicas drained.");
  for (const ServiceSnapshot& s : m.router.services) {
    Sample(out, "idlepool_serve_drains_total", "service=" + Label(s.name),
           static_cast<double>(s.drains));
  }
  Header(out, "idlepool_serve_ejections_total", "counter", "Replicas ejected after errors.");
  for (const ServiceSnapshot& s : m.router.services) {
    Sample(out, "idlepool_serve_ejections_total", "service=" + Label(s.name),
           static_cast<double>(s.ejections));
  }
  Header(out, "idlepool_serve_streams_broken_total", "counter",
         "Answers cut after their first byte (ended with an error event or a close).");
  for (const auto& [service, c] : m.services) {
    if (!service.empty()) {
      Sample(out, "idlepool_serve_streams_broken_total", "service=" + Label(service),
             static_cast<double>(c.streams_broken));
    }
  }
  Header(out, "idlepool_serve_connections_open", "gauge", "Client connections open now.");
  out += "idlepool_serve_connections_open " +
         metrics::FormatValue(static_cast<double>(m.connections_open)) + "\n";
  return out;
}

std::string RenderServedPrometheus(const std::map<std::string, UserServed>& totals) {
  std::string out;
  Header(out, "idlepool_serve_user_requests_total", "counter",
         "Requests a replica answered, by the key's user.");
  for (const auto& [user, t] : totals) {
    Sample(out, "idlepool_serve_user_requests_total", "user=" + Label(user),
           static_cast<double>(t.requests));
  }
  Header(out, "idlepool_serve_user_tokens_total", "counter",
         "Tokens the answers reported (usage.total_tokens), by the key's user.");
  for (const auto& [user, t] : totals) {
    Sample(out, "idlepool_serve_user_tokens_total", "user=" + Label(user),
           static_cast<double>(t.tokens));
  }
  Header(out, "idlepool_serve_user_refused_total", "counter",
         "Requests answered 429 (over the key's --rate or --concurrency), by the key's user.");
  for (const auto& [user, t] : totals) {
    Sample(out, "idlepool_serve_user_refused_total", "user=" + Label(user),
           static_cast<double>(t.refused));
  }
  return out;
}

std::string RenderJson(const MetricsSnapshot& m) {
  nlohmann::json services = nlohmann::json::array();
  for (const ServiceSnapshot& s : m.router.services) {
    nlohmann::json replicas = nlohmann::json::array();
    for (const ReplicaSnapshot& r : s.replicas) {
      replicas.push_back({{"id", r.id},
                          {"state", ReplicaStateName(r.state)},
                          {"in_flight", r.in_flight},
                          {"capacity", r.capacity},
                          {"weight", r.weight},
                          {"speed", r.speed},
                          {"requests", r.requests},
                          {"ok", r.ok},
                          {"errors", r.errors},
                          {"ejections", r.ejections}});
      AddTtft(replicas.back(), Find(m.replica_ttft, r.id));
    }
    nlohmann::json answers = nlohmann::json::object();
    uint64_t broken = 0;
    if (auto it = m.services.find(s.name); it != m.services.end()) {
      for (const auto& [code, n] : it->second.answers_by_code) answers[std::to_string(code)] = n;
      broken = it->second.streams_broken;
    }
    services.push_back({{"name", s.name},
                        {"queue_length", s.queue_length},
                        {"submitted", s.submitted},
                        {"ok", s.ok},
                        {"errors", s.errors},
                        {"rejected", s.rejected},
                        {"expired", s.expired},
                        {"failed", s.failed},
                        {"client_gone", s.client_gone},
                        {"retries", s.retries},
                        {"drains", s.drains},
                        {"ejections", s.ejections},
                        {"streams_broken", broken},
                        {"answers", answers},
                        {"replicas", replicas}});
    AddTtft(services.back(), Find(m.ttft, s.name));
  }
  return nlohmann::json{{"services", services},
                        {"connections_open", m.connections_open},
                        {"connections_accepted", m.connections_accepted}}
      .dump();
}

}  // namespace idlepool::serve
