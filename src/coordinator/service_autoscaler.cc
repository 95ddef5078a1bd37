#include "coordinator/service_autoscaler.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/gateway_view.h"
#include "platform/clock.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {

namespace {

struct Row {
  core::JobId job = 0;
  std::string name;
  uint32_t min = 0, max = 0, replicas = 0;
};

serve::Micros Median(std::deque<serve::Micros> v) {
  if (v.empty()) return serve::Micros{0};
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void ServiceAutoscaler::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ServiceAutoscaler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ServiceAutoscaler::Loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, kAutoscaleEvery, [&] { return stop_; })) {
    lock.unlock();
    const serve::Time now{serve::Micros{platform::SteadyNanos() / 1000}};
    bridge_.Sweep(now);  // retiring replicas whose drain is over (serve_bridge.h)
    Step(now);
    lock.lock();
  }
}

void ServiceAutoscaler::Step(serve::Time now) {
  if (bridge_.url().empty()) return;  // no gateway: no demand to read
  auto rows = core_.Query<std::vector<Row>>([this] {
    std::vector<Row> out;
    for (const auto& [id, info] : core_.jobs()) {
      if (!info.spec.has_service()) continue;
      const auto& s = info.spec.service();
      if (s.min_replicas() >= s.max_replicas()) continue;  // a fixed count
      auto summary = core_.sched().Job(id);
      if (!summary || summary->state != core::JobState::kRunning) continue;
      out.push_back({id, info.spec.name().empty() ? absl::StrCat("job-", id) : info.spec.name(),
                     s.min_replicas(), s.max_replicas(), summary->replicas});
    }
    return out;
  });
  const auto routing = ParseRouting(bridge_.GatewaySnapshot());
  std::map<uint64_t, Tracked> kept;
  for (const Row& row : rows) {
    auto it = services_.find(row.job);
    if (it == services_.end()) {
      serve::AutoscaleConfig c;
      c.min_replicas = row.min;
      c.max_replicas = row.max;
      it = services_.emplace(row.job, Tracked{serve::Autoscaler(c), {}, {}}).first;
    }
    Tracked& t = it->second;
    serve::AutoscaleInput in;
    in.replicas = row.replicas;
    std::map<uint64_t, std::string> states;  // attempt -> its routing state
    if (auto r = routing.find(row.name); r != routing.end()) {
      in.queued = r->second.queue_length;
      for (const auto& [attempt, rep] : r->second.replicas) {
        in.in_flight += rep.in_flight;
        in.ready += rep.state == "ready" ? 1 : 0;
        in.starting += rep.state == "starting" ? 1 : 0;
        states.emplace(attempt, rep.state);
      }
    }
    in.start_time = StartTime(t, row.job, states, now);
    const uint32_t want = t.decide.Decide(in, now);
    if (want != row.replicas) {
      spdlog::info("service {} '{}': {} -> {} replicas ({})", row.job, row.name, row.replicas, want,
                   t.decide.Reason());
      if (absl::Status st = store_.ScaleService(row.job, want); !st.ok()) {
        spdlog::warn("service {}: cannot record the scale: {}", row.job, std::string(st.message()));
      } else {
        core_.Post(core::Event(core::ScaleService{row.job, want}));
      }
    }
    kept.emplace(row.job, std::move(t));
  }
  services_ = std::move(kept);  // ended services are forgotten
}

serve::Micros ServiceAutoscaler::StartTime(Tracked& t, core::JobId job,
                                           const std::map<uint64_t, std::string>& replicas,
                                           serve::Time now) {
  std::map<uint64_t, std::string> workers;  // attempt -> worker
  for (const auto& v : bridge_.Replicas(job)) workers.emplace(v.attempt, v.worker);
  for (const auto& [attempt, state] : replicas) {
    auto w = workers.find(attempt);
    if (w == workers.end()) continue;
    if (state == "starting") t.placed.try_emplace(attempt, Placed{now, w->second});
    auto p = t.placed.find(attempt);
    if (state != "ready" || p == t.placed.end()) continue;
    std::deque<serve::Micros>& samples = t.starts[p->second.worker];
    samples.push_back(now - p->second.since);
    if (samples.size() > kStartSamples) samples.pop_front();
    t.placed.erase(p);
  }
  // Replicas gone before they were ready are no start time.
  for (auto p = t.placed.begin(); p != t.placed.end();) {
    p = replicas.count(p->first) > 0 ? std::next(p) : t.placed.erase(p);
  }
  serve::Micros slowest{0};
  for (const auto& [attempt, worker] : workers) {
    auto s = t.starts.find(worker);
    if (s != t.starts.end()) slowest = std::max(slowest, Median(s->second));
  }
  return slowest;
}

}  // namespace idlepool::coordinator
