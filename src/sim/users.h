// Multi-user workloads for the simulator (`idlepool sim --users FILE`): users with shares and
// quotas, and the arrival of their jobs, read from a TOML file; and the comparison the command
// prints: each user's slowdown (a job's response time in the shared pool over its response time
// with the pool to its user alone) under fair share, and under FIFO across users (the oldest job
// first, the order before users existed).
//
// The file:
//   [[user]]                    one table per user (a job's user must be one of them)
//   name = "alice"
//   share = 2                   > 0, default 1
//   max_slots = 0               0 (default): no quota
//   [[job]]                     one table per kind of job
//   user = "alice"
//   at_s = 0                    first submit, seconds from the start
//   tasks = 60                  tasks per job, 1..1,000,000
//   task_seconds = "30"         a distribution, as --task-seconds (sim/workload.h)
//   cpus = 1                    slots per task
//   priority = 0                -1000..1000, among the user's jobs
//   repeat = 1                  this many such jobs (1..10,000) ...
//   every_s = 0                 ... one every every_s seconds
// Errors name the file, the line and the key, and say what is expected.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/simulator.h"

namespace idlepool::sim {

struct UsersWorkload {
  std::vector<core::UserSet> users;
  std::vector<SimJob> jobs;  // by submit time, then file order
};

[[nodiscard]] absl::StatusOr<UsersWorkload> ReadUsersFile(const std::string& path,
                                                          std::mt19937_64& rng);

struct UserSlowdown {
  std::string user;
  double share = 1;
  uint64_t jobs = 0, tasks = 0;
  double alone_response_s = 0;         // mean over its jobs, the pool to itself
  double fair_mean = 0, fair_max = 0;  // slowdown under fair share
  double fifo_mean = 0, fifo_max = 0;  // slowdown under FIFO across users
};

// Runs `shared` (its jobs and users) under fair share and under FIFO across users, and each
// user's jobs alone on the same workers; kFailedPrecondition when a run does not finish.
[[nodiscard]] absl::StatusOr<std::vector<UserSlowdown>> CompareFairToFifo(const SimConfig& shared);

}  // namespace idlepool::sim
