#include "sim/simulator.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "coordinator/core_driver.h"
#include "sim/draw.h"
#include "sim/dst.h"
#include "sim/lanes.h"
#include "store/store.h"

namespace idlepool::sim {

namespace {

using core::AttemptId;
using core::Decision;
using core::Millis;
using core::MonoTime;
using core::ReportResult;
using core::SessionId;
using core::TaskKey;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t ToMs(double s) { return static_cast<int64_t>(std::llround(s * 1000.0)); }
MonoTime At(int64_t ms) { return MonoTime(Millis(ms)); }

// ---------------------------------------------------------------------------------------------

enum class Ev : uint8_t {
  kSubmit,        // a = job index
  kTick,
  kLane,          // worker's lane changes state
  kHeartbeat,     // a = worker generation
  kAttempt,       // a = attempt id, b = attempt generation: checkpoint or finish
  kConnect,       // a = worker generation
  kDeliver,       // a = message slot
  kFault,
  kCoordRestart,
  kWorkerRestart, // a = worker generation
  kCancel,        // a = job index
  kResume,        // a = worker boot: the owner leaves again
};

struct Event {
  int64_t t;
  uint64_t seq;
  Ev kind;
  uint32_t worker;
  uint64_t a, b;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const {
    return x.t != y.t ? x.t > y.t : x.seq > y.seq;
  }
};

// Coordinator -> worker.
struct ToWorker {
  enum Kind : uint8_t { kAssign, kKill, kAck, kRefused } kind = kAssign;
  AttemptId attempt = 0;
  TaskKey task;
  int64_t resume_ms = 0;  // reference ms already done (the task's checkpoint)
  bool accepted = false;
};

struct Message {
  uint64_t conn = 0;
  bool to_coord = true;
  bool close_notice = false;  // the coordinator learns the stream ended (SessionClosed)
  int64_t arrive = 0;
  core::Event ev;             // to the coordinator
  ToWorker tw;                // to the worker
};

struct Conn {
  uint32_t worker = 0;
  SessionId session = 0;
  uint64_t epoch = 0;              // the coordinator incarnation it belongs to
  int64_t closed_w = kNever;       // the worker's end closed at
  int64_t closed_c = kNever;       // the coordinator's end closed at
  bool notice_sent = false;
  int64_t partitioned_until = 0;
  int64_t last_apply_c = 0, last_apply_w = 0;  // FIFO per direction
};

struct RunningAttempt {
  AttemptId id = 0;
  TaskKey task;
  uint64_t gen = 0;
  double task_ref_ms = 0;     // the whole task, reference ms
  double ref_done_ms = 0;     // at the last checkpoint (or the resume point)
  int64_t run_start = 0;      // compute starts (after the fetch)
  int64_t last_ckpt = 0;      // sim time of the last checkpoint (or run_start)
  int64_t finish = 0;
  int64_t deadline = kNever;  // timeout
};

struct WorkerState {
  bool machine_up = false;
  bool process_up = false;
  bool accepting = false;
  uint64_t boot = 0;
  uint64_t gen = 0;          // bumped when the process dies: its timers are void
  uint64_t conn = 0;         // current connection (0: none)
  bool connecting = false;
  bool suspended = false;    // frozen for its owner: attempts make no progress
  int64_t suspended_at = 0;
  std::map<AttemptId, RunningAttempt> running;
  std::map<AttemptId, core::AttemptReport> unacked;
  std::map<AttemptId, int64_t> unacked_compute;  // compute ms a refused report throws away
};

std::string Hex64(uint64_t v) {
  char buf[65];
  std::snprintf(buf, sizeof buf, "%064" PRIx64, v);
  return buf;
}

// The coordinator shell is the core driver's sink (its store, when c_.persist) and target (its
// simulated sessions), as the real coordinator is with SQLite and gRPC (coordinator/core_driver.h).
class Simulation final : coordinator::RecordSink, coordinator::DecisionTarget {
 public:
  explicit Simulation(const SimConfig& c)
      : c_(c),
        rng_(c.seed),
        checker_(c.core.lease_timeout, Millis(ToMs(c.tick_s)), c.core.max_workers_lost_in_a_row) {}

  SimResult Run();

 private:
  // Scheduling.
  void Push(int64_t t, Ev kind, uint32_t worker = 0, uint64_t a = 0, uint64_t b = 0) {
    queue_.push(Event{t, seq_++, kind, worker, a, b});
  }
  void Trace(const std::string& line) {
    char at[32];
    std::snprintf(at, sizeof at, "%10.3f ", static_cast<double>(now_) / 1000.0);
    trace_.push_back(at + line);
    if (trace_.size() > c_.trace_lines) trace_.pop_front();
  }
  bool Faulty() const { return now_ < ToMs(c_.faults.faults_until_s); }

  // Network.
  uint64_t Open(uint32_t w);
  void SendToCoord(uint64_t conn, core::Event ev, bool close_notice = false);
  void SendToWorker(uint64_t conn, ToWorker m);
  void Queue(Message m, bool to_coord);
  void Deliver(uint64_t slot);
  void CloseNotice(uint64_t conn);

  // Coordinator shell.
  void CoordApply(const core::Event& ev);
  // coordinator::RecordSink and DecisionTarget (CoordApply's batches, through driver_).
  absl::Status Commit(const std::vector<Decision>& ds) override;
  void Committed(const std::vector<Decision>& ds) override;
  void Each(const Decision& d) override;
  void AttemptCreated(const core::AttemptCreated& a) override;
  void AttemptEnded(const core::AttemptEnded& e) override;
  void TaskCheckpointed(const core::TaskCheckpointed& t) override;
  void JobChanged(const core::JobChanged& j) override;
  void WorkerLost(const core::WorkerLost& l) override;
  void Assign(const core::AssignAttempt& as) override;
  void Kill(const core::KillAttempt& k) override;
  void Ack(const core::AckReport& ack) override;
  void Refuse(const core::RefuseSession& r) override;
  void CoordCrash();
  void CoordRestart();
  void CloseFromCoord(uint64_t conn, const std::string& why);
  int64_t CheckpointOf(TaskKey key);

  // Workers.
  void LaneChange(uint32_t w);
  void Connect(uint32_t w);
  void WorkerReceive(uint32_t w, const Message& m);
  void StartAttempt(uint32_t w, const ToWorker& m);
  void AttemptTimer(uint32_t w, AttemptId id, uint64_t gen);
  void Report(uint32_t w, core::AttemptReport r, int64_t compute_ms);
  void StopAll(uint32_t w, bool graceful);
  void KillProcess(uint32_t w, bool fin);
  void WorkerSend(uint32_t w, core::Event ev);
  // Running time of `a` not covered by a checkpoint (frozen time excluded).
  int64_t Unsaved(const WorkerState& s, const RunningAttempt& a) const {
    const int64_t end = s.suspended ? s.suspended_at : now_;
    return std::max<int64_t>(0, end - std::max(a.run_start, a.last_ckpt));
  }
  void Suspend(uint32_t w, double for_s);
  void Resume(uint32_t w);
  const SimJob& JobOfTask(TaskKey k) const { return c_.jobs[job_index_.at(k.job)]; }

  // Faults.
  void Fault();

  void Finish(SimResult& r);

  const SimConfig& c_;
  std::mt19937_64 rng_;
  InvariantChecker checker_;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;

  std::vector<WorkerState> ws_;
  std::vector<Conn> conns_{1};  // index 0 unused
  std::vector<Message> slots_;
  std::vector<uint64_t> free_slots_;

  // Coordinator.
  std::unique_ptr<core::Scheduler> core_;
  std::unique_ptr<store::Store> store_;
  coordinator::CoreDriver driver_{*this, *this};
  bool batch_is_tick_ = false;  // the event of the batch being driven is a Tick
  bool coord_up_ = true;
  uint64_t epoch_ = 1;
  SessionId next_session_ = 1;
  std::map<SessionId, uint64_t> sessions_;
  std::map<TaskKey, int64_t> ckpt_;  // task -> reference ms (persist == false)
  std::map<core::JobId, size_t> job_index_;
  std::vector<core::JobId> job_ids_;        // by config index (0: not submitted yet)
  std::vector<std::vector<bool>> attempted_;
  std::map<core::JobId, int64_t> finished_at_;

  void TraceEvent(const core::Event& ev);

  // Figures.
  std::deque<std::string> trace_;
  uint64_t events_ = 0, decisions_ = 0, messages_ = 0, faults_ = 0, restarts_ = 0;
  uint64_t attempts_ = 0, first_attempts_ = 0, refused_ = 0, stale_kills_ = 0;
  int64_t core_ns_ = 0;
  double lost_ms_ = 0;
  uint64_t digest_ = 1469598103934665603ull;
  const bool tracing_ = c_.trace_lines > 0;
  bool stopped_on_violation_ = false;
};

void Mix(uint64_t& h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
}

// ---------------------------------------------------------------------------------------------
// Network

uint64_t Simulation::Open(uint32_t w) {
  Conn c;
  c.worker = w;
  c.session = next_session_++;
  c.epoch = epoch_;
  c.last_apply_c = c.last_apply_w = now_;
  conns_.push_back(c);
  const uint64_t id = conns_.size() - 1;
  sessions_[c.session] = id;
  return id;
}

void Simulation::Queue(Message m, bool to_coord) {
  Conn& c = conns_[m.conn];
  const double jitter = Faulty() && c_.faults.max_latency_jitter_s > 0
                            ? DrawUnit(rng_) * c_.faults.max_latency_jitter_s
                            : 0.0;
  m.arrive = std::max(now_ + ToMs(c_.latency_s + jitter), c.partitioned_until);
  const double qdelay = Faulty() && c_.faults.max_queue_delay_s > 0
                            ? DrawUnit(rng_) * c_.faults.max_queue_delay_s
                            : 0.0;
  int64_t& last = to_coord ? c.last_apply_c : c.last_apply_w;
  const int64_t apply = std::max(last, m.arrive + ToMs(qdelay));
  last = apply;
  m.to_coord = to_coord;
  const bool dup = Faulty() && !m.close_notice && DrawChance(rng_, c_.faults.duplicate_probability) &&
                   !(to_coord && std::holds_alternative<core::WorkerHello>(m.ev));
  for (int copy = 0; copy < (dup ? 2 : 1); ++copy) {
    uint64_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[slot] = m;
    } else {
      slot = slots_.size();
      slots_.push_back(m);
    }
    Push(apply, Ev::kDeliver, c.worker, slot);
    ++messages_;
  }
  if (dup) ++faults_;
}

void Simulation::SendToCoord(uint64_t conn, core::Event ev, bool close_notice) {
  Message m;
  m.conn = conn;
  m.ev = std::move(ev);
  m.close_notice = close_notice;
  Queue(std::move(m), true);
}

void Simulation::SendToWorker(uint64_t conn, ToWorker tw) {
  Message m;
  m.conn = conn;
  m.tw = tw;
  Queue(std::move(m), false);
}

void Simulation::CloseNotice(uint64_t conn) {
  Conn& c = conns_[conn];
  if (c.notice_sent) return;
  c.notice_sent = true;
  // FIN after everything the worker sent: FIFO behind it.
  SendToCoord(conn, core::SessionClosed{c_.workers[c.worker].name, c.session}, true);
}

void Simulation::Deliver(uint64_t slot) {
  Message m = std::move(slots_[slot]);
  free_slots_.push_back(slot);
  Conn& c = conns_[m.conn];
  if (m.to_coord) {
    if (!coord_up_ || c.epoch != epoch_) return;  // died with the coordinator's queue
    if (m.close_notice) {
      c.closed_c = std::min(c.closed_c, now_);
      auto s = sessions_.find(c.session);
      if (s != sessions_.end() && s->second == m.conn) sessions_.erase(s);
    } else if (c.closed_c <= m.arrive) {
      return;  // the stream was already gone
    }
    CoordApply(m.ev);
  } else {
    if (c.closed_w <= m.arrive) return;
    WorkerReceive(c.worker, m);
  }
}

// ---------------------------------------------------------------------------------------------
// Coordinator shell

int64_t Simulation::CheckpointOf(TaskKey key) {
  if (c_.persist) {
    auto files = store_->GetCheckpoint(key);
    if (!files.ok() || files->empty()) return 0;
    return static_cast<int64_t>((*files)[0].size);
  }
  auto it = ckpt_.find(key);
  return it == ckpt_.end() ? 0 : it->second;
}

void Simulation::CoordApply(const core::Event& ev) {
  ++events_;
  const core::WorkerName* from = std::visit(
      [](const auto& e) -> const core::WorkerName* {
        if constexpr (requires { e.worker; }) {
          return &e.worker;
        } else {
          return nullptr;
        }
      },
      ev);
  if (from != nullptr && c_.check_invariants) checker_.OnHeard(*from, At(now_));
  if (tracing_) TraceEvent(ev);
  const int64_t t0 = c_.wall_ns ? c_.wall_ns() : 0;
  std::vector<Decision> ds = core_->Apply(ev, At(now_));
  if (c_.wall_ns) core_ns_ += c_.wall_ns() - t0;
  decisions_ += ds.size();
  batch_is_tick_ = std::holds_alternative<core::Tick>(ev);
  (void)driver_.Apply(ds);  // Commit never fails here: a refused batch is a violation instead
}

absl::Status Simulation::Commit(const std::vector<Decision>& ds) {
  if (!c_.persist) return absl::OkStatus();
  // The shell may not send a batch the store refused: in a simulation that is a bug.
  absl::Status s = store_->Apply(ds, now_);
  if (!s.ok() && c_.check_invariants) {
    checker_.OnStoreError(At(now_), std::string(s.message()));
  }
  if (!s.ok() && tracing_) Trace("store refused a batch: " + std::string(s.message()));
  return absl::OkStatus();
}

void Simulation::Committed(const std::vector<Decision>& ds) {
  if (c_.check_invariants) checker_.OnBatch(ds, At(now_), batch_is_tick_);
}

void Simulation::TraceEvent(const core::Event& ev) {
  static const char* const kResults[] = {"succeeded", "failed", "timed out", "preempted"};
  if (const auto* r = std::get_if<core::AttemptReport>(&ev)) {
    const int res = static_cast<int>(r->result);
    Trace("<- " + r->worker + " s" + std::to_string(r->session) + ": attempt " +
          std::to_string(r->attempt) + " " + (res >= 0 && res < 4 ? kResults[res] : "?"));
  } else if (const auto* h = std::get_if<core::WorkerHello>(&ev)) {
    Trace("<- " + h->worker + " s" + std::to_string(h->session) + ": hello " + h->boot_id +
          ", holds " + std::to_string(h->held.size()));
  } else if (const auto* l = std::get_if<core::WorkerLeaving>(&ev)) {
    Trace("<- " + l->worker + " s" + std::to_string(l->session) + ": leaving");
  } else if (const auto* c = std::get_if<core::SessionClosed>(&ev)) {
    Trace("<- " + c->worker + " s" + std::to_string(c->session) + ": stream closed");
  } else if (const auto* k = std::get_if<core::CheckpointSaved>(&ev)) {
    Trace("<- " + k->worker + " s" + std::to_string(k->session) + ": checkpoint of attempt " +
          std::to_string(k->attempt));
  } else if (const auto* j = std::get_if<core::JobSubmitted>(&ev)) {
    Trace("job " + std::to_string(j->job) + " submitted: " + std::to_string(j->task_count) +
          " tasks");
  }
}

void Simulation::CloseFromCoord(uint64_t conn, const std::string& why) {
  Conn& c = conns_[conn];
  if (c.closed_c != kNever) return;
  ToWorker tw;
  tw.kind = ToWorker::kRefused;
  SendToWorker(conn, tw);
  c.closed_c = now_;
  c.notice_sent = true;  // the coordinator ended it itself
  sessions_.erase(c.session);
  if (tracing_) Trace("coordinator closes session " + std::to_string(c.session) + " of " +
        c_.workers[c.worker].name + ": " + why);
}

void Simulation::Each(const Decision& d) { Mix(digest_, d.index()); }

void Simulation::AttemptCreated(const core::AttemptCreated& a) {
  Mix(digest_, a.attempt);
  Mix(digest_, a.task.job);
  Mix(digest_, a.task.index);
  if (a.revived) return;  // the same attempt, running again
  ++attempts_;
  auto& seen = attempted_[job_index_.at(a.task.job)];
  if (!seen[a.task.index]) {
    seen[a.task.index] = true;
    ++first_attempts_;
  }
  if (tracing_) {
    Trace("attempt " + std::to_string(a.attempt) + " of task " + std::to_string(a.task.job) + "/" +
          std::to_string(a.task.index) + " on " + a.worker);
  }
}

void Simulation::AttemptEnded(const core::AttemptEnded& e) {
  Mix(digest_, e.attempt);
  Mix(digest_, static_cast<uint64_t>(e.outcome));
  if (tracing_) {
    Trace("attempt " + std::to_string(e.attempt) + " ended " + core::ToString(e.outcome) +
          (e.message.empty() ? "" : " (" + e.message + ")"));
  }
}

void Simulation::TaskCheckpointed(const core::TaskCheckpointed& t) {
  if (!c_.persist && !t.files.empty()) ckpt_[t.task] = static_cast<int64_t>(t.files[0].size);
}

void Simulation::JobChanged(const core::JobChanged& j) {
  Mix(digest_, j.job);
  Mix(digest_, static_cast<uint64_t>(j.state));
  if (j.state != core::JobState::kRunning) {
    finished_at_[j.job] = now_;
    if (tracing_) {
      Trace(std::string("job ") + std::to_string(j.job) + " " + core::ToString(j.state));
    }
  }
}

void Simulation::WorkerLost(const core::WorkerLost& l) {
  if (tracing_) Trace("worker " + l.worker + " lost");
  std::vector<uint64_t> open;
  for (const auto& [sid, conn] : sessions_) {
    if (c_.workers[conns_[conn].worker].name == l.worker) open.push_back(conn);
  }
  for (uint64_t conn : open) CloseFromCoord(conn, "lease expired");
}

void Simulation::Assign(const core::AssignAttempt& as) {
  auto it = sessions_.find(as.session);
  if (it == sessions_.end()) return;
  ToWorker tw;
  tw.kind = ToWorker::kAssign;
  tw.attempt = as.attempt;
  tw.task = as.task;
  tw.resume_ms = CheckpointOf(as.task);
  SendToWorker(it->second, tw);
}

void Simulation::Kill(const core::KillAttempt& k) {
  auto it = sessions_.find(k.session);
  if (it == sessions_.end()) return;
  ToWorker tw;
  tw.kind = ToWorker::kKill;
  tw.attempt = k.attempt;
  if (k.reason == core::KillReason::kStale) ++stale_kills_;
  SendToWorker(it->second, tw);
}

void Simulation::Ack(const core::AckReport& ack) {
  Mix(digest_, ack.attempt);
  Mix(digest_, ack.accepted);
  if (!ack.accepted) ++refused_;
  auto it = sessions_.find(ack.session);
  if (it == sessions_.end()) return;
  ToWorker tw;
  tw.kind = ToWorker::kAck;
  tw.attempt = ack.attempt;
  tw.accepted = ack.accepted;
  SendToWorker(it->second, tw);
}

void Simulation::Refuse(const core::RefuseSession& r) {
  auto it = sessions_.find(r.session);
  if (it != sessions_.end()) CloseFromCoord(it->second, r.reason);
}

void Simulation::CoordCrash() {
  if (tracing_) Trace("COORDINATOR CRASH");
  coord_up_ = false;
  ++epoch_;
  for (auto& [sid, conn] : sessions_) {
    Conn& c = conns_[conn];
    c.closed_c = now_;
    c.closed_w = std::min(c.closed_w, now_ + ToMs(c_.latency_s));
  }
  sessions_.clear();
  core_.reset();
  // Workers notice the stream end and retry.
  for (uint32_t w = 0; w < ws_.size(); ++w) {
    WorkerState& s = ws_[w];
    if (s.process_up && s.conn != 0) {
      s.conn = 0;
      Push(now_ + ToMs(c_.latency_s + c_.reconnect_s), Ev::kConnect, w, s.gen);
      s.connecting = true;
    }
  }
  const double down_s = 1 + DrawUnit(rng_) * 2 * static_cast<double>(c_.core.lease_timeout.count()) / 1000.0;
  Push(now_ + ToMs(down_s), Ev::kCoordRestart);
}

void Simulation::CoordRestart() {
  core_ = std::make_unique<core::Scheduler>(c_.core);
  auto state = store_->Load();
  if (!state.ok()) {
    if (tracing_) Trace("store load failed: " + std::string(state.status().message()));
    return;
  }
  state->users = c_.users;  // set by the admin, kept by the real store (its usage is not, here)
  core_->Restore(*state, At(now_));
  coord_up_ = true;
  next_session_ = 1;  // a new process numbers its sessions afresh
  ++restarts_;
  if (c_.check_invariants) checker_.OnRestart(At(now_));
  if (tracing_) Trace("coordinator restarted from its store");
  Push(now_ + ToMs(c_.tick_s), Ev::kTick);
}

// ---------------------------------------------------------------------------------------------
// Workers

void Simulation::WorkerSend(uint32_t w, core::Event ev) {
  if (ws_[w].conn == 0) return;  // not connected: reports wait in `unacked`
  SendToCoord(ws_[w].conn, std::move(ev));
}

void Simulation::Connect(uint32_t w) {
  WorkerState& s = ws_[w];
  s.connecting = false;
  if (!s.process_up || s.conn != 0) return;
  if (!coord_up_) {
    s.connecting = true;
    Push(now_ + ToMs(c_.reconnect_s), Ev::kConnect, w, s.gen);
    return;
  }
  s.conn = Open(w);
  const SimWorker& sw = c_.workers[w];
  core::WorkerHello h;
  h.worker = sw.name;
  h.session = conns_[s.conn].session;
  h.boot_id = "boot-" + std::to_string(s.boot);
  h.capacity = core::Resources{sw.slots, 0, 0};
  h.accepting = s.accepting;
  if (s.suspended) {
    for (const auto& [id, a] : s.running) h.frozen.push_back(id);
  }
  for (const auto& [id, a] : s.running) h.held.push_back(id);
  for (const auto& [id, r] : s.unacked) h.held.push_back(id);
  std::sort(h.held.begin(), h.held.end());
  if (tracing_) Trace(sw.name + " hello (session " + std::to_string(h.session) + ", " + h.boot_id + ", holds " +
        std::to_string(h.held.size()) + ")");
  SendToCoord(s.conn, h);
  for (const auto& [id, r] : s.unacked) {
    core::AttemptReport again = r;
    again.session = h.session;
    SendToCoord(s.conn, again);
  }
}

void Simulation::KillProcess(uint32_t w, bool fin) {
  WorkerState& s = ws_[w];
  // Work since each attempt's last checkpoint is gone.
  for (const auto& [id, a] : s.running) {
    lost_ms_ += static_cast<double>(Unsaved(s, a));
  }
  for (const auto& [id, ms] : s.unacked_compute) lost_ms_ += static_cast<double>(ms);
  s.running.clear();
  s.unacked.clear();
  s.unacked_compute.clear();
  s.process_up = false;
  s.accepting = false;
  s.suspended = false;
  ++s.gen;
  if (s.conn != 0) {
    Conn& c = conns_[s.conn];
    c.closed_w = now_;
    if (fin) CloseNotice(s.conn);
    s.conn = 0;
  }
  s.connecting = false;
}

void Simulation::StopAll(uint32_t w, bool graceful) {
  WorkerState& s = ws_[w];
  const SimWorker& sw = c_.workers[w];
  if (!s.process_up) return;
  if (!graceful) {
    if (tracing_) Trace(sw.name + " gone without a word");
    KillProcess(w, false);
    return;
  }
  if (tracing_) Trace(sw.name + " vacates (" + std::to_string(s.running.size()) + " attempts)");
  s.accepting = false;
  if (s.conn != 0) {
    core::OwnerStateChanged o;
    o.worker = sw.name;
    o.session = conns_[s.conn].session;
    o.accepting = false;
    o.state = "vacate";
    o.reason = "machine taken back";
    WorkerSend(w, o);
  }
  const std::map<AttemptId, RunningAttempt> running = std::move(s.running);
  s.running.clear();
  for (const auto& [id, a] : running) {
    const SimJob& job = JobOfTask(a.task);
    core::AttemptReport r;
    r.worker = sw.name;
    r.attempt = id;
    r.result = ReportResult::kPreempted;
    r.message = "vacated";
    const int64_t since = Unsaved(s, a);
    if (job.checkpoint_on_vacate && since > 0) {
      const double done = std::min(a.task_ref_ms, a.ref_done_ms + static_cast<double>(since) * sw.speed);
      r.checkpoint = std::vector<core::OutputFile>{
          core::OutputFile{"progress", Hex64(static_cast<uint64_t>(done)), static_cast<uint64_t>(done)}};
    } else {
      lost_ms_ += static_cast<double>(since);
      r.lost = Millis(since);
    }
    Report(w, r, 0);
  }
  // Say goodbye and go.
  if (s.conn != 0) {
    core::WorkerLeaving l;
    l.worker = sw.name;
    l.session = conns_[s.conn].session;
    WorkerSend(w, l);
  }
  // The machine leaves now: unacknowledged reports are gone with the process.
  s.suspended = false;
  s.unacked.clear();
  s.unacked_compute.clear();
  s.process_up = false;
  ++s.gen;
  if (s.conn != 0) {
    conns_[s.conn].closed_w = now_ + ToMs(c_.latency_s);
    CloseNotice(s.conn);
    s.conn = 0;
  }
}

void Simulation::LaneChange(uint32_t w) {
  const SimWorker& sw = c_.workers[w];
  WorkerState& s = ws_[w];
  const double t = static_cast<double>(now_) / 1000.0;
  const bool up = IsUp(sw, t + 1e-9);
  if (up && !s.machine_up) {
    s.machine_up = true;
    s.process_up = true;
    s.accepting = true;
    ++s.boot;
    ++s.gen;
    if (tracing_) Trace(sw.name + " up");
    Connect(w);
    Push(now_ + ToMs(c_.heartbeat_s), Ev::kHeartbeat, w, s.gen);
  } else if (!up && s.machine_up) {
    s.machine_up = false;
    StopAll(w, !DrawChance(rng_, c_.hard_down_fraction));
  }
  const double next = NextChange(sw, t + 1e-9);
  if (std::isfinite(next)) Push(std::max(now_ + 1, ToMs(next)), Ev::kLane, w);
}

void Simulation::Report(uint32_t w, core::AttemptReport r, int64_t compute_ms) {
  WorkerState& s = ws_[w];
  if (c_.check_invariants) checker_.OnWorkerReported(r.attempt, r.result, r.outputs);
  if (s.conn != 0) r.session = conns_[s.conn].session;
  s.unacked[r.attempt] = r;
  if (compute_ms > 0) s.unacked_compute[r.attempt] = compute_ms;
  WorkerSend(w, r);
}

void Simulation::StartAttempt(uint32_t w, const ToWorker& m) {
  WorkerState& s = ws_[w];
  const SimWorker& sw = c_.workers[w];
  if (s.running.count(m.attempt) != 0 || s.unacked.count(m.attempt) != 0) return;  // duplicate
  if (!s.accepting) {
    // Assigned while "not accepting" was in flight: hand it straight back.
    core::AttemptReport r;
    r.worker = sw.name;
    r.attempt = m.attempt;
    r.result = ReportResult::kPreempted;
    r.message = "not accepting work";
    Report(w, r, 0);
    return;
  }
  const SimJob& job = JobOfTask(m.task);
  RunningAttempt a;
  a.id = m.attempt;
  a.task = m.task;
  a.gen = 1;
  a.task_ref_ms = job.task_seconds[m.task.index] * 1000.0;
  a.ref_done_ms = std::min(a.task_ref_ms, static_cast<double>(m.resume_ms));
  const double fetch_s = sw.link_mbps > 0 ? static_cast<double>(job.input_bytes) * 8 / (sw.link_mbps * 1e6) : 0;
  a.run_start = now_ + ToMs(fetch_s);
  a.last_ckpt = a.run_start;
  a.finish = a.run_start + std::max<int64_t>(1, static_cast<int64_t>(std::ceil((a.task_ref_ms - a.ref_done_ms) / sw.speed)));
  if (job.timeout_s > 0) a.deadline = now_ + ToMs(job.timeout_s);
  if (job.BrokenOn(sw.name)) a.finish = a.run_start + 1;  // fails at once: a fast-failing worker
  s.running[a.id] = a;
  AttemptTimer(w, a.id, 0);  // schedule the first timer
}

// Schedules (gen == 0) or fires the attempt's next timer: a checkpoint, its timeout or its end.
void Simulation::AttemptTimer(uint32_t w, AttemptId id, uint64_t gen) {
  WorkerState& s = ws_[w];
  auto it = s.running.find(id);
  if (it == s.running.end()) return;
  RunningAttempt& a = it->second;
  const SimWorker& sw = c_.workers[w];
  const SimJob& job = JobOfTask(a.task);
  if (gen != 0) {
    if (gen != a.gen) return;
    if (now_ >= a.deadline && a.deadline <= a.finish) {
      core::AttemptReport r;
      r.worker = sw.name;
      r.attempt = id;
      r.result = ReportResult::kTimedOut;
      r.exit_code = -1;
      r.message = "timed out";
      lost_ms_ += static_cast<double>(Unsaved(s, a));
      s.running.erase(it);
      Report(w, r, 0);
      return;
    }
    if (now_ >= a.finish) {
      core::AttemptReport r;
      r.worker = sw.name;
      r.attempt = id;
      const int64_t compute = now_ - a.last_ckpt;
      if (DrawChance(rng_, job.failure_probability) || job.BrokenOn(sw.name)) {
        r.result = ReportResult::kFailed;
        r.exit_code = 1;
        r.message = "exit code 1";
      } else {
        r.result = ReportResult::kSucceeded;
        r.outputs.push_back(core::OutputFile{
            "out-" + std::to_string(a.task.job) + "-" + std::to_string(a.task.index), Hex64(id),
            a.task.index});
      }
      s.running.erase(it);
      Report(w, r, r.result == ReportResult::kSucceeded ? compute : 0);
      return;
    }
    // A checkpoint: saved only when it can be uploaded.
    if (s.conn != 0) {
      a.ref_done_ms = std::min(a.task_ref_ms, a.ref_done_ms + static_cast<double>(now_ - a.last_ckpt) * sw.speed);
      a.last_ckpt = now_;
      core::CheckpointSaved cp;
      cp.worker = sw.name;
      cp.session = conns_[s.conn].session;
      cp.attempt = id;
      cp.files.push_back(core::OutputFile{"progress", Hex64(static_cast<uint64_t>(a.ref_done_ms)),
                                          static_cast<uint64_t>(a.ref_done_ms)});
      WorkerSend(w, cp);
    }
  }
  int64_t next = std::min(a.finish, a.deadline);
  if (job.checkpoint_interval_s > 0) {
    const int64_t ck = std::max({a.run_start, a.last_ckpt, gen != 0 ? now_ : 0}) +
                       ToMs(job.checkpoint_interval_s);
    if (ck < next) next = ck;
  }
  ++a.gen;
  Push(std::max(next, now_ + 1), Ev::kAttempt, w, id, a.gen);
}

void Simulation::WorkerReceive(uint32_t w, const Message& m) {
  WorkerState& s = ws_[w];
  if (!s.process_up || s.conn != m.conn) return;
  const ToWorker& tw = m.tw;
  switch (tw.kind) {
    case ToWorker::kAssign:
      StartAttempt(w, tw);
      break;
    case ToWorker::kKill: {
      auto it = s.running.find(tw.attempt);
      if (it != s.running.end()) {
        const RunningAttempt& a = it->second;
        lost_ms_ += static_cast<double>(Unsaved(s, a));
        s.running.erase(it);
      }
      auto u = s.unacked_compute.find(tw.attempt);
      if (u != s.unacked_compute.end()) {
        lost_ms_ += static_cast<double>(u->second);
        s.unacked_compute.erase(u);
      }
      s.unacked.erase(tw.attempt);
      break;
    }
    case ToWorker::kAck: {
      auto u = s.unacked_compute.find(tw.attempt);
      if (u != s.unacked_compute.end()) {
        if (!tw.accepted) lost_ms_ += static_cast<double>(u->second);
        s.unacked_compute.erase(u);
      }
      s.unacked.erase(tw.attempt);
      break;
    }
    case ToWorker::kRefused:
      conns_[s.conn].closed_w = now_;
      s.conn = 0;
      if (!s.connecting) {
        s.connecting = true;
        Push(now_ + ToMs(c_.reconnect_s), Ev::kConnect, w, s.gen);
      }
      break;
  }
}

// The owner comes back: every attempt is frozen (no progress, timers stopped), no new work.
void Simulation::Suspend(uint32_t w, double for_s) {
  WorkerState& s = ws_[w];
  if (!s.process_up || s.suspended || !s.accepting) return;
  s.suspended = true;
  s.suspended_at = now_;
  s.accepting = false;
  core::OwnerStateChanged o;
  o.worker = c_.workers[w].name;
  o.accepting = false;
  o.state = "suspend";
  o.reason = "owner active";
  for (auto& [id, a] : s.running) {
    ++a.gen;  // its timer is void until the thaw
    o.suspended.push_back(id);
  }
  if (tracing_) Trace(o.worker + " suspended for its owner (" + std::to_string(o.suspended.size()) + " attempts)");
  if (s.conn != 0) {
    o.session = conns_[s.conn].session;
    WorkerSend(w, o);
  }
  Push(now_ + ToMs(for_s), Ev::kResume, w, s.boot);  // not s.gen: a clock jump bumps that
}

void Simulation::Resume(uint32_t w) {
  WorkerState& s = ws_[w];
  if (!s.process_up || !s.suspended) return;
  const int64_t frozen = now_ - s.suspended_at;
  s.suspended = false;
  s.accepting = s.machine_up;
  for (auto& [id, a] : s.running) {
    if (a.run_start > s.suspended_at) {
      a.run_start += frozen;
    } else {
      a.last_ckpt = std::max(a.last_ckpt, a.run_start) + frozen;
    }
    a.finish += frozen;
    if (a.deadline != kNever) a.deadline += frozen;  // the worker's timeout excludes frozen time
    AttemptTimer(w, id, 0);
  }
  if (tracing_) Trace(c_.workers[w].name + " thawed after " + std::to_string(frozen) + " ms");
  if (s.conn != 0) {
    core::OwnerStateChanged o;
    o.worker = c_.workers[w].name;
    o.session = conns_[s.conn].session;
    o.accepting = s.accepting;
    o.state = "run";
    WorkerSend(w, o);
  }
}

// ---------------------------------------------------------------------------------------------
// Faults

void Simulation::Fault() {
  const Faults& f = c_.faults;
  if (!Faulty()) return;
  const double per_worker = f.crash_per_hour + f.cut_per_hour + f.zombie_per_hour +
                            f.clock_jump_per_hour + f.owner_per_hour;
  const double total = per_worker * static_cast<double>(ws_.size()) + f.coordinator_crash_per_hour;
  if (total <= 0) return;
  Push(now_ + std::max<int64_t>(1, ToMs(DrawExponential(rng_, 3600.0 / total))), Ev::kFault);
  double pick = DrawUnit(rng_) * total;
  ++faults_;
  const double lease_s = static_cast<double>(c_.core.lease_timeout.count()) / 1000.0;
  if (pick < f.coordinator_crash_per_hour) {
    if (coord_up_ && c_.persist) CoordCrash();
    return;
  }
  pick -= f.coordinator_crash_per_hour;
  const uint32_t w = static_cast<uint32_t>(DrawBelow(rng_, ws_.size()));
  WorkerState& s = ws_[w];
  const SimWorker& sw = c_.workers[w];
  const double r = DrawUnit(rng_) * per_worker;
  if (r < f.crash_per_hour) {
    if (!s.process_up) return;
    if (tracing_) Trace("FAULT " + sw.name + " crashes");
    KillProcess(w, /*fin=*/DrawChance(rng_, 0.5));
    Push(now_ + ToMs(0.5 + DrawUnit(rng_) * 3 * lease_s), Ev::kWorkerRestart, w, s.gen);
  } else if (r < f.crash_per_hour + f.cut_per_hour) {
    if (s.conn == 0) return;
    if (tracing_) Trace("FAULT " + sw.name + " connection cut");
    Conn& c = conns_[s.conn];
    c.closed_w = now_;
    c.closed_c = now_;
    CloseNotice(s.conn);
    s.conn = 0;
    s.connecting = true;
    Push(now_ + ToMs(c_.reconnect_s), Ev::kConnect, w, s.gen);
  } else if (r < f.crash_per_hour + f.cut_per_hour + f.zombie_per_hour) {
    if (s.conn == 0) return;
    const double for_s = (0.5 + DrawUnit(rng_) * 2.5) * lease_s;
    if (tracing_) Trace("FAULT " + sw.name + " partitioned for " + std::to_string(for_s) + " s");
    conns_[s.conn].partitioned_until = now_ + ToMs(for_s);
  } else if (r < f.crash_per_hour + f.cut_per_hour + f.zombie_per_hour + f.owner_per_hour) {
    Suspend(w, 0.5 + DrawUnit(rng_) * 3 * lease_s);
  } else {
    const int64_t jump = ToMs((DrawUnit(rng_) * 4 - 2) * lease_s);
    if (tracing_) Trace("FAULT " + sw.name + " clock jumps " + std::to_string(jump) + " ms");
    // Its heartbeat timer runs on the local clock: a backwards jump delays the next beat.
    if (s.process_up && jump < 0) {
      ++s.gen;
      Push(now_ + ToMs(c_.heartbeat_s) - jump, Ev::kHeartbeat, w, s.gen);
      if (s.connecting) Push(now_ + ToMs(c_.reconnect_s), Ev::kConnect, w, s.gen);
    }
  }
}

// ---------------------------------------------------------------------------------------------

SimResult Simulation::Run() {
  core_ = std::make_unique<core::Scheduler>(c_.core);
  store_ = store::NewMemoryStore();
  ws_.resize(c_.workers.size());
  job_ids_.assign(c_.jobs.size(), 0);
  attempted_.resize(c_.jobs.size());
  for (size_t j = 0; j < c_.jobs.size(); ++j) {
    attempted_[j].assign(c_.jobs[j].task_seconds.size(), false);
    Push(ToMs(c_.jobs[j].submit_at_s), Ev::kSubmit, 0, j);
  }
  for (uint32_t w = 0; w < ws_.size(); ++w) Push(0, Ev::kLane, w);
  if (c_.check_invariants) checker_.OnUsers(c_.users);
  for (const core::UserSet& u : c_.users) CoordApply(u);
  Push(ToMs(c_.tick_s), Ev::kTick);
  if (c_.faults.faults_until_s > 0) Push(1, Ev::kFault);

  const int64_t stop = ToMs(c_.max_sim_s);
  size_t submitted = 0;
  while (!queue_.empty()) {
    const Event e = queue_.top();
    queue_.pop();
    if (e.t > stop) break;
    now_ = e.t;
    switch (e.kind) {
      case Ev::kSubmit: {
        if (!coord_up_) {
          Push(now_ + 1000, Ev::kSubmit, 0, e.a);
          break;
        }
        const SimJob& job = c_.jobs[e.a];
        core::JobSubmitted js;
        js.task_count = static_cast<uint32_t>(job.task_seconds.size());
        js.resources = job.resources;
        js.max_attempts = job.max_attempts;
        js.timeout = Millis(ToMs(job.timeout_s));
        js.user = job.user;
        js.priority = job.priority;
        if (c_.persist) {
          store::NewJob nj;
          nj.name = "sim-" + std::to_string(e.a);
          nj.sched = js;
          auto id = store_->InsertJob(nj, now_);
          if (!id.ok()) return SimResult{};
          js.job = *id;
        } else {
          js.job = e.a + 1;
        }
        job_ids_[e.a] = js.job;
        job_index_[js.job] = e.a;
        if (c_.check_invariants) {
          checker_.OnJob(js.job, js.task_count, js.max_attempts, js.user, js.resources.cpus);
          if (!job.broken_on.empty()) checker_.OnBrokenJob(js.job, job.broken_on);
        }
        ++submitted;
        CoordApply(js);
        if (job.cancel_at_s >= 0) Push(std::max(now_, ToMs(job.cancel_at_s)), Ev::kCancel, 0, e.a);
        break;
      }
      case Ev::kResume:
        if (e.a == ws_[e.worker].boot) Resume(e.worker);
        break;
      case Ev::kCancel:
        if (!coord_up_) {
          Push(now_ + 1000, Ev::kCancel, 0, e.a);  // the client retries
          break;
        }
        CoordApply(core::JobCancelled{job_ids_[e.a]});
        break;
      case Ev::kTick:
        if (!coord_up_) break;
        CoordApply(core::Tick{});
        Push(now_ + ToMs(c_.tick_s), Ev::kTick);
        break;
      case Ev::kLane:
        LaneChange(e.worker);
        break;
      case Ev::kHeartbeat: {
        WorkerState& s = ws_[e.worker];
        if (e.a != s.gen || !s.process_up) break;
        if (s.conn != 0) {
          WorkerSend(e.worker, core::WorkerHeartbeat{c_.workers[e.worker].name, conns_[s.conn].session});
        }
        Push(now_ + ToMs(c_.heartbeat_s), Ev::kHeartbeat, e.worker, s.gen);
        break;
      }
      case Ev::kAttempt:
        AttemptTimer(e.worker, e.a, e.b);
        break;
      case Ev::kConnect:
        if (e.a != ws_[e.worker].gen) break;
        Connect(e.worker);
        break;
      case Ev::kDeliver:
        Deliver(e.a);
        break;
      case Ev::kFault:
        Fault();
        break;
      case Ev::kCoordRestart:
        CoordRestart();
        if (!coord_up_) Push(now_ + 1000, Ev::kCoordRestart);
        break;
      case Ev::kWorkerRestart: {
        WorkerState& s = ws_[e.worker];
        if (e.a != s.gen || s.process_up || !s.machine_up) break;
        s.process_up = true;
        s.accepting = true;
        ++s.boot;
        ++s.gen;
        if (tracing_) Trace(c_.workers[e.worker].name + " restarts");
        Connect(e.worker);
        Push(now_ + ToMs(c_.heartbeat_s), Ev::kHeartbeat, e.worker, s.gen);
        break;
      }
    }
    if (submitted == c_.jobs.size() && finished_at_.size() == c_.jobs.size()) break;
    if (c_.check_invariants && !checker_.violations().empty()) {
      stopped_on_violation_ = true;  // the trace ends where things went wrong
      break;
    }
  }
  SimResult r;
  Finish(r);
  return r;
}

void Simulation::Finish(SimResult& r) {
  r.finished = finished_at_.size() == c_.jobs.size();
  r.all_succeeded = r.finished;
  int64_t end = 0;
  for (const auto& [job, t] : finished_at_) end = std::max(end, t);
  r.makespan_s = static_cast<double>(r.finished ? end : now_) / 1000.0;
  r.job_response_s.assign(c_.jobs.size(), -1);
  for (size_t j = 0; j < c_.jobs.size(); ++j) {
    auto f = finished_at_.find(job_ids_[j]);
    if (job_ids_[j] != 0 && f != finished_at_.end()) {
      r.job_response_s[j] = static_cast<double>(f->second) / 1000.0 - c_.jobs[j].submit_at_s;
    }
  }
  r.lower_bound_s = MakespanLowerBound(c_.workers, c_.jobs);
  // An unfinished run has no makespan to compare, and a job with failed tasks did not do the
  // work the bound counts: efficiency stays 0 for both.
  r.efficiency = 0;
  for (const SimJob& j : c_.jobs) {
    for (double s : j.task_seconds) r.total_work_s += s * j.resources.cpus;
    r.tasks += j.task_seconds.size();
  }
  if (!core_) r.all_succeeded = false;
  if (core_) {
    for (const core::JobSummary& j : core_->Jobs()) {
      if (j.state != core::JobState::kSucceeded) r.all_succeeded = false;
      r.preemptions += j.counters.preemptions;
      r.backups += j.counters.backups;
      r.lost += j.counters.lost;
      r.failures += j.counters.failures;
      r.suspensions += j.counters.suspensions;
      r.core_lost_work_s += static_cast<double>(j.counters.lost_work.count()) / 1000.0;
    }
  }
  if (r.all_succeeded && r.makespan_s > 0 && std::isfinite(r.lower_bound_s)) {
    r.efficiency = std::min(1.0, r.lower_bound_s / r.makespan_s);
  }
  r.attempts = attempts_;
  r.reassignments = attempts_ - first_attempts_;
  r.lost_work_s = lost_ms_ / 1000.0;
  r.events = events_;
  r.decisions = decisions_;
  r.messages = messages_;
  r.faults_injected = faults_;
  r.coordinator_restarts = restarts_;
  r.refused_reports = refused_;
  r.stale_kills = stale_kills_;
  r.core_seconds = static_cast<double>(core_ns_) / 1e9;
  r.decisions_per_s = r.core_seconds > 0 ? static_cast<double>(decisions_) / r.core_seconds : 0;
  r.digest = digest_;
  if (c_.check_invariants) {
    if (!stopped_on_violation_ && now_ >= ToMs(c_.faults.faults_until_s)) {
      checker_.CheckFinished(At(now_));
    }
    r.violations = checker_.violations();
  }
  r.trace.assign(trace_.begin(), trace_.end());
}

}  // namespace

// ---------------------------------------------------------------------------------------------

absl::StatusOr<SimResult> RunSimulation(const SimConfig& config) {
  if (config.workers.empty()) return absl::InvalidArgumentError("simulation: no workers");
  if (config.jobs.empty()) return absl::InvalidArgumentError("simulation: no jobs");
  for (size_t i = 0; i < config.workers.size(); ++i) {
    const SimWorker& w = config.workers[i];
    if (!(w.speed >= 1e-6 && w.speed <= 1e6) || w.slots == 0) {
      return absl::InvalidArgumentError(absl::StrCat("simulation: worker ", i, " (", w.name,
                                                     "): speed must be in [1e-6, 1e6] and slots >= 1"));
    }
  }
  for (size_t j = 0; j < config.jobs.size(); ++j) {
    const SimJob& job = config.jobs[j];
    if (job.task_seconds.empty() || job.task_seconds.size() > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("simulation: job ", j, ": needs 1 to 2^32-1 tasks"));
    }
    for (size_t i = 0; i < job.task_seconds.size(); ++i) {
      if (!(job.task_seconds[i] > 0) || !(job.task_seconds[i] <= 1e9)) {
        return absl::InvalidArgumentError(
            absl::StrCat("simulation: job ", j, " task ", i, ": seconds must be in (0, 1e9]"));
      }
    }
    if (!(job.checkpoint_interval_s >= 0 && job.checkpoint_interval_s <= 1e9) ||
        !(job.timeout_s >= 0 && job.timeout_s <= 1e9)) {
      return absl::InvalidArgumentError(
          absl::StrCat("simulation: job ", j, ": checkpoint interval and timeout must be in [0, 1e9] s"));
    }
    if (job.max_attempts == 0) {
      return absl::InvalidArgumentError(absl::StrCat("simulation: job ", j, ": max_attempts 0"));
    }
  }
  if (!(config.tick_s > 0) || !(config.heartbeat_s > 0)) {
    return absl::InvalidArgumentError("simulation: tick and heartbeat periods must be > 0");
  }
  Simulation sim(config);
  return sim.Run();
}

}  // namespace idlepool::sim
