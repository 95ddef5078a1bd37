#include "worker/link_prober.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace idlepool::worker {

using std::chrono::milliseconds;

LinkProber::LinkProber(LinkProberConfig config, v1::Probes::Stub* stub,
                       const platform::Clock& clock, const TransferGauge& gauge,
                       const StopSignal& stop, Sender send)
    : config_(std::move(config)),
      stub_(stub),
      clock_(clock),
      gauge_(gauge),
      stop_(stop),
      send_(std::move(send)) {}

void LinkProber::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LinkProber::Joined() {
  std::lock_guard lock(mu_);
  ++joins_;
  cv_.notify_all();
}

void LinkProber::Stop() {
  cancel_.Cancel();
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

void LinkProber::Join() {
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

bool LinkProber::Wait(const std::optional<core::MonoTime>& due, bool* joined) {
  std::unique_lock lock(mu_);
  auto ready = [&] {
    return stop_.stopping() || joins_ != seen_joins_ || (due && clock_.Now() >= *due);
  };
  if (due) {
    cv_.wait_for(lock, std::max(milliseconds(0), *due - clock_.Now()), ready);
  } else {
    cv_.wait(lock, ready);
  }
  if (stop_.stopping()) return false;
  *joined = joins_ != seen_joins_;
  seen_joins_ = joins_;
  return true;
}

void LinkProber::SendLink(const LinkMeasurement& m) {
  v1::WorkerMessage msg;
  auto* l = msg.mutable_link();
  l->set_rtt_us(static_cast<uint64_t>(m.rtt_us));
  l->set_down_bytes_per_s(m.down_bytes_per_s);
  l->set_up_bytes_per_s(m.up_bytes_per_s);
  l->set_probe_bytes(m.probe_bytes);
  send_(msg);
}

void LinkProber::Loop() {
  const milliseconds interval = config_.interval;
  std::optional<LinkMeasurement> last;
  std::optional<core::MonoTime> due;
  bool deferring = false;           // inputs or outputs were moving at the last due time
  core::MonoTime deferred_since{};  // since when, while deferring
  int failures = 0;                 // probes failed in a row
  while (true) {
    bool joined = false;
    if (!Wait(due, &joined)) return;
    const core::MonoTime now = clock_.Now();
    if (joined && last) {
      SendLink(*last);  // a restarted coordinator may not have it
      continue;
    }
    if (!joined && !(due && now >= *due)) continue;
    // A rejoin after failed probes keeps their backoff: on a link that breaks under load, each
    // probe would otherwise break the session, and each rejoin start the next probe at once.
    if (joined && !last && failures > 0 && due && now < *due) continue;
    if (last && gauge_.moving()) {
      if (!deferring) deferred_since = now;
      deferring = true;
      if (now - deferred_since < std::max(interval, milliseconds(1000))) {
        due = now + milliseconds(1000);
      } else {
        spdlog::info("link probe skipped: inputs or outputs kept moving for {} s",
                     std::chrono::duration_cast<std::chrono::seconds>(interval).count());
        deferring = false;
        due = now + interval;
      }
      continue;
    }
    deferring = false;
    LinkProbeOptions po;
    po.token = config_.token;
    po.canceller = &cancel_;
    absl::StatusOr<LinkMeasurement> m = MeasureLink(stub_, po);
    if (stop_.stopping()) return;
    if (!m.ok()) {
      // The coordinator may be busy serving other workers' probes (its gate refuses waiters
      // past a minute) or briefly away: try again soon, backing off 5 s, 10 s, 20 s... up to
      // the interval (5 min when probing only on join).
      const milliseconds cap = interval.count() > 0 ? interval : milliseconds(300000);
      const milliseconds backoff =
          std::min(cap, milliseconds(int64_t{5000} << std::min(failures, 6)));
      ++failures;
      spdlog::warn("link probe failed (tried again in {} s): {}",
                   std::chrono::duration_cast<std::chrono::seconds>(backoff).count(),
                   m.status().ToString());
      due = clock_.Now() + backoff;
      continue;
    }
    last = *m;
    SendLink(*m);
    spdlog::info(
        "link to {}: round trip {:.2f} ms, down {:.1f} MB/s, up {:.1f} MB/s "
        "(probes of {} KiB)",
        config_.coordinator,
        std::chrono::duration<double, std::milli>(
            std::chrono::duration<double, std::micro>(m->rtt_us))
            .count(),
        m->down_bytes_per_s / 1e6, m->up_bytes_per_s / 1e6, m->probe_bytes >> 10);
    failures = 0;
    if (interval.count() > 0) {
      due = clock_.Now() + interval;
    } else {
      due.reset();
    }
  }
}

}  // namespace idlepool::worker
