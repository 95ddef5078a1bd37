#include "coordinator/timeline.h"

#include <algorithm>
#include <map>
#include <utility>

namespace idlepool::coordinator {

std::string WorkerActivity(const ActivityInput& in) {
  if (in.state != "connected") {
    return in.state == "lost" || in.state == "left" ? std::string(in.state) : "disconnected";
  }
  if (in.owner_state == "suspend" || in.owner_state == "vacate") {
    const std::string_view c = in.owner_cause;
    if (c == "battery") return "on_battery";
    if (c == "temperature") return "hot";
    if (c == "lid" || c == "sleep") return "lid_closed";
    if (c == "window") return "outside_window";
    return "suspended";
  }
  // Its owner cannot be sensed and the load does not yet say the machine is free.
  if (in.owner_state == "unknown" && in.owner_cause == "owner_unknown") return "suspended";
  return in.attempts_running > 0 ? "running" : "idle";
}

std::vector<uint64_t> NextAttempts(const std::vector<store::AttemptRecord>& attempts) {
  // Per task, its attempts by id: (id, started_ms).
  std::map<uint32_t, std::vector<std::pair<uint64_t, int64_t>>> by_task;
  for (const auto& a : attempts) by_task[a.task.index].emplace_back(a.attempt, a.started_ms);
  for (auto& [task, list] : by_task) std::sort(list.begin(), list.end());
  std::vector<uint64_t> out;
  out.reserve(attempts.size());
  for (const auto& a : attempts) {
    uint64_t next = 0;
    if (a.ended_ms > 0) {
      const auto& list = by_task[a.task.index];
      auto it = std::upper_bound(list.begin(), list.end(),
                                 std::make_pair(a.attempt, INT64_MAX));
      for (; it != list.end(); ++it) {
        if (it->second >= a.ended_ms) {
          next = it->first;
          break;
        }
      }
    }
    out.push_back(next);
  }
  return out;
}

}  // namespace idlepool::coordinator
