// `idlepool logs JOB [TASK] [--attempt N] [-f]` (issue 18): a task's output, kept or followed.
// The output goes to stdout as the task wrote it (so `idlepool logs 3 0 > out.txt` captures only
// it), the lines about attempts ("attempt 12 started on w1", "attempt 12 ended: preempted",
// gaps) to stderr. Exit 0 when the task ended succeeded, 1 otherwise (still running, failed,
// cancelled, or an error), 2 for bad input. `--json` keeps the summary of the task's newest
// attempts with their log tails (Jobs.GetTaskLog).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "api/json.h"
#include "cli/command.h"
#include "text/utf8.h"

namespace idlepool::cli {
namespace {

struct LogsFlags {
  uint64_t job = 0;
  std::optional<uint32_t> task;
  uint64_t attempt = 0;
  bool follow = false;
  bool json = false;
};

int ShowLogsJson(const LogsFlags& f, PoolClient& client) {
  auto log = client.GetTaskLog(f.job, f.task.value_or(0));
  if (!log.ok()) return Fail(log.status());
  std::printf("%s\n", api::TaskLogJson(*log).dump().c_str());
  return 0;
}

int ShowLogs(const LogsFlags& f, Common& common) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  if (f.json) return ShowLogsJson(f, client);
  v1::LogRequest req;
  req.set_job(f.job);
  if (f.task) req.set_task(*f.task);
  req.set_attempt(f.attempt);
  req.set_follow(f.follow);
  std::optional<uint32_t> task = f.task;
  // Byte for byte into a file or pipe; on a terminal a task's control characters are shown
  // replaced, as everywhere idlepool prints a task's text (no escape sequence reaches it).
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  absl::Status st = client.TaskLogs(req, [&](const v1::LogData& d) {
    task = d.task();
    if (!d.event().empty()) {
      std::fprintf(stderr, "idlepool: %s\n", text::PrintableText(d.event()).c_str());
    }
    if (!d.data().empty()) {
      if (terminal) {
        const std::string shown = text::PrintableText(d.data(), /*keep_newlines=*/true);
        std::fwrite(shown.data(), 1, shown.size(), stdout);
      } else {
        std::fwrite(d.data().data(), 1, d.data().size(), stdout);
      }
      if (f.follow) std::fflush(stdout);
    }
  });
  std::fflush(stdout);
  if (!st.ok()) return Fail(st);
  if (!task) return 1;
  auto log = client.GetTaskLog(f.job, *task);
  if (!log.ok()) return Fail(log.status());
  return log->state() == "succeeded" ? 0 : 1;
}

}  // namespace

Command AddLogsCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<LogsFlags>();
  auto* sub = app.add_subcommand(
      "logs", "print a task's output (stdout and stderr); -f follows it while it runs");
  AddClientOptions(sub, common);
  sub->add_option("JOB", f->job, "job id")->required();
  sub->add_option("TASK", f->task, "task index (may be left out for a job of one task)");
  sub->add_option("--attempt", f->attempt, "this attempt's kept output (default: the newest)");
  sub->add_flag("-f,--follow", f->follow,
                "follow the task's output as it runs, across its next attempts, until it ends");
  sub->add_flag("--json", f->json,
                "print the task's newest attempts with their log tails, as JSON");
  sub->footer(
      "Output goes to stdout, lines about attempts to stderr. Exit code 0 when the task "
      "succeeded, 1 otherwise.");
  return {sub, [f, &common] { return ShowLogs(*f, common); }};
}

}  // namespace idlepool::cli
