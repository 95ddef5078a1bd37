// `idlepool workers`: the pool's workers as a table (workers_table.h: fitted to a terminal, all
// columns with --wide or into a pipe), or JSON.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "api/json.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "cli/workers_table.h"
#include "text/names.h"

namespace idlepool::cli {
namespace {

int ListWorkers(Common& common, bool json, bool wide) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto w = client.ListWorkers();
  if (!w.ok()) return Fail(w.status());
  if (json) {
    std::printf("%s\n", api::WorkersJson(*w).dump().c_str());
    return 0;
  }
  const Terminal term = TerminalFor(STDOUT_FILENO);
  std::printf("%s", WorkersTable(*w, term.fancy && !wide ? term.style.width : 0).c_str());
  for (const auto& x : w->workers()) {
    if (x.unhealthy().empty()) continue;
    std::printf(
        "%s is unhealthy for %llds more (no new work; `idlepool workers reset %s` clears "
        "it): %s\n",
        text::VisibleText(x.worker()).c_str(),
        static_cast<long long>((x.unhealthy_ms_left() + 999) / 1000),
        text::VisibleText(x.worker()).c_str(), text::VisibleText(x.unhealthy()).c_str());
  }
  return 0;
}

}  // namespace

Command AddWorkersCommand(CLI::App& app, Common& common) {
  struct Flags {
    bool json = false, wide = false;
  };
  auto f = std::make_shared<Flags>();
  auto* workers = app.add_subcommand("workers", "list the pool's workers (or revoke or reset one)");
  AddClientOptions(workers, common);
  workers->add_flag("--json", f->json, "print JSON");
  workers->add_flag("--wide", f->wide,
                    "every column, however wide (the default on a terminal fits its width; into "
                    "a pipe every column is printed)");
  struct Revoke {
    std::string name, data_dir;
  };
  auto r = std::make_shared<Revoke>();
  auto* revoke = workers->add_subcommand(
      "revoke", "cut a worker's session at once and refuse its certificate from now on");
  revoke->add_option("name", r->name, "the worker's name")->required();
  AddDataDirOption(revoke, r->data_dir);
  auto* reset = workers->add_subcommand(
      "reset", "clear a worker's failures: no longer unhealthy, held off no job (admin socket)");
  reset->add_option("name", r->name, "the worker's name")->required();
  AddDataDirOption(reset, r->data_dir);
  return {workers, [f, r, revoke, reset, &common] {
            if (*revoke) return RevokeWorker(r->data_dir, r->name);
            if (*reset) return ResetWorker(r->data_dir, r->name);
            return ListWorkers(common, f->json, f->wide);
          }};
}

}  // namespace idlepool::cli
