// `idlepool sim`: runs the deterministic pool simulator (src/sim) from the command line, either
// one performance run (makespan, lower bound, efficiency, lost work...) or many seeds of
// deterministic simulation testing (--dst).
//
// Thread safety: call from one thread. Prints to stdout (results) and stderr (errors).
// Returns the process exit code: 0 success, 1 a DST seed failed or the job did not finish,
// 2 bad arguments or unreadable input (the message names the file, line or option).
#pragma once

#include <cstdint>
#include <string>

#include "sim/simulator.h"

namespace idlepool::cli {

struct SimOptions {
  uint64_t workers = 100;
  std::string trace;           // availability trace file (spot .json, FTA .tab, STUNner text)
  std::string model;           // or a fitted model name (nd07cpu, microsoft99, ...)
  double horizon_s = 30 * 86400;  // lanes sampled from a model repeat after this
  std::string job;             // a job spec (TOML): task count, resources, max_attempts, timeout
  uint64_t tasks = 1000;       // without --job
  std::string users;           // a multi-user workload (sim/users.h) instead of one job
  std::string task_seconds = "60";
  std::string speeds = "1";    // worker speed distribution
  uint32_t slots = 1;
  std::string policy = "default";
  uint64_t seed = 1;
  // Frames: with `chunk` set, --tasks counts frames and --task-seconds is per frame; tasks are
  // chunks of frames ("auto": sim::AdaptiveChunk toward target_runtime_s), each paying
  // task_overhead_s of start-up.
  std::string chunk;
  double target_runtime_s = 300;
  double task_overhead_s = 0;
  double checkpoint_interval_s = 0;
  bool checkpoint_on_vacate = false;
  double hard_down_fraction = 0;
  double lease_s = 5;
  double heartbeat_s = 1;
  double tick_s = 1;
  double max_days = 30;         // give up after this much simulated time
  bool json = false;
  bool no_timing = false;      // leave out the wall-time figures: output is then byte-identical
  // --dst
  bool dst = false;
  uint64_t seeds = 100;
  std::string plant;           // planted bug name (tests of the harness itself)
  bool verbose = false;
};

int RunSimCommand(const SimOptions& o);
// `--users`: the workload of `o.users` on the pool of `pool` (workers, timing, policy), fair share
// against FIFO (cli/sim_users_command.cc).
int RunSimUsers(const SimOptions& o, sim::SimConfig pool, const std::string& availability);

}  // namespace idlepool::cli
