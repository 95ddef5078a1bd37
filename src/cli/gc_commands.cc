// `idlepool delete JOB [--cancel]` (Jobs.DeleteJob, an access token of role submit) and
// `idlepool gc [--dry-run] [--keep-finished D] [--json]` (Jobs.CollectGarbage over the data
// dir's admin socket): coordinator/collector.h does the work.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "grpcpp/grpcpp.h"
#include "idlepool.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "status_convert.h"
#include "text/units.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

struct GcFlags {
  std::string data_dir;
  std::string keep_finished;
  bool dry_run = false;
  bool json = false;
};

void PrintGc(const v1::GcReply& r, bool json) {
  if (json) {
    nlohmann::json j = {{"dry_run", r.dry_run()},
                        {"jobs", nlohmann::json::array()},
                        {"blob_count", r.blob_count()},
                        {"bytes", r.bytes()},
                        {"blobs", nlohmann::json::array()}};
    for (uint64_t id : r.jobs()) j["jobs"].push_back(id);
    for (const auto& b : r.blobs())
      j["blobs"].push_back({{"sha256", b.sha256()}, {"size", b.size()}});
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  const char* verb = r.dry_run() ? "would delete" : "deleted";
  std::printf("%s %s", verb, Plural(r.jobs_size(), "finished job").c_str());
  for (int i = 0; i < r.jobs_size(); ++i) {
    std::printf("%s%llu", i == 0 ? " (" : ", ", static_cast<unsigned long long>(r.jobs(i)));
  }
  std::printf("%s; %s %s, %llu bytes\n", r.jobs_size() > 0 ? ")" : "",
              r.dry_run() ? "would remove" : "removed", Plural(r.blob_count(), "blob").c_str(),
              static_cast<unsigned long long>(r.bytes()));
  for (const auto& b : r.blobs()) {
    std::printf("  %s  %llu\n", b.sha256().c_str(), static_cast<unsigned long long>(b.size()));
  }
  if (r.blob_count() > static_cast<uint64_t>(r.blobs_size())) {
    std::printf("  ... and %llu more\n",
                static_cast<unsigned long long>(r.blob_count() - r.blobs_size()));
  }
}

int RunGc(const GcFlags& f) {
  if (f.data_dir.empty()) {
    return Fail(absl::InvalidArgumentError(
        "--data-dir (or IDLEPOOL_DATA_DIR): the coordinator's data dir, whose admin.sock "
        "collects"));
  }
  v1::GcRequest req;
  req.set_dry_run(f.dry_run);
  if (!f.keep_finished.empty()) {
    auto d = text::ParseDuration(f.keep_finished);
    if (!d.ok())
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("--keep-finished '", f.keep_finished, "': ", d.status().message())));
    req.set_keep_finished_s(std::chrono::duration_cast<std::chrono::seconds>(*d).count());
  }
  const fs::path sock = fs::path(f.data_dir) / "admin.sock";
  if (!fs::exists(sock)) {
    return Fail(absl::UnavailableError(
        absl::StrCat("no ", sock.string(),
                     ": is the coordinator running with this data dir (on this machine)?")));
  }
  auto stub = v1::Jobs::NewStub(
      grpc::CreateChannel("unix:" + sock.string(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(platform::DeadlineAfter(std::chrono::minutes(10)));
  v1::GcReply reply;
  if (grpc::Status st = stub->CollectGarbage(&ctx, req, &reply); !st.ok()) {
    return Fail(wire::FromGrpc(st, "gc"));
  }
  PrintGc(reply, f.json);
  return 0;
}

}  // namespace

Command AddDeleteCommand(CLI::App& app, Common& common) {
  struct Flags {
    uint64_t job = 0;
    bool cancel = false;
  };
  auto f = std::make_shared<Flags>();
  auto* del = app.add_subcommand(
      "delete", "remove a finished job: its rows, outputs, logs and the blobs nothing else uses");
  AddClientOptions(del, common);
  del->add_option("JOB", f->job, "job id")->required();
  del->add_flag("--cancel", f->cancel, "cancel the job first when it is running or waiting");
  return {del, [f, &common] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            auto r = client.DeleteJob(f->job, f->cancel);
            if (!r.ok()) return Fail(r.status());
            std::printf("job %llu deleted: %s removed, %llu bytes freed\n",
                        static_cast<unsigned long long>(f->job),
                        Plural(r->blobs_removed(), "blob").c_str(),
                        static_cast<unsigned long long>(r->bytes_freed()));
            return 0;
          }};
}

Command AddGcCommand(CLI::App& app) {
  auto f = std::make_shared<GcFlags>();
  auto* gc =
      app.add_subcommand("gc",
                         "collect the coordinator's blobs that nothing references (and, with "
                         "--keep-finished, finished jobs older than that)");
  AddDataDirOption(gc, f->data_dir);
  gc->add_flag("--dry-run", f->dry_run, "say what would go; remove nothing");
  gc->add_option("--keep-finished", f->keep_finished,
                 "also delete finished jobs older than this, e.g. 30d (default: the "
                 "coordinator's --keep-finished)");
  gc->add_flag("--json", f->json, "print the result as JSON");
  return {gc, [f] { return RunGc(*f); }};
}

}  // namespace idlepool::cli
