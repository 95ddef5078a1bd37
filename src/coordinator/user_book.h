// Users' shares and quotas as the admin set them (`idlepool users set`), and the checks a submit
// passes against them. The book keeps every user row in memory (a pool has few users), writes
// each change to the store before the core hears of it (core::UserSet), and answers
// ListUsers from the core's view (core::Scheduler::Users) with the quotas the core does not
// hold: max_queued_tasks and max_stored_bytes are refused at submit here, max_slots and max_gpus
// are held at placement by the core (core/ordering.h).
//
// Restart: Load fills the core's restore state with the users and their decayed usage, which the
// core loop saves about once a minute (CoreLoop, store::Store::PutUsageBalances): usage decays
// over the time the coordinator was down as if nothing ran.
//
// Threads: gRPC handler threads (Set, CheckSubmit, List) and the starting thread (Load); a mutex
// guards the rows. Holds references to the store, the core loop and the clock.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/core_loop.h"
#include "core/scheduler.h"
#include "platform/clock.h"
#include "store/store.h"
#include "users.pb.h"

namespace idlepool::coordinator {

class UserBook {
 public:
  UserBook(store::Store& store, CoreLoop& core, const platform::Clock& clock, core::UsageRule usage,
           core::FairPreemptionRule preemption)
      : store_(store), core_(core), clock_(clock), usage_(usage), preemption_(preemption) {}

  // Reads the store's users and usage into `state` (usage decayed under `rule` from its save to
  // now) and into the book. Before the core starts.
  absl::Status Load(core::RestoredState& state);
  // Changes the fields `req` sets; kInvalidArgument for a bad name or share.
  absl::StatusOr<v1::UserSettings> Set(const v1::SetUserRequest& req);
  v1::UserSettings SettingsOf(const std::string& user) const;
  // OK, or kResourceExhausted naming the quota a job of `tasks` tasks and `bytes` new input bytes
  // would pass for `user`, what it holds and what to do.
  absl::Status CheckSubmit(const std::string& user, uint64_t tasks, uint64_t bytes);
  void List(v1::ListUsersReply* reply);

 private:
  // Bytes the store keeps for `user`'s jobs: their inputs, per-task inputs and outputs.
  absl::StatusOr<uint64_t> StoredBytesOf(const std::string& user);

  store::Store& store_;
  CoreLoop& core_;
  const platform::Clock& clock_;
  const core::UsageRule usage_;
  const core::FairPreemptionRule preemption_;
  mutable std::mutex mu_;
  std::map<std::string, v1::UserSettings> users_;
};

}  // namespace idlepool::coordinator
