// The job subcommands: submit, status, wait, fetch, cancel, and frames (a spec check).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/json.h"
#include "cli/command.h"
#include "cli/job_print.h"
#include "cli/progress.h"
#include "cli/transfer_meter.h"
#include "spec/spec.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

struct JobFlags {
  std::string job_file;               // submit
  std::optional<uint64_t> maybe_job;  // status
  uint64_t job = 0;                   // wait, fetch, cancel
  std::string out_dir;                // fetch
  std::vector<std::string> after;     // submit --after (added to the spec's `after`)
  bool json = false, quiet = false;
};

int Submit(const JobFlags& f, Common& common) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  auto spec = spec::ParseJobFile(f.job_file);
  if (!spec.ok()) return BadSpec(spec.status());
  for (const std::string& a : f.after) {
    if (std::find(spec->after.begin(), spec->after.end(), a) == spec->after.end()) {
      spec->after.push_back(a);
    }
  }
  if (absl::Status st = spec::Validate(*spec); !st.ok()) return BadSpec(st);
  PoolClient client = MakeClient(common);
  TransferMeter meter("uploading inputs", "uploaded inputs:");  // a terminal only
  auto reply = client.Submit(*spec, fs::absolute(f.job_file).string(),
                             [&](uint64_t done, uint64_t total) { meter.Update(done, total); });
  meter.Finish();
  if (!reply.ok()) return Fail(reply.status());
  std::printf("%llu\n", static_cast<unsigned long long>(reply->job()));
  std::fprintf(stderr, "submitted job %llu '%s': %s\n",
               static_cast<unsigned long long>(reply->job()), spec->name.c_str(),
               Plural(reply->tasks(), "task").c_str());
  return 0;
}

int ShowJob(PoolClient& client, uint64_t job, bool json) {
  auto s = client.GetJob(job);
  if (!s.ok()) return Fail(s.status());
  if (json) {
    std::printf("%s\n", api::JobJson(*s).dump().c_str());
  } else if (const auto term = TerminalFor(STDOUT_FILENO); term.fancy) {
    // A terminal: the job's bar, the details, the pool's workers by activity.
    std::fputs(JobBlock(*s, WallMs(), term.style).c_str(), stdout);
    PrintJobDetails(*s);
    if (auto w = client.ListWorkers(); w.ok()) {
      std::fputs(WorkerSummary(*w, term.style).c_str(), stdout);
    }
  } else {
    PrintJob(*s);
  }
  return 0;
}

int ShowJobs(PoolClient& client, bool json) {
  auto jobs = client.ListJobs();
  if (!jobs.ok()) return Fail(jobs.status());
  if (json) {
    std::printf("%s\n", api::JobsJson(*jobs).dump().c_str());
    return 0;
  }
  if (const auto term = TerminalFor(STDOUT_FILENO); term.fancy) {
    // A terminal: every job's bar, then the workers (by activity, then one line each).
    if (jobs->jobs().empty()) std::printf("no jobs\n");
    for (const auto& j : jobs->jobs()) {
      std::fputs(JobBlock(j, WallMs(), term.style).c_str(), stdout);
    }
    if (auto w = client.ListWorkers(); w.ok()) {
      std::fputs(WorkerSummary(*w, term.style).c_str(), stdout);
      std::fputs(WorkerLines(*w, term.style).c_str(), stdout);
    }
    return 0;
  }
  std::printf("%-6s %-24s %-12s %-10s %8s %8s %8s %9s\n", "JOB", "NAME", "USER", "STATE", "DONE",
              "TASKS", "FAILED", "ATTEMPTS");
  for (const auto& j : jobs->jobs()) {
    std::printf("%-6llu %-24s %-12s %-10s %8u %8u %8u %9llu\n",
                static_cast<unsigned long long>(j.job()), j.name().c_str(),
                j.user().empty() ? "-" : j.user().c_str(), j.state().c_str(), j.succeeded(),
                j.tasks(), j.failed(), static_cast<unsigned long long>(j.attempts()));
  }
  return 0;
}

int Wait(const JobFlags& f, Common& common) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  Progress progress(f.quiet || f.json, &client);
  auto s = client.Wait(
      f.job, [&](const auto& st) { progress.Update(st); }, progress.every());
  if (!s.ok()) return Fail(s.status());
  if (f.json) {
    std::printf("%s\n", api::JobJson(*s).dump().c_str());
  } else if (progress.live() && TerminalFor(STDOUT_FILENO).fancy) {
    PrintJobDetails(*s);  // under the bar left on the same terminal
  } else {
    PrintJob(*s);
  }
  return s->state() == "succeeded" ? 0 : 1;
}

int Fetch(const JobFlags& f, Common& common) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto status = client.GetJob(f.job);
  if (!status.ok()) return Fail(status.status());
  TransferMeter meter("fetching outputs", "fetched outputs:");  // a terminal only
  auto files = client.Fetch(f.job, f.out_dir,
                            [&](uint64_t done, uint64_t total) { meter.Update(done, total); });
  meter.Finish();
  if (!files.ok()) return Fail(files.status());
  std::printf("%s in %s\n", Plural(files->size(), "file").c_str(), f.out_dir.c_str());
  if (status->state() != "succeeded") {
    std::fprintf(stderr, "note: job %llu is %s: these are the outputs of the %s committed so far\n",
                 static_cast<unsigned long long>(f.job), status->state().c_str(),
                 Plural(status->succeeded(), "task").c_str());
  }
  return 0;
}

}  // namespace

Command AddSubmitCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<JobFlags>();
  auto* submit = app.add_subcommand("submit", "submit a job spec; prints the job id");
  AddClientOptions(submit, common);
  submit->add_option("JOB", f->job_file, "job spec (TOML)")->required();
  submit->add_option("--after", f->after,
                     "run after this job succeeds (a job id, or a name: the newest job of that "
                     "name); repeatable, added to the spec's `after`");
  return {submit, [f, &common] { return Submit(*f, common); }};
}

Command AddStatusCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<JobFlags>();
  auto* status = app.add_subcommand("status", "show one job, or all jobs");
  AddClientOptions(status, common);
  status->add_option("JOB", f->maybe_job, "job id");
  status->add_flag("--json", f->json, "print JSON");
  return {status, [f, &common] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            return f->maybe_job ? ShowJob(client, *f->maybe_job, f->json)
                                : ShowJobs(client, f->json);
          }};
}

Command AddWaitCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<JobFlags>();
  auto* wait = app.add_subcommand("wait", "wait for a job to finish; exit 0 only if it succeeded");
  AddClientOptions(wait, common);
  wait->add_option("JOB", f->job, "job id")->required();
  wait->add_flag("--json", f->json, "print the final status as JSON");
  wait->add_flag("--quiet", f->quiet, "no progress output");
  return {wait, [f, &common] { return Wait(*f, common); }};
}

Command AddFetchCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<JobFlags>();
  auto* fetch = app.add_subcommand("fetch", "download a job's outputs");
  AddClientOptions(fetch, common);
  fetch->add_option("JOB", f->job, "job id")->required();
  fetch->add_option("--out", f->out_dir, "directory to write outputs into")->required();
  return {fetch, [f, &common] { return Fetch(*f, common); }};
}

Command AddCancelCommand(CLI::App& app, Common& common) {
  auto f = std::make_shared<JobFlags>();
  auto* cancel = app.add_subcommand("cancel", "cancel a job");
  AddClientOptions(cancel, common);
  cancel->add_option("JOB", f->job, "job id")->required();
  return {cancel, [f, &common] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            auto st = client.Cancel(f->job);
            if (!st.ok()) return Fail(st.status());
            std::printf("job %llu %s\n", static_cast<unsigned long long>(f->job), st->c_str());
            return 0;
          }};
}

Command AddFramesCommand(CLI::App& app) {
  struct Flags {
    std::string spec;
    uint32_t chunk = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* frames = app.add_subcommand("frames", "expand a frame spec, to check it before use");
  frames->add_option("SPEC", f->spec, "frame spec, e.g. 1-10x2,20")->required();
  frames->add_option("--chunk", f->chunk, "print one chunk (task) per line")
      ->check(CLI::Range(1u, 1'000'000u));
  return {frames, [f] {
            if (f->chunk == 0) {
              auto frames = spec::ParseFrames(f->spec);
              if (!frames.ok()) return Fail(frames.status());
              std::printf("%s\n", spec::JoinFrames(*frames).c_str());
              return 0;
            }
            auto chunks = spec::ChunkFrames(f->spec, f->chunk);
            if (!chunks.ok()) return Fail(chunks.status());
            for (const auto& c : *chunks) std::printf("%s\n", spec::JoinFrames(c.frames).c_str());
            return 0;
          }};
}

}  // namespace idlepool::cli
