// `idlepool sim --users FILE`: a multi-user workload on the simulated pool, and each user's
// slowdown under fair share against FIFO across users (sim/users.h).
#include <cstdio>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/sim_command.h"
#include "nlohmann/json.hpp"
#include "sim/users.h"

namespace idlepool::cli {

int RunSimUsers(const SimOptions& o, sim::SimConfig pool, const std::string& availability) {
  std::mt19937_64 rng(o.seed ^ 0x2545f4914f6cdd1dull);
  auto workload = sim::ReadUsersFile(o.users, rng);
  if (!workload.ok()) {
    std::fprintf(stderr, "idlepool sim: %s\n", std::string(workload.status().message()).c_str());
    return 2;
  }
  for (const sim::SimJob& j : workload->jobs) {
    if (j.resources.cpus > o.slots) {
      std::fprintf(stderr,
                   "idlepool sim: %s: a job of user '%s' needs %u slots per task; the simulated "
                   "workers have %u (--slots), so it could never run\n",
                   o.users.c_str(), j.user.c_str(), j.resources.cpus, o.slots);
      return 2;
    }
  }
  pool.users = workload->users;
  pool.jobs = workload->jobs;
  auto rows = sim::CompareFairToFifo(pool);
  if (!rows.ok()) {
    std::fprintf(stderr, "idlepool sim: %s: %s\n", o.users.c_str(),
                 std::string(rows.status().message()).c_str());
    return 1;
  }
  if (o.json) {
    nlohmann::json j;
    j["workers"] = o.workers;
    j["availability"] = availability;
    j["policy"] = o.policy;
    j["seed"] = o.seed;
    j["users"] = nlohmann::json::array();
    for (const sim::UserSlowdown& r : *rows) {
      j["users"].push_back(
          {{"user", r.user},
           {"share", r.share},
           {"jobs", r.jobs},
           {"tasks", r.tasks},
           {"alone_response_s", r.alone_response_s},
           {"fair_share", {{"mean_slowdown", r.fair_mean}, {"max_slowdown", r.fair_max}}},
           {"fifo", {{"mean_slowdown", r.fifo_mean}, {"max_slowdown", r.fifo_max}}}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("users of %s on %llu workers (%u slot(s) each; availability: %s), seed %llu\n",
              o.users.c_str(), static_cast<unsigned long long>(o.workers), o.slots,
              availability.c_str(), static_cast<unsigned long long>(o.seed));
  std::printf(
      "slowdown: a job's time from submit to end in the shared pool over its time with the "
      "pool to its user alone (1.0: not slowed)\n");
  std::printf("%-16s %6s %6s %8s %12s %21s %21s\n", "USER", "SHARE", "JOBS", "TASKS", "ALONE (s)",
              "FAIR SHARE mean/max", "FIFO mean/max");
  for (const sim::UserSlowdown& r : *rows) {
    std::printf("%-16s %6g %6llu %8llu %12.1f %12.2f / %-6.2f %12.2f / %.2f\n", r.user.c_str(),
                r.share, static_cast<unsigned long long>(r.jobs),
                static_cast<unsigned long long>(r.tasks), r.alone_response_s, r.fair_mean,
                r.fair_max, r.fifo_mean, r.fifo_max);
  }
  return 0;
}

}  // namespace idlepool::cli
