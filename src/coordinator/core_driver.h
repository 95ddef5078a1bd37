// The core driver: applies one batch of core decisions (core/scheduler.h) in the order the
// shells promise. First the batch's records go to a RecordSink in one commit; only once that
// succeeded does each decision go to a DecisionTarget, in the batch's order (messages to worker
// sessions, and the records the shell also acts on). A failed commit sends nothing.
//
// Shared by the coordinator's core loop (sink: the SQLite store; target: the gRPC sessions) and
// by the simulator (sink: its in-memory store; target: its simulated network). Pure: no gRPC,
// no I/O of its own, no clocks, so src/sim links it without gRPC.
//
// Threads: a driver is used by one thread at a time (the coordinator's core thread, the
// simulator's loop); it holds references to its sink and target, which must outlive it.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "core/scheduler.h"

namespace idlepool::coordinator {

// Where a batch's records go.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Makes the records of `batch` (core::IsRecord; the messages in it are to be skipped) durable,
  // all of them or none. Called once per batch that holds a record. An error stops the batch.
  virtual absl::Status Commit(const std::vector<core::Decision>& batch) = 0;
};

// Where a committed batch goes, one call per decision in the batch's order.
class DecisionTarget {
 public:
  virtual ~DecisionTarget() = default;
  // Once per batch, after its commit and before its first decision (also for an empty batch).
  virtual void Committed(const std::vector<core::Decision>& /*batch*/) {}
  // Every decision, before its own call below.
  virtual void Each(const core::Decision& /*d*/) {}
  // Records, already committed, that the shell acts on as well.
  virtual void AttemptCreated(const core::AttemptCreated& /*a*/) {}
  virtual void AttemptEnded(const core::AttemptEnded& /*e*/) {}
  virtual void TaskCheckpointed(const core::TaskCheckpointed& /*c*/) {}
  virtual void JobChanged(const core::JobChanged& /*j*/) {}
  virtual void WorkerLost(const core::WorkerLost& /*l*/) {}
  // Messages to worker sessions (to be dropped when the session is gone).
  virtual void Assign(const core::AssignAttempt& a) = 0;
  virtual void Kill(const core::KillAttempt& k) = 0;
  virtual void Ack(const core::AckReport& a) = 0;
  virtual void Refuse(const core::RefuseSession& r) = 0;
};

class CoreDriver {
 public:
  CoreDriver(RecordSink& sink, DecisionTarget& target) : sink_(sink), target_(target) {}

  // Commits the records of `batch` when it holds any, then hands every decision to the target.
  // Returns the commit's error, in which case nothing reached the target.
  [[nodiscard]] absl::Status Apply(const std::vector<core::Decision>& batch);

 private:
  RecordSink& sink_;
  DecisionTarget& target_;
};

}  // namespace idlepool::coordinator
