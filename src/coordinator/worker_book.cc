#include "coordinator/worker_book.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "coordinator/worker_input.h"
#include "spdlog/spdlog.h"

namespace idlepool::coordinator {
namespace {

using MillisD = std::chrono::duration<double, std::milli>;
using SecondsD = std::chrono::duration<double>;

// Worker rows (store::WorkerRecord): written when they change, at most every kBookWriteGap, and
// all of them every kBookRefresh (their availability grows while nothing changes).
constexpr core::Millis kBookWriteGap{500};
constexpr core::Millis kBookRefresh = std::chrono::minutes(1);
// Worker events (store::WorkerEvent) are kept 30 days, and at most 1M rows (the newest): a month
// of a busy pool's timelines, bounded for a flapping one. Trimmed with every kBookRefresh.
constexpr core::Millis kEventKeep = std::chrono::days(30);
constexpr size_t kEventMaxRows = 1'000'000;

}  // namespace

void WorkerBook::Restore(std::vector<store::WorkerRecord> rows) {
  std::lock_guard lock(mu_);
  for (auto& r : rows) {
    availability_.Restore(r.worker,
                          AvailabilityTotals{r.up_ms, r.down_ms, r.up_periods, r.down_periods});
    records_[r.worker] = std::move(r);
  }
}

void WorkerBook::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void WorkerBook::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();  // writes every row once more
}

store::WorkerRecord& WorkerBook::Entry(const std::string& worker) {
  auto [it, inserted] = records_.try_emplace(worker);
  if (!inserted) return it->second;
  if (std::optional<store::WorkerRecord> row = StoredRow(worker)) {
    // Back after being forgotten: its history, and the time it was away as one more down period.
    const int64_t away_ms = std::max<int64_t>(0, clock_.WallMs() - row->updated_ms);
    availability_.Restore(worker, AvailabilityTotals{row->up_ms, row->down_ms + away_ms,
                                                     row->up_periods, row->down_periods + 1});
    it->second = *std::move(row);
    return it->second;
  }
  it->second.worker = worker;
  it->second.first_seen_ms = clock_.WallMs();
  return it->second;
}

std::optional<store::WorkerRecord> WorkerBook::StoredRow(const std::string& worker) {
  if (auto f = final_rows_.find(worker); f != final_rows_.end()) {
    store::WorkerRecord row = std::move(f->second);
    final_rows_.erase(f);
    return row;
  }
  auto row = store_.GetWorker(worker);
  if (!row.ok()) {
    spdlog::warn("worker {}: cannot read its stored measurements: {}", worker,
                 row.status().ToString());
    return std::nullopt;
  }
  return *std::move(row);
}

void WorkerBook::MarkDirty(const std::string& worker) {
  dirty_.insert(worker);
  cv_.notify_all();
}

void WorkerBook::Hello(const std::string& worker, core::SessionId session,
                       const std::string& hostname, double cpu_score, uint32_t cores) {
  std::lock_guard lock(mu_);
  sessions_[worker] = session;
  store::WorkerRecord& r = Entry(worker);
  if (r.hostname != hostname || r.cpu_score != cpu_score || r.cores != cores) {
    r.hostname = hostname;
    // A worker run with --no-calibrate keeps its last known score.
    if (cpu_score > 0) r.cpu_score = cpu_score;
    if (cores > 0) r.cores = cores;
    MarkDirty(worker);
  }
}

int64_t WorkerBook::DownBytesPerS(const std::string& worker) {
  std::lock_guard lock(mu_);
  if (auto r = records_.find(worker); r != records_.end()) return r->second.down_bytes_per_s;
  std::optional<store::WorkerRecord> row = StoredRow(worker);  // not seen since this start
  return row ? row->down_bytes_per_s : 0;
}

int64_t WorkerBook::Link(const std::string& worker, core::SessionId session,
                         const v1::LinkMeasured& m, uint64_t max_probe_bytes) {
  if (!LinkInRange(m, max_probe_bytes)) {
    spdlog::warn("worker {}: link measurement out of range, ignored", worker);
    return 0;
  }
  std::lock_guard lock(mu_);
  auto s = sessions_.find(worker);
  if (s == sessions_.end() || s->second != session) return 0;
  store::WorkerRecord& r = Entry(worker);
  // The estimate is the best of its recent probes (planner.h, BestOfRecentProbes); the log
  // line shows this probe.
  const int64_t wall_ms = clock_.WallMs();
  std::vector<LinkProbe>& recent = link_probes_[worker];
  if (recent.empty() && r.link_measured_ms > 0) {  // the stored estimate, e.g. after a restart
    recent.push_back({r.link_measured_ms, r.rtt_us, r.down_bytes_per_s, r.up_bytes_per_s});
  }
  recent.push_back({wall_ms, static_cast<int64_t>(m.rtt_us()),
                    static_cast<int64_t>(m.down_bytes_per_s()),
                    static_cast<int64_t>(m.up_bytes_per_s())});
  const LinkProbe best = BestOfRecentProbes(recent, wall_ms);
  r.link_measured_ms = wall_ms;
  r.rtt_us = best.rtt_us;
  r.down_bytes_per_s = best.down_bytes_per_s;
  r.up_bytes_per_s = best.up_bytes_per_s;
  r.probe_bytes = static_cast<int64_t>(m.probe_bytes());
  MarkDirty(worker);
  spdlog::info("worker {}: link round trip {:.2f} ms, down {:.1f} MB/s, up {:.1f} MB/s", worker,
               MillisD(std::chrono::microseconds(m.rtt_us())).count(), m.down_bytes_per_s() / 1e6,
               m.up_bytes_per_s() / 1e6);
  return r.down_bytes_per_s;
}

void WorkerBook::ObserveAvailability(const std::vector<core::WorkerView>& views,
                                     core::MonoTime now) {
  const int64_t now_ms = MonoMs(now);
  std::lock_guard lock(mu_);
  std::set<std::string> seen;
  for (const auto& w : views) {
    seen.insert(w.worker);
    Entry(w.worker);
    const bool up = w.state == core::WorkerState::kConnected && w.accepting;
    if (availability_.Observe(w.worker, up, now_ms)) MarkDirty(w.worker);
  }
  for (const auto& [name, r] : records_) {
    if (!seen.count(name) && availability_.Observe(name, false, now_ms)) MarkDirty(name);
  }
}

void WorkerBook::ObserveWorker(const std::string& worker, bool up, core::MonoTime now) {
  std::lock_guard lock(mu_);
  Entry(worker);
  if (availability_.Observe(worker, up, MonoMs(now))) MarkDirty(worker);
}

std::vector<std::string> WorkerBook::ForgetDeparted(core::MonoTime now, core::Millis after) {
  const int64_t now_ms = MonoMs(now);
  std::lock_guard lock(mu_);
  std::vector<std::string> gone;
  for (const auto& [name, r] : records_) {
    if (event_sessions_.count(name) != 0) continue;  // connected
    auto a = availability_.Get(name, now_ms);
    if (a && a->observed && !a->up && a->since_ms >= after.count()) gone.push_back(name);
  }
  for (const std::string& name : gone) {
    store::WorkerRecord row = Snapshot(records_.at(name), now_ms);
    row.updated_ms = clock_.WallMs();
    final_rows_[name] = std::move(row);
    records_.erase(name);
    availability_.Forget(name);
    link_probes_.erase(name);
    sensors_.erase(name);
    owner_seen_.erase(name);
    sessions_.erase(name);
    dirty_.erase(name);
  }
  if (!gone.empty()) cv_.notify_all();
  return gone;
}

size_t WorkerBook::size() {
  std::lock_guard lock(mu_);
  return records_.size();
}

store::WorkerRecord WorkerBook::Snapshot(const store::WorkerRecord& r, int64_t now_ms) const {
  store::WorkerRecord out = r;
  if (auto a = availability_.Get(r.worker, now_ms)) {
    out.up_ms = a->totals.up_ms;
    out.down_ms = a->totals.down_ms;
    out.up_periods = a->totals.up_periods;
    out.down_periods = a->totals.down_periods;
  }
  return out;
}

void WorkerBook::AddEvent(const std::string& worker, const char* kind, const std::string& state,
                          const std::string& cause, const std::string& reason) {
  pending_events_.push_back(
      store::WorkerEvent{worker, clock_.WallMs(), kind, state, cause, reason});
  cv_.notify_all();
}

void WorkerBook::RecordConnected(const std::string& worker, core::SessionId session) {
  std::lock_guard lock(mu_);
  event_sessions_[worker] = session;
  owner_seen_.erase(worker);
  AddEvent(worker, "connected");
}

void WorkerBook::RecordSessionEnd(const std::string& worker, core::SessionId session,
                                  const char* kind) {
  std::lock_guard lock(mu_);
  auto it = event_sessions_.find(worker);
  if (it == event_sessions_.end() || it->second != session) return;
  event_sessions_.erase(it);
  AddEvent(worker, kind);
}

void WorkerBook::RecordLost(const std::string& worker) {
  std::lock_guard lock(mu_);
  event_sessions_.erase(worker);
  AddEvent(worker, "lost");
}

bool WorkerBook::IsWelcomed(const std::string& worker, core::SessionId session) {
  std::lock_guard lock(mu_);
  auto it = event_sessions_.find(worker);
  return it != event_sessions_.end() && it->second == session;
}

void WorkerBook::GpuEvents(const std::string& worker, const std::vector<GpuFlip>& flipped) {
  if (flipped.empty()) return;
  // Worker events (kind "gpu"): "held" with cause gpu_owner / gpu_temperature, or "free".
  std::lock_guard lock(mu_);
  for (const auto& [index, cause] : flipped) {
    AddEvent(worker, "gpu", cause.empty() ? "free" : "held", cause, absl::StrCat("GPU ", index));
  }
}

void WorkerBook::NoteOwner(const std::string& worker, core::SessionId session,
                           const std::string& state, const std::string& cause,
                           const std::string& reason,
                           const std::optional<v1::SensorReadings>& sensors) {
  std::lock_guard lock(mu_);
  auto it = event_sessions_.find(worker);
  if (it == event_sessions_.end() || it->second != session) return;
  if (sensors) sensors_[worker] = *sensors;
  if (state.empty()) return;
  auto& seen = owner_seen_[worker];
  if (seen.first == state && seen.second == cause) return;
  seen = {state, cause};
  AddEvent(worker, "owner", state, cause, reason);
}

// The book thread: writes worker events as they come, changed rows (at most every
// kBookWriteGap, or with events), every row every kBookRefresh, and every row once more at
// shutdown.
void WorkerBook::Loop() {
  auto next_full = clock_.Now() + kBookRefresh;
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait_for(lock, std::max(core::Millis(0), next_full - clock_.Now()), [&] {
      return stop_ || !dirty_.empty() || !pending_events_.empty() || !final_rows_.empty();
    });
    const bool stop = stop_;
    const auto now = clock_.Now();
    const bool full = stop || now >= next_full;
    if (full) next_full = now + kBookRefresh;
    WritePass(lock, full, now);
    if (stop) return;
    // Worker rows wait kBookWriteGap; events go at once (a live timeline shows them).
    cv_.wait_for(lock, kBookWriteGap, [&] { return stop_ || !pending_events_.empty(); });
  }
}

void WorkerBook::WritePass(std::unique_lock<std::mutex>& lock, bool full, core::MonoTime now) {
  if (full) {
    for (const auto& [name, r] : records_) dirty_.insert(name);
  }
  std::vector<store::WorkerRecord> rows;
  for (auto& [name, row] : final_rows_) rows.push_back(std::move(row));
  final_rows_.clear();
  for (const auto& name : dirty_) {
    auto it = records_.find(name);
    if (it == records_.end()) continue;
    rows.push_back(Snapshot(it->second, MonoMs(now)));
    rows.back().updated_ms = clock_.WallMs();
  }
  dirty_.clear();
  std::vector<store::WorkerEvent> events;
  events.swap(pending_events_);
  lock.unlock();
  if (!events.empty()) {
    if (absl::Status st = store_.AppendWorkerEvents(events); !st.ok()) {
      spdlog::warn("cannot store {} worker events: {}", events.size(), st.ToString());
    }
  }
  if (full) {  // the trim goes with every full write
    const int64_t before_ms = clock_.WallMs() - kEventKeep.count();
    if (absl::Status st = store_.TrimWorkerEvents(before_ms, kEventMaxRows); !st.ok()) {
      spdlog::warn("cannot trim worker events: {}", st.ToString());
    }
  }
  if (!rows.empty()) {
    if (absl::Status st = store_.PutWorkers(rows); !st.ok()) {
      spdlog::warn("cannot store worker measurements: {}", st.ToString());
    }
  }
  lock.lock();
}

void WorkerBook::FillMeasurements(const store::WorkerRecord& r, int64_t now_ms, int64_t wall_ms,
                                  v1::WorkerInfo* out) const {
  if (r.link_measured_ms > 0) {
    v1::LinkInfo* l = out->mutable_link();
    l->set_rtt_ms(MillisD(std::chrono::microseconds(r.rtt_us)).count());
    l->set_down_bytes_per_s(static_cast<uint64_t>(r.down_bytes_per_s));
    l->set_up_bytes_per_s(static_cast<uint64_t>(r.up_bytes_per_s));
    l->set_probe_bytes(static_cast<uint64_t>(r.probe_bytes));
    l->set_measured_ms_ago(std::max<int64_t>(0, wall_ms - r.link_measured_ms));
  }
  out->set_cpu_score(r.cpu_score);
  out->set_cores(r.cores);
  if (auto a = availability_.Get(r.worker, now_ms)) {
    v1::Availability* o = out->mutable_availability();
    o->set_up_fraction(a->up_fraction());
    o->set_mean_up_s(a->mean_up_s());
    o->set_mean_down_s(a->mean_down_s());
    o->set_up_periods(a->totals.up_periods);
    o->set_down_periods(a->totals.down_periods);
    o->set_observed_s(a->observed_s());
    o->set_up(a->up);
    o->set_since_s(SecondsD(core::Millis(a->since_ms)).count());
  }
}

void WorkerBook::FillWorkers(core::MonoTime now, v1::ListWorkersReply* reply) {
  const int64_t now_ms = MonoMs(now), wall_ms = clock_.WallMs();
  std::lock_guard lock(mu_);
  std::set<std::string> listed;
  for (auto& out : *reply->mutable_workers()) {
    listed.insert(out.worker());
    auto r = records_.find(out.worker());
    if (r != records_.end()) FillMeasurements(r->second, now_ms, wall_ms, &out);
    auto s = sensors_.find(out.worker());
    if (s != sensors_.end()) *out.mutable_sensors() = s->second;
  }
  for (const auto& [name, r] : records_) {
    if (listed.count(name)) continue;
    auto* out = reply->add_workers();
    out->set_worker(name);
    out->set_state("disconnected");
    out->set_hostname(r.hostname);
    out->set_activity("disconnected");
    out->set_last_seen_ms_ago(-1);  // not since this coordinator started
    out->set_accepting(false);
    FillMeasurements(r, now_ms, wall_ms, out);
  }
}

void WorkerBook::FillPlanWorkers(core::MonoTime now, std::vector<PlanWorker>& workers) {
  const int64_t now_ms = MonoMs(now);
  std::lock_guard lock(mu_);
  for (PlanWorker& w : workers) {
    auto r = records_.find(w.name);
    if (r != records_.end()) w.record = r->second;
    if (auto a = availability_.Get(w.name, now_ms)) {
      w.up_ms = a->totals.up_ms;
      w.down_ms = a->totals.down_ms;
      w.up_periods = a->totals.up_periods;
    }
  }
}

}  // namespace idlepool::coordinator
