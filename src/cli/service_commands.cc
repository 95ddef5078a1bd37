// The service subcommands (issue 17): services, scale. A service is named by its job id or by its
// name (the newest running job of that name).
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/json.h"
#include "cli/client.h"
#include "cli/command.h"
#include "text/names.h"

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

// A time to first token in ms for a table ("-" when no answer came in the window).
std::string Ms(const v1::TimeToFirstToken& t, double ms) {
  if (t.answers() == 0) return "-";
  char out[32];
  std::snprintf(out, sizeof out, ms < 10 ? "%.2f" : "%.0f", ms);
  return out;
}

int ListServices(Common& common, bool json) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto r = client.ListServices();
  if (!r.ok()) return Fail(r.status());
  if (json) {
    std::printf("%s\n", api::ServicesJson(*r).dump().c_str());
    return 0;
  }
  std::printf("gateway: %s\n", r->gateway().empty() ? "off" : r->gateway().c_str());
  if (r->services().empty()) std::printf("no services running\n");
  for (const v1::ServiceStatus& s : r->services()) {
    const std::string model = s.spec().model().empty() ? "" : " model " + s.spec().model();
    std::printf(
        "\nservice %llu %s (%s%s): %u replicas wanted (%u..%u), queue %u, %llu requests, "
        "%llu errors\n",
        static_cast<unsigned long long>(s.job()), text::VisibleText(s.name()).c_str(),
        s.spec().protocol().c_str(), text::VisibleText(model).c_str(), s.replicas(),
        s.spec().min_replicas(), s.spec().max_replicas(), s.queue_length(),
        static_cast<unsigned long long>(s.requests()), static_cast<unsigned long long>(s.errors()));
    if (s.ttft().answers() > 0) {
      std::printf("  time to first token (last 60 s, %u answers): p50 %s ms, p95 %s ms\n",
                  s.ttft().answers(), Ms(s.ttft(), s.ttft().p50_ms()).c_str(),
                  Ms(s.ttft(), s.ttft().p95_ms()).c_str());
    }
    std::printf("  %-7s %-10s %-20s %-9s %9s %9s %7s %8s %11s %11s\n", "REPLICA", "ATTEMPT",
                "WORKER", "STATE", "IN_FLIGHT", "REQUESTS", "ERRORS", "STARTS", "TTFT_P50_MS",
                "TTFT_P95_MS");
    for (const v1::ReplicaStatus& x : s.replica_status()) {
      const std::string attempt = x.attempt() == 0 ? "-" : std::to_string(x.attempt());
      const std::string worker = x.worker().empty() ? "-" : text::VisibleText(x.worker());
      std::printf("  %-7u %-10s %-20s %-9s %9u %9llu %7llu %8u %11s %11s\n", x.replica(),
                  attempt.c_str(), worker.c_str(), x.state().c_str(), x.in_flight(),
                  static_cast<unsigned long long>(x.requests()),
                  static_cast<unsigned long long>(x.errors()), x.attempts(),
                  Ms(x.ttft(), x.ttft().p50_ms()).c_str(), Ms(x.ttft(), x.ttft().p95_ms()).c_str());
    }
  }
  return 0;
}

}  // namespace

Command AddServicesCommand(CLI::App& app, Common& common) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("services", "list the running services and their replicas");
  AddClientOptions(cmd, common);
  cmd->add_flag("--json", *json, "print JSON");
  return {cmd, [json, &common] { return ListServices(common, *json); }};
}

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
