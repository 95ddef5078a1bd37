// The service subcommands (issue 17): scale. A service is named by its job id or by its name
// (the newest running job of that name).
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/command.h"

namespace idlepool::cli {
namespace {

// The job `ref` names: a job id, or the newest running job called `ref`.
absl::StatusOr<uint64_t> ResolveService(PoolClient& client, const std::string& ref) {
  uint64_t id = 0;
  if (absl::SimpleAtoi(ref, &id)) return id;
  auto jobs = client.ListJobs();
  if (!jobs.ok()) return jobs.status();
  uint64_t newest = 0;
  for (const v1::JobStatus& j : jobs->jobs()) {
    if (j.name() == ref && j.state() == "running" && j.job() > newest) newest = j.job();
  }
  if (newest == 0) return absl::NotFoundError(absl::StrCat("no running service named '", ref, "'"));
  return newest;
}

}  // namespace

Command AddScaleCommand(CLI::App& app, Common& common) {
  struct Flags {
    std::string service;
    uint32_t replicas = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("scale", "set how many replicas a service runs");
  AddClientOptions(cmd, common);
  cmd->add_option("SERVICE", f->service, "the service's job id or name")->required();
  cmd->add_option("N", f->replicas, "replicas (0 up to its max_replicas)")->required();
  return {cmd, [f, &common] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            auto id = ResolveService(client, f->service);
            if (!id.ok()) return Fail(id.status());
            auto reply = client.Scale(*id, f->replicas);
            if (!reply.ok()) return Fail(reply.status());
            std::printf("service %llu: %u replicas (at most %u)\n",
                        static_cast<unsigned long long>(*id), reply->replicas(),
                        reply->max_replicas());
            return 0;
          }};
}

}  // namespace idlepool::cli
