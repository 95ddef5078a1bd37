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
    if (auto r = routing.find(row.name); r != routing.end()) {
      in.queued = r->second.queue_length;
      for (const auto& [attempt, rep] : r->second.replicas) {
        in.in_flight += rep.in_flight;
        if (rep.state == "ready") {
          ++in.ready;
          if (auto p = t.placed.find(attempt); p != t.placed.end()) {
            t.starts.push_back(now - p->second);
            if (t.starts.size() > kStartSamples) t.starts.pop_front();
            t.placed.erase(p);
          }
        } else if (rep.state == "starting") {
          ++in.starting;
          t.placed.try_emplace(attempt, now);
        }
      }
    }
    // Replicas gone before they were ready are no start time.
    for (auto p = t.placed.begin(); p != t.placed.end();) {
      auto r = routing.find(row.name);
      const bool there = r != routing.end() && r->second.replicas.count(p->first) > 0;
      p = there ? std::next(p) : t.placed.erase(p);
    }
    in.start_time = Median(t.starts);
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

}  // namespace idlepool::coordinator
