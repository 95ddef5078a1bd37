// A shared pool's commands: `idlepool users` (each user's share, quotas, decayed usage, what it
// holds now), `idlepool users set NAME ...` (admin socket: a user's share and quotas) and
// `idlepool priority JOB N` (a job's priority among its user's jobs).
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/json.h"
#include "cli/command.h"
#include "cli/job_print.h"
#include "text/names.h"
#include "text/units.h"

namespace idlepool::cli {
namespace {

// "2026-12-03" for a Unix time (UTC).
std::string DayOf(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

struct SetFlags {
  std::string data_dir;
  std::string user;
  std::optional<double> share;
  std::optional<uint32_t> max_slots;
  std::optional<uint32_t> max_gpus;
  std::optional<uint64_t> max_queued_tasks;
  std::optional<double> max_stored_gib;
};

std::string Limit(uint64_t v) { return v == 0 ? "-" : std::to_string(v); }

int ListUsers(Common& common, bool json) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto r = client.ListUsers();
  if (!r.ok()) return Fail(r.status());
  if (json) {
    std::printf("%s\n", api::UsersJson(*r).dump().c_str());
    return 0;
  }
  std::printf("%-20s %7s %9s %9s %10s %10s %6s %5s %8s %s\n", "USER", "SHARE", "MAX_SLOTS",
              "MAX_GPUS", "MAX_QUEUED", "USAGE_H", "SLOTS", "GPUS", "QUEUED", "STARVING");
  for (const v1::UserStanding& u : r->users()) {
    const v1::UserSettings& s = u.settings();
    const std::string starving =
        u.starving_ms() > 0 ? absl::StrCat(u.starving_ms() / 1000, "s") : std::string("-");
    std::printf("%-20s %7g %9s %9s %10s %10.2f %6u %5u %8llu %s\n",
                s.user().empty() ? "(none)" : s.user().c_str(), s.share(),
                Limit(s.max_slots()).c_str(), Limit(s.max_gpus()).c_str(),
                Limit(s.max_queued_tasks()).c_str(), u.usage_slot_s() / 3600.0, u.slots(), u.gpus(),
                static_cast<unsigned long long>(u.queued_tasks()), starving.c_str());
  }
  std::printf("usage: slot-hours, decayed with a half-life of %s; fair preemption %s\n",
              absl::StrCat(r->half_life_s() / 3600.0, "h").c_str(),
              r->fair_preemption_after_s() < 0
                  ? "off"
                  : absl::StrCat("after ", r->fair_preemption_after_s(), "s").c_str());
  return 0;
}

int RunSetUser(const SetFlags& f) {
  v1::SetUserRequest req;
  req.set_user(f.user);
  if (f.share) req.set_share(*f.share);
  if (f.max_slots) req.set_max_slots(*f.max_slots);
  if (f.max_gpus) req.set_max_gpus(*f.max_gpus);
  if (f.max_queued_tasks) req.set_max_queued_tasks(*f.max_queued_tasks);
  if (f.max_stored_gib) {
    req.set_max_stored_bytes(
        static_cast<uint64_t>(std::llround(*f.max_stored_gib * 1024.0 * 1024 * 1024)));
  }
  return SetUser(f.data_dir, req);
}

int ShowUsage(Common& common, const std::string& since, const std::string& by, bool json) {
  int64_t since_unix_s = 0;
  if (since != "all") {
    auto d = text::ParseDuration(since);
    if (!d.ok()) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("--since '", since, "': ", d.status().message(), " (e.g. 7d, 24h; all)")));
    }
    since_unix_s = std::max<int64_t>(WallMs() / 1000 - d->count() / 1000, 0);
  }
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto r = client.GetUsage(since_unix_s, by);
  if (!r.ok()) return Fail(r.status());
  if (json) {
    std::printf("%s\n", api::UsageJson(*r, by).dump().c_str());
    return 0;
  }
  std::printf("%-24s %10s %10s %9s %8s %9s %10s %10s %9s %10s\n",
              by == "worker" ? "WORKER" : "USER", "SLOT_H", "GPU_H", "ATTEMPTS", "TASKS",
              "PREEMPTED", "IN", "OUT", "REQUESTS", "TOKENS");
  for (const v1::UsageRow& u : r->rows()) {
    std::printf(
        "%-24s %10.2f %10.2f %9llu %8llu %9llu %10s %10s %9llu %10llu\n",
        u.key().empty() ? "(none)" : text::VisibleText(u.key()).c_str(), u.slot_s() / 3600.0,
        u.gpu_s() / 3600.0, static_cast<unsigned long long>(u.attempts()),
        static_cast<unsigned long long>(u.tasks()), static_cast<unsigned long long>(u.preempted()),
        Bytes(u.bytes_in()).c_str(), Bytes(u.bytes_out()).c_str(),
        static_cast<unsigned long long>(u.requests()), static_cast<unsigned long long>(u.tokens()));
  }
  std::printf(
      "since %s UTC (whole days); slot-hours are slots x wall time of ended attempts; requests "
      "and tokens were served by the coordinator's gateway\n",
      r->since_unix_s() == 0 ? "the first day kept" : DayOf(r->since_unix_s()).c_str());
  return 0;
}

}  // namespace

Command AddUsageCommand(CLI::App& app, Common& common) {
  struct Flags {
    std::string since = "7d";
    std::string by = "user";
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "usage", "what the pool's users used, or what each lent machine gave, since a time");
  AddClientOptions(cmd, common);
  cmd->add_option("--since", f->since, "e.g. 7d, 24h, 30d; all: everything kept")
      ->capture_default_str();
  cmd->add_option("--by", f->by, "user or worker")
      ->check(CLI::IsMember({"user", "worker"}))
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print JSON");
  return {cmd, [f, &common] { return ShowUsage(common, f->since, f->by, f->json); }};
}

Command AddUsersCommand(CLI::App& app, Common& common) {
  auto json = std::make_shared<bool>(false);
  auto f = std::make_shared<SetFlags>();
  auto* cmd = app.add_subcommand(
      "users", "list the pool's users: shares, quotas, decayed usage, what each holds now");
  AddClientOptions(cmd, common);
  cmd->add_flag("--json", *json, "print JSON");
  auto* set = cmd->add_subcommand("set", "set a user's share and quotas (admin socket)");
  set->add_option("NAME", f->user, "the user (as `token create --user` names it)")->required();
  set->add_option("--share", f->share,
                  "free slots go to the user of lowest decayed usage / share (default 1)")
      ->check(CLI::PositiveNumber);
  set->add_option("--max-slots", f->max_slots, "slots held at once; 0: no limit");
  set->add_option("--max-gpus", f->max_gpus, "GPUs held at once; 0: no limit");
  set->add_option("--max-queued-tasks", f->max_queued_tasks,
                  "unfinished tasks of its jobs; a submit past it is refused; 0: no limit");
  set->add_option("--max-stored", f->max_stored_gib,
                  "GiB of inputs and outputs kept for its jobs; a submit past it is refused; "
                  "0: no limit")
      ->check(CLI::NonNegativeNumber);
  AddDataDirOption(set, f->data_dir);
  return {cmd, [json, f, set, &common] {
            if (*set) return RunSetUser(*f);
            return ListUsers(common, *json);
          }};
}

Command AddPriorityCommand(CLI::App& app, Common& common) {
  struct Flags {
    uint64_t job = 0;
    int32_t priority = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "priority", "set a running job's priority among its user's jobs (-1000..1000, higher first)");
  AddClientOptions(cmd, common);
  cmd->add_option("JOB", f->job, "the job's id")->required();
  cmd->add_option("N", f->priority, "the priority, -1000..1000")
      ->required()
      ->check(CLI::Range(-1000, 1000));
  return {cmd, [f, &common] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            auto reply = client.SetPriority(f->job, f->priority);
            if (!reply.ok()) return Fail(reply.status());
            std::printf("job %llu: priority %d (was %d)\n", static_cast<unsigned long long>(f->job),
                        f->priority, reply->previous());
            return 0;
          }};
}

}  // namespace idlepool::cli
