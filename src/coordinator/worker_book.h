// The worker book: what the pool measured of its workers (link, calibration, availability:
// store::WorkerRecord rows), the workers' events for timelines (store::WorkerEvent: connected,
// left, disconnected, lost, owner, gpu) and their last sensor readings. Kept in memory and
// written to the store by the book's own thread, never by the core thread's group commit.
//
// Threads: Hello, Link, NoteOwner, Record* and ObserveAvailability come from the session
// handlers and the core thread; the Fill* reads from the RPC threads; Start/Stop from the
// coordinator's. Locking: mu_ guards everything; the book thread writes to the store without it.
// Errors: a failed store write is logged, not fatal (these are measurements; the next write
// carries them again). Units: *_ms are wall-clock milliseconds unless named mono.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "coordinator/availability.h"
#include "coordinator/planner.h"
#include "coordinator/sessions.h"
#include "core/scheduler.h"
#include "idlepool.pb.h"
#include "platform/clock.h"
#include "store/store.h"

namespace idlepool::coordinator {

class WorkerBook {
 public:
  // `store` and `clock` must outlive the book.
  WorkerBook(store::Store& store, const platform::Clock& clock) : store_(store), clock_(clock) {}
  ~WorkerBook() { Stop(); }

  // Before Start: the rows the store holds (availability totals included).
  void Restore(std::vector<store::WorkerRecord> rows);
  // Starts the book thread; Stop writes every row once more and joins it. Stop is idempotent.
  void Start();
  void Stop();

  // A welcomed session: its hello's calibration (0: unknown, the last score stays) and host.
  void Hello(const std::string& worker, core::SessionId session, const std::string& hostname,
             double cpu_score, uint32_t cores);
  // LinkMeasured from a session; ignored unless the session is the worker's welcomed one, or
  // when out of range (`max_probe_bytes`: the probe size the coordinator serves at most).
  // Returns the worker's down rate estimate after it (bytes/s), 0 when the probe was ignored.
  int64_t Link(const std::string& worker, core::SessionId session, const v1::LinkMeasured& m,
               uint64_t max_probe_bytes);
  // The worker's down rate estimate (bytes/s; from its probes, or the workers table after a
  // restart), 0 when never measured. Any thread.
  int64_t DownBytesPerS(const std::string& worker);
  // Core thread, once at the first tick: a worker is up while connected and accepting work;
  // workers known only from the store (not seen since this start) are down. Then ObserveWorker
  // for each worker an event may have changed (availability adds the time of the period in
  // progress when read, so nothing needs observing while nothing changes).
  void ObserveAvailability(const std::vector<core::WorkerView>& views, core::MonoTime now);
  void ObserveWorker(const std::string& worker, bool up, core::MonoTime now);
  // Forgets the workers without a welcomed session that have been down (availability.h) for
  // `after` or more, after writing their rows once more: the store keeps their history, and a
  // worker that comes back gets it from there (its down time while forgotten counted from its
  // row's last write). Returns their names. Core thread, from time to time.
  std::vector<std::string> ForgetDeparted(core::MonoTime now, core::Millis after);
  // Workers it holds in memory (records of measurements).
  size_t size();

  // Worker events. RecordConnected: the core welcomed `session` (its first owner state is
  // recorded again). RecordSessionEnd ("disconnected", "left"): only for the worker's welcomed
  // session, once. RecordLost: the core declared the worker lost.
  void RecordConnected(const std::string& worker, core::SessionId session);
  void RecordSessionEnd(const std::string& worker, core::SessionId session, const char* kind);
  void RecordLost(const std::string& worker);
  // Keeps the readings, and records an "owner" event when the state or cause differs from the
  // last one recorded (state empty: readings only). Ignored unless `session` is welcomed.
  void NoteOwner(const std::string& worker, core::SessionId session, const std::string& state,
                 const std::string& cause, const std::string& reason,
                 const std::optional<v1::SensorReadings>& sensors);
  // Whether `session` is the worker's welcomed one (for its events).
  bool IsWelcomed(const std::string& worker, core::SessionId session);
  // "gpu" events: "held" with the cause, or "free", one per flipped device.
  void GpuEvents(const std::string& worker, const std::vector<GpuFlip>& flipped);

  // ListWorkers: measurements and sensors onto the listed workers, then a "disconnected" entry
  // for every worker known only from the store.
  void FillWorkers(core::MonoTime now, v1::ListWorkersReply* reply);
  // The planner's view: each worker's record and availability totals.
  void FillPlanWorkers(core::MonoTime now, std::vector<PlanWorker>& workers);

 private:
  // The worker's record: in memory, else its row (pending or in the store) brought back, else a
  // new one.
  store::WorkerRecord& Entry(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A forgotten worker's row, from final_rows_ or the store; nullopt when it has none.
  std::optional<store::WorkerRecord> StoredRow(const std::string& worker)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkDirty(const std::string& worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddEvent(const std::string& worker, const char* kind, const std::string& state = "",
                const std::string& cause = "", const std::string& reason = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The record with its availability as of `now_ms` (monotonic).
  store::WorkerRecord Snapshot(const store::WorkerRecord& r, int64_t now_ms) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillMeasurements(const store::WorkerRecord& r, int64_t now_ms, int64_t wall_ms,
                        v1::WorkerInfo* out) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();
  // One pass of the book thread: writes what `lock` let go of, then takes it again.
  void WritePass(std::unique_lock<std::mutex>& lock, bool full, core::MonoTime now);

  store::Store& store_;
  const platform::Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, store::WorkerRecord> records_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, core::SessionId> sessions_ ABSL_GUARDED_BY(mu_);  // welcomed (Hello)
  AvailabilityTracker availability_ ABSL_GUARDED_BY(mu_);
  // worker -> its recent link probes, oldest first
  std::map<std::string, std::vector<LinkProbe>> link_probes_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  // Rows of forgotten workers not written yet (the next write pass stores them).
  std::map<std::string, store::WorkerRecord> final_rows_ ABSL_GUARDED_BY(mu_);
  // Worker events not yet stored; each worker's welcomed session (for its events), the owner
  // state and cause last recorded, and its sensors as it last said.
  std::vector<store::WorkerEvent> pending_events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, core::SessionId> event_sessions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::pair<std::string, std::string>> owner_seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::SensorReadings> sensors_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Milliseconds of a monotonic time point (since the clock's epoch).
inline int64_t MonoMs(core::MonoTime t) {
  return std::chrono::duration_cast<core::Millis>(t.time_since_epoch()).count();
}

}  // namespace idlepool::coordinator
