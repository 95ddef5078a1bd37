#include "coordinator/gateway_view.h"

#include "nlohmann/json.hpp"

namespace idlepool::coordinator {

namespace {

RoutedTtft Ttft(const nlohmann::json& j) {
  return {j.value("ttft_answers", 0u), j.value("ttft_p50_ms", 0.0), j.value("ttft_p95_ms", 0.0)};
}

}  // namespace

std::map<std::string, RoutedService> ParseRouting(const std::string& snapshot) {
  std::map<std::string, RoutedService> out;
  if (snapshot.empty()) return out;
  auto j = nlohmann::json::parse(snapshot, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("services")) return out;
  for (const auto& s : j["services"]) {
    RoutedService& rs = out[s.value("name", "")];
    rs.queue_length = s.value("queue_length", 0u);
    rs.requests = s.value("submitted", uint64_t{0});
    rs.errors = s.value("errors", uint64_t{0}) + s.value("failed", uint64_t{0});
    rs.ttft = Ttft(s);
    for (const auto& r : s.value("replicas", nlohmann::json::array())) {
      RoutedReplica& rr = rs.replicas[r.value("id", uint64_t{0})];
      rr.state = r.value("state", "");
      rr.in_flight = r.value("in_flight", 0u);
      rr.requests = r.value("requests", uint64_t{0});
      rr.errors = r.value("errors", uint64_t{0});
      rr.ttft = Ttft(r);
    }
  }
  return out;
}

}  // namespace idlepool::coordinator
