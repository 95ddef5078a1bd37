// The command that reads a job's failures one page at a time: `idlepool failures JOB` (its
// failed tasks, 100 per page, after a cursor; `idlepool logs` shows one task's output,
// logs_command.cc). A job's status lists only its first 20 failed tasks (issue 21).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "api/json.h"
#include "cli/command.h"
#include "cli/job_print.h"
#include "text/utf8.h"

namespace idlepool::cli {
namespace {

struct FailureFlags {
  uint64_t job = 0;
  std::optional<uint32_t> after;
  uint32_t limit = 0;
  bool all = false, json = false;
};

// One page, or every page with --all (one JSON object per page).
int ShowFailures(const FailureFlags& f, Common& common) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  std::optional<uint32_t> after = f.after;
  while (true) {
    auto page = client.ListFailedTasks(f.job, after, f.limit);
    if (!page.ok()) return Fail(page.status());
    if (f.json) {
      std::printf("%s\n", api::FailedTasksJson(*page).dump().c_str());
    } else {
      PrintFailedTasks(page->tasks());
    }
    if (!page->more() || page->tasks_size() == 0) {
      if (!f.json && page->total() == 0)
        std::printf("job %llu has no failed tasks\n", static_cast<unsigned long long>(f.job));
      return 0;
    }
    after = page->tasks(page->tasks_size() - 1).index();
    if (!f.all) {
      if (!f.json) {
        std::printf("  more: idlepool failures %llu --after %u\n",
                    static_cast<unsigned long long>(f.job), *after);
      }
      return 0;
    }
  }
}

}  // namespace

Command AddFailuresCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<FailureFlags>();
  auto* sub = app.add_subcommand("failures", "list a job's failed tasks, a page at a time");
  AddClientOptions(sub, common);
  sub->add_option("JOB", f->job, "job id")->required();
  sub->add_option("--after", f->after, "only tasks after this task index (the next page's cursor)");
  sub->add_option("--limit", f->limit, "tasks per page (default 100, at most 1000)")
      ->check(CLI::Range(1u, 1000u));
  sub->add_flag("--all", f->all, "every page, one after the other");
  sub->add_flag("--json", f->json, "print JSON (one object per page)");
  return {sub, [f, &common] { return ShowFailures(*f, common); }};
}

}  // namespace idlepool::cli
