#include "api/json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace idlepool::api {
namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json TransferJson(const v1::Transfer& t) {
  const uint64_t files = uint64_t{t.cache_hits()} + t.cache_misses();
  return {{"input_bytes", t.input_bytes()},
          {"cached_bytes", t.cached_bytes()},
          {"coordinator_bytes", t.coordinator_bytes()},
          {"peer_bytes", t.peer_bytes()},
          {"output_bytes", t.output_bytes()},
          {"cache_hits", t.cache_hits()},
          {"cache_misses", t.cache_misses()},
          {"cache_hit_rate", files ? static_cast<double>(t.cache_hits()) / files : 0.0}};
}

}  // namespace

std::string WaitingReason(const v1::JobStatus& s) {
  if (s.fits_no_worker()) {
    return "no connected worker has the cpus/memory/gpus (with their memory and API) one task "
           "needs";
  }
  if (s.host_network_refused() > 0) {
    return "needs host network; no worker allows it (" + std::to_string(s.host_network_refused()) +
           (s.host_network_refused() == 1 ? " refuses" : " refuse") + " it in their policy)";
  }
  return "";
}

nlohmann::json JobJson(const v1::JobStatus& s) {
  nlohmann::json j;
  j["job"] = s.job();
  j["name"] = s.name();
  j["user"] = s.user();
  j["priority"] = s.priority();
  j["state"] = s.state();
  j["after"] = std::vector<uint64_t>(s.after().begin(), s.after().end());
  j["reason"] = s.reason();
  j["backoff"] = s.backoff();
  j["tasks"] = s.tasks();
  j["pending"] = s.pending();
  j["running"] = s.running();
  j["succeeded"] = s.succeeded();
  j["failed"] = s.failed();
  j["cancelled"] = s.cancelled();
  j["attempts"] = s.attempts();
  j["failures"] = s.failures();
  j["preemptions"] = s.preemptions();
  j["attempts_lost"] = s.attempts_lost();
  j["suspensions"] = s.suspensions();
  j["lost_seconds"] = static_cast<double>(s.lost_ms()) / 1000.0;
  j["workers_lost"] = s.workers_lost();
  j["submitted_ms"] = s.submitted_ms();
  j["finished_ms"] = s.finished_ms();
  j["fits_no_worker"] = s.fits_no_worker();
  j["host_network"] = s.host_network();
  j["host_network_refused"] = s.host_network_refused();
  const std::string waiting = WaitingReason(s);
  j["waiting"] = waiting.empty() ? nlohmann::json() : nlohmann::json(waiting);
  j["makespan_s"] = s.finished_ms() ? (s.finished_ms() - s.submitted_ms()) / 1000.0 : 0.0;
  j["machine_faults"] = s.machine_faults();
  j["held_off"] = nlohmann::json::array();
  for (const auto& h : s.held_off()) {
    j["held_off"].push_back(
        {{"worker", h.worker()}, {"failures", h.failures()}, {"last_error", h.last_error()}});
  }
  j["profile_key"] = s.profile_key();
  if (s.has_prediction()) {
    j["prediction"] = PredictionJson(s.prediction());
  } else {
    j["prediction"] = nullptr;
  }
  // Actual vs predicted, once the job is over: error = (predicted - actual) / actual.
  if (s.finished_ms() != 0) {
    const double actual = (s.finished_ms() - s.submitted_ms()) / 1000.0;
    j["actual_makespan_s"] = actual;
    // Only a job that ran to the end checks its prediction (a cancelled one stopped early).
    j["prediction_error"] = s.state() == "succeeded" && s.has_prediction() && actual > 0 &&
                                    std::isfinite(s.prediction().makespan_s())
                                ? nlohmann::json((s.prediction().makespan_s() - actual) / actual)
                                : nlohmann::json();
  } else {
    j["actual_makespan_s"] = nullptr;
    j["prediction_error"] = nullptr;
  }
  j["transfer"] = TransferJson(s.transfer());
  j["task_input_bytes"] = s.task_input_bytes();  // the sum of its per-task inputs (issue 18)
  j["failed_tasks"] = nlohmann::json::array();
  for (const auto& f : s.failed_tasks()) j["failed_tasks"].push_back(FailedTaskJson(f));
  j["more_failed_tasks"] = s.more_failed_tasks();
  return j;
}

nlohmann::json FailedTaskJson(const v1::FailedTask& f) {
  return {{"index", f.index()},         {"message", f.message()}, {"attempt", f.attempt()},
          {"exit_code", f.exit_code()}, {"outcome", f.outcome()}, {"worker", f.worker()}};
}

nlohmann::json FailedTasksJson(const v1::FailedTasksPage& p) {
  nlohmann::json j;
  j["job"] = p.job();
  j["total"] = p.total();
  j["failed_tasks"] = nlohmann::json::array();
  for (const auto& f : p.tasks()) j["failed_tasks"].push_back(FailedTaskJson(f));
  j["more"] = p.more();
  if (p.more() && p.tasks_size() > 0) {
    j["next_after"] = p.tasks(p.tasks_size() - 1).index();
  } else {
    j["next_after"] = nullptr;
  }
  return j;
}

nlohmann::json TaskLogJson(const v1::TaskLog& l) {
  nlohmann::json j;
  j["job"] = l.job();
  j["task"] = l.task();
  j["state"] = l.state();
  j["attempts_total"] = l.attempts_total();
  j["attempts"] = nlohmann::json::array();
  for (const auto& a : l.attempts()) j["attempts"].push_back(TimelineAttemptJson(a));
  return j;
}

nlohmann::json JobsJson(const v1::ListJobsReply& r) {
  nlohmann::json j;
  j["jobs"] = nlohmann::json::array();
  for (const auto& x : r.jobs()) j["jobs"].push_back(JobJson(x));
  return j;
}

void AddMeasurementsJson(const v1::WorkerInfo& w, nlohmann::json& j) {
  if (w.has_link()) {
    const auto& l = w.link();
    j["link"] = {{"rtt_ms", l.rtt_ms()},
                 {"down_bytes_per_s", l.down_bytes_per_s()},
                 {"up_bytes_per_s", l.up_bytes_per_s()},
                 {"probe_bytes", l.probe_bytes()},
                 {"measured_ms_ago", l.measured_ms_ago()}};
  } else {
    j["link"] = nullptr;
  }
  j["cpu_score"] = w.cpu_score();
  j["cores"] = w.cores();
  const auto& a = w.availability();
  j["availability"] = {{"up_fraction", a.up_fraction()},   {"mean_up_s", a.mean_up_s()},
                       {"mean_down_s", a.mean_down_s()},   {"up_periods", a.up_periods()},
                       {"down_periods", a.down_periods()}, {"observed_s", a.observed_s()},
                       {"up", a.up()},                     {"since_s", a.since_s()}};
}

nlohmann::json SensorsJson(const v1::WorkerInfo& w) {
  if (!w.has_sensors()) return nullptr;
  const auto& s = w.sensors();
  auto num = [](bool has, double v) { return has ? Num(v) : nlohmann::json(); };
  auto flag = [](bool has, bool v) { return has ? nlohmann::json(v) : nlohmann::json(); };
  return {{"temperature_c", num(s.has_temperature_c(), s.temperature_c())},
          {"battery_percent", num(s.has_battery_percent(), s.battery_percent())},
          {"on_ac_power", flag(s.has_on_ac_power(), s.on_ac_power())},
          {"lid_closed", flag(s.has_lid_closed(), s.lid_closed())},
          {"idle_seconds", num(s.has_idle_seconds(), s.idle_seconds())},
          {"owner_cpu_load", num(s.has_owner_cpu_load(), s.owner_cpu_load())}};
}

// Each GPU it offers (WorkerInfo.gpus), `busy` when a running attempt owns it; live readings are
// null when the worker gave none.
nlohmann::json GpuDevicesJson(const v1::WorkerInfo& w) {
  nlohmann::json out = nlohmann::json::array();
  for (const v1::GpuDevice& g : w.gpus()) {
    const bool busy =
        std::find(w.gpus_busy().begin(), w.gpus_busy().end(), g.index()) != w.gpus_busy().end();
    out.push_back(
        {{"index", g.index()},
         {"vendor", g.vendor()},
         {"name", g.name()},
         {"memory_mb", g.memory_mb()},
         {"uuid", g.uuid()},
         {"apis", std::vector<std::string>(g.apis().begin(), g.apis().end())},
         {"cuda_id", g.cuda_id()},
         {"opencl_id", g.opencl_id()},
         {"busy", busy},
         {"temperature_c", g.has_temperature_c() ? Num(g.temperature_c()) : nlohmann::json()},
         {"utilization", g.has_utilization() ? Num(g.utilization()) : nlohmann::json()},
         {"memory_used_mb", g.has_memory_used_mb() ? nlohmann::json(g.memory_used_mb())
                                                   : nlohmann::json()},
         {"unavailable", g.unavailable()}});
  }
  return out;
}

nlohmann::json WorkerJson(const v1::WorkerInfo& w) {
  nlohmann::json j = {
      {"worker", w.worker()},
      {"hostname", w.hostname()},
      {"state", w.state()},
      {"activity", w.activity()},
      {"slots", w.capacity().cpus()},
      {"gpus", w.capacity().gpus()},
      {"memory_mb", w.capacity().memory_mb()},
      {"slots_busy", w.slots_busy()},
      {"attempts_running", w.attempts_running()},
      {"last_seen_ms_ago", w.last_seen_ms_ago()},
      {"accepting", w.accepting()},
      {"owner_state", w.owner_state()},
      {"owner_reason", w.owner_reason()},
      {"owner_cause", w.owner_cause()},
      {"stalled", w.stalled()},
      {"unhealthy", w.unhealthy()},
      {"unhealthy_s_left", static_cast<double>(w.unhealthy_ms_left()) / 1000.0},
      {"cache_bytes", w.cache_bytes()},
      {"cache_blobs", w.cache_blobs()},
      {"peer_address", w.peer_address()},
      {"sandbox", w.sandbox()},
      {"allow_host_network", w.allow_host_network()},
      {"accept_users", std::vector<std::string>(w.accept_users().begin(), w.accept_users().end())},
      {"refuse_users", std::vector<std::string>(w.refuse_users().begin(), w.refuse_users().end())}};
  j["sensors"] = SensorsJson(w);
  j["gpu_devices"] = GpuDevicesJson(w);
  AddMeasurementsJson(w, j);
  return j;
}

nlohmann::json WorkersJson(const v1::ListWorkersReply& r) {
  nlohmann::json j;
  j["workers"] = nlohmann::json::array();
  for (const auto& w : r.workers()) j["workers"].push_back(WorkerJson(w));
  return j;
}

nlohmann::json PredictionJson(const v1::Prediction& p) {
  nlohmann::json j;
  j["tasks"] = p.tasks();
  j["basis"] = p.basis();
  j["samples"] = p.samples();
  j["made_ms"] = p.made_ms();
  j["makespan_s"] = Num(p.makespan_s());
  j["shared_asset_bytes"] = p.shared_asset_bytes();
  j["output_bytes_per_task"] = p.output_bytes_per_task();
  j["per_task_overhead_s"] = p.per_task_overhead_s();
  j["single"] = {{"worker", p.single_worker()}, {"makespan_s", Num(p.single_makespan_s())}};
  const auto& t = p.terms();
  j["pool"] = {{"workers", p.workers_size()},
               {"makespan_s", Num(p.makespan_s())},
               {"speedup", Num(p.speedup())},
               {"ideal_speedup", Num(p.ideal_speedup())},
               {"efficiency", Num(p.efficiency())},
               {"bottleneck", p.bottleneck()},
               {"bottleneck_fraction", Num(p.bottleneck_fraction())},
               {"terms",
                {{"compute_s", Num(t.compute_s())},
                 {"coordinator_uplink_s", Num(t.coordinator_uplink_s())},
                 {"coordinator_downlink_s", Num(t.coordinator_downlink_s())},
                 {"worker_links_s", Num(t.worker_links_s())},
                 {"churn_s", Num(t.churn_s())},
                 {"tail_s", Num(t.tail_s())}}},
               {"lost_work_s", Num(p.lost_work_s())},
               {"preemptions", Num(p.preemptions())}};
  j["speedup"] = Num(p.speedup());
  j["verdict"] = p.verdict();
  j["subset"] = nlohmann::json::array();
  for (const auto& s : p.subset()) j["subset"].push_back(s);
  j["subset_makespan_s"] = Num(p.subset_makespan_s());
  j["what_if"] = nlohmann::json::array();
  for (const auto& w : p.what_ifs()) {
    j["what_if"].push_back(
        {{"what", w.what()}, {"makespan_s", Num(w.makespan_s())}, {"speedup", Num(w.speedup())}});
  }
  j["workers"] = nlohmann::json::array();
  for (const auto& w : p.workers()) {
    j["workers"].push_back({{"worker", w.worker()},
                            {"slots", w.slots()},
                            {"task_s", Num(w.task_seconds())},
                            {"task_s_source", w.task_s_source()},
                            {"samples", w.samples()},
                            {"cpu_score", w.cpu_score()},
                            {"rtt_ms", w.rtt_ms()},
                            {"down_bytes_per_s", w.down_bytes_per_s()},
                            {"up_bytes_per_s", w.up_bytes_per_s()},
                            {"up_fraction", Num(w.up_fraction())},
                            {"mean_up_s", Num(w.mean_up_s())},
                            {"holds_assets", w.holds_assets()},
                            {"tasks", w.tasks()},
                            {"seconds_per_task", Num(w.seconds_per_task())},
                            {"lost_work_s", Num(w.lost_work_s())}});
  }
  j["assumed"] = nlohmann::json::array();
  for (const auto& a : p.assumed()) j["assumed"].push_back(a);
  return j;
}

nlohmann::json TimelineAttemptJson(const v1::TimelineAttempt& a) {
  const auto& tm = a.timing();
  return {{"attempt", a.attempt()},
          {"task", a.task()},
          {"worker", a.worker()},
          {"outcome", a.outcome()},
          {"started_ms", a.started_ms()},
          {"ended_ms", a.ended_ms()},
          {"exit_code", a.exit_code()},
          {"message", a.message()},
          {"log_tail", a.log_tail()},
          {"suspensions", a.suspensions()},
          {"lost_ms", a.lost_ms()},
          {"transfer", TransferJson(a.transfer())},
          {"timing",
           {{"stage_ms", tm.stage_ms()},
            {"run_ms", tm.run_ms()},
            {"upload_ms", tm.upload_ms()},
            {"resumed", tm.resumed()}}},
          {"next_attempt", a.next_attempt()}};
}

nlohmann::json TimelineJson(const v1::JobTimeline& t) {
  nlohmann::json j;
  j["job"] = JobJson(t.job());
  j["attempts"] = nlohmann::json::array();
  for (const auto& a : t.attempts()) j["attempts"].push_back(TimelineAttemptJson(a));
  j["events"] = nlohmann::json::array();
  for (const auto& e : t.events()) {
    j["events"].push_back({{"worker", e.worker()},
                           {"at_ms", e.at_ms()},
                           {"kind", e.kind()},
                           {"state", e.state()},
                           {"cause", e.cause()},
                           {"reason", e.reason()}});
  }
  j["truncated"] = t.truncated();
  j["now_ms"] = t.now_ms();
  return j;
}

nlohmann::json UsersJson(const v1::ListUsersReply& r) {
  nlohmann::json users = nlohmann::json::array();
  for (const v1::UserStanding& u : r.users()) {
    const v1::UserSettings& s = u.settings();
    users.push_back({{"user", s.user()},
                     {"share", s.share()},
                     {"max_slots", s.max_slots()},
                     {"max_gpus", s.max_gpus()},
                     {"max_queued_tasks", s.max_queued_tasks()},
                     {"max_stored_bytes", s.max_stored_bytes()},
                     {"usage_slot_s", u.usage_slot_s()},
                     {"usage_gpu_s", u.usage_gpu_s()},
                     {"slots", u.slots()},
                     {"gpus", u.gpus()},
                     {"queued_tasks", u.queued_tasks()},
                     {"starving_s", static_cast<double>(u.starving_ms()) / 1000.0}});
  }
  nlohmann::json j{{"users", users}, {"half_life_s", r.half_life_s()}};
  j["fair_preemption_after_s"] = r.fair_preemption_after_s() < 0
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(r.fair_preemption_after_s());
  return j;
}

nlohmann::json UsageJson(const v1::UsageReply& r, const std::string& by) {
  nlohmann::json rows = nlohmann::json::array();
  for (const v1::UsageRow& u : r.rows()) {
    rows.push_back({{"key", u.key()},
                    {"slot_s", u.slot_s()},
                    {"gpu_s", u.gpu_s()},
                    {"attempts", u.attempts()},
                    {"tasks", u.tasks()},
                    {"preempted", u.preempted()},
                    {"bytes_in", u.bytes_in()},
                    {"bytes_out", u.bytes_out()},
                    {"requests", u.requests()},
                    {"tokens", u.tokens()}});
  }
  return {{"since_unix_s", r.since_unix_s()}, {"by", by}, {"rows", rows}};
}

}  // namespace idlepool::api
