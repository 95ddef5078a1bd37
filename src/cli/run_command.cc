// `idlepool run`: a job on this machine, with an in-process coordinator and N local workers.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/job_print.h"
#include "cli/progress.h"
#include "coordinator/coordinator.h"
#include "coordinator/server_identity.h"
#include "platform/harden.h"
#include "platform/process.h"
#include "platform/random.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "text/host_port.h"
#include "trust/credential_store.h"
#include "worker/identity.h"
#include "worker/worker.h"

namespace idlepool::cli {
namespace {

// The caller's login name as a pool user name; "local" when it has none that fits.
std::string LocalUser() {
  const passwd* pw = ::getpwuid(::getuid());
  if (pw != nullptr && pw->pw_name != nullptr && trust::IsUserName(pw->pw_name)) return pw->pw_name;
  return "local";
}

namespace fs = std::filesystem;

struct RunFlags {
  std::string job_file, out_dir, data_dir, http;
  uint32_t local_workers = 2;
  bool json = false;
  bool temp_dir = false;  // data_dir was made here and is removed at the end
};

// Your own jobs on your own machine find programs where you do: the tasks' PATH is the absolute
// dirs of yours (a lent machine's worker gives its owner's [sandbox] path instead).
std::string YourPath() {
  const char* path = std::getenv("PATH");
  std::string out;
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "", ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    if (!out.empty()) out += ':';
    out.append(dir.data(), dir.size());
  }
  return out.empty() ? std::string(owner::kDefaultTaskPath) : out;
}

// The local pool: a coordinator and its workers, each on its own thread.
struct LocalPool {
  std::unique_ptr<coordinator::Coordinator> coordinator;
  std::vector<std::unique_ptr<worker::Worker>> workers;
  std::vector<std::thread> threads;
  std::string address;
  std::string token;  // an access token (role submit) for run's own client
};

// Local worker `i`, joined to the pool (the normal join: pinned CA, its own key and
// certificate) with `join_token`, or with the identity an earlier run with --data-dir kept.
absl::StatusOr<worker::Options> LocalWorker(const RunFlags& f, const LocalPool& pool,
                                            const std::string& join_token, uint32_t i) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  worker::Options o;
  o.coordinator = pool.address;
  o.name = absl::StrCat("local-", i + 1);
  o.slots = std::max(1u, cores / f.local_workers);
  o.work_dir = absl::StrCat(f.data_dir, "/worker-", i + 1);
  o.identity_dir = worker::IdentityDir(o.work_dir);
  auto kept = worker::LoadIdentity(o.identity_dir);
  if (!kept.ok()) return kept.status();
  if (!kept->has_value()) {
    auto joined = worker::Join(pool.address, join_token, o.name, o.identity_dir);
    if (!joined.ok()) return joined.status();
  }
  // Your own job on your own machine: your typing and the charger do not stop it (the lid,
  // sleep and heat rules still do); Ctrl-C gives tasks 1 s to save a checkpoint.
  owner::MakeDedicated(&o.policy);
  o.policy.task_path = YourPath();
  // Your own jobs on your own machine: sandboxed where the machine allows it, else with a
  // warning (a lent machine's worker refuses instead).
  o.sandbox_optional = true;
  o.policy.on_battery = owner::BatteryAction::kRun;
  o.policy.vacate_grace_s = 1;
  o.probe = false;  // a loopback link tells the planner nothing
  return o;
}

absl::Status StartPool(const RunFlags& f, LocalPool* pool) {
  coordinator::Options ro;
  ro.listen = "127.0.0.1:0";
  ro.http = f.http;
  ro.data_dir = f.data_dir + "/coordinator";
  auto c = coordinator::Coordinator::Start(ro);
  if (!c.ok()) return c.status();
  pool->coordinator = *std::move(c);
  pool->address = absl::StrCat("127.0.0.1:", pool->coordinator->port());
  // Its jobs are the caller's: the token is named (so acts for) the local login name.
  auto submit = pool->coordinator->CreateToken("submit", 86400, -1, LocalUser());
  if (!submit.ok()) return submit.status();
  pool->token = *submit;
  if (pool->coordinator->http_port() != 0) {
    std::fprintf(stderr,
                 "idlepool: dashboard at https://%s/ (log in with an access token: "
                 "`idlepool token create --role read --data-dir %s`)\n",
                 text::JoinHostPort(coordinator::AdvertisedHost(pool->coordinator->server_names(),
                                                                pool->coordinator->http_host()),
                                    pool->coordinator->http_port())
                     .c_str(),
                 ro.data_dir.c_str());
  }
  auto join = pool->coordinator->CreateToken("worker", 600, f.local_workers, "");
  if (!join.ok()) return join.status();
  for (uint32_t i = 0; i < f.local_workers; ++i) {
    auto o = LocalWorker(f, *pool, *join, i);
    if (!o.ok()) return o.status();
    pool->workers.push_back(std::make_unique<worker::Worker>(*std::move(o)));
    pool->threads.emplace_back([w = pool->workers.back().get()] { (void)w->Run(); });
  }
  return absl::OkStatus();
}

void RemoveDataDir(const RunFlags& f) {
  if (!f.temp_dir) return;
  std::error_code ec;
  fs::remove_all(f.data_dir, ec);
}

// Submits, waits with progress, fetches; the exit code.
int SubmitWaitFetch(const RunFlags& f, const spec::JobSpec& spec, LocalPool& pool) {
  PoolClient client(pool.address, pool.token, pool.coordinator->ca_pem());
  auto reply = client.Submit(spec, fs::absolute(f.job_file).string());
  if (!reply.ok()) return Fail(reply.status());
  Progress progress(f.json, &client);
  auto s = client.Wait(
      reply->job(), [&](const auto& st) { progress.Update(st); }, progress.every());
  if (!s.ok()) return Fail(s.status());
  auto files = client.Fetch(reply->job(), f.out_dir);
  if (!files.ok()) return Fail(files.status());
  if (f.json) {
    std::printf("%s\n", RunSummary(*s, *files, f.out_dir).dump().c_str());
  } else {
    PrintJob(*s, Hints::kNone);  // `idlepool logs` cannot reach this pool once run exits
    PrintStderrTails(client, *s);
    std::printf("  %s in %s\n", Plural(files->size(), "output file").c_str(), f.out_dir.c_str());
  }
  return s->state() == "succeeded" ? 0 : 1;
}

int Run(RunFlags& f, CLI::App& app) {
  platform::BlockTerminationSignals();
  // The tasks get their own environment (worker/task_env.h); one running unsandboxed as this user
  // does not find this process's in /proc either.
  platform::HideInitialEnvironment();
  auto spec = spec::ParseJobFile(f.job_file);
  if (!spec.ok()) return BadSpec(spec.status());
  f.temp_dir = f.data_dir.empty();
  if (f.temp_dir) {
    f.data_dir = (fs::temp_directory_path() / ("idlepool-run-" + platform::RandomHex(6))).string();
  }
  // The embedded pool is an implementation detail of `run`: only warnings unless asked.
  if (app.get_option("--log-level")->count() == 0) spdlog::set_level(spdlog::level::warn);
  LocalPool pool;
  if (auto st = StartPool(f, &pool); !st.ok()) return Fail(st);
  // Ctrl-C / SIGTERM: the tasks run in their own process groups, so they would outlive us;
  // vacate the workers (which kills them), stop the pool and clean up before exiting.
  std::thread([&] {
    int sig = platform::WaitForTerminationSignal();
    RestoreTerminal();  // a progress bar may have hidden the cursor
    std::fprintf(stderr, "\nidlepool: signal %d: stopping the local pool\n", sig);
    for (auto& w : pool.workers) w->Stop();
    pool.coordinator->Shutdown();
    RemoveDataDir(f);
    std::_Exit(130);
  }).detach();
  const int rc = SubmitWaitFetch(f, *spec, pool);
  for (auto& w : pool.workers) w->Stop();
  for (auto& t : pool.threads) t.join();
  pool.coordinator->Shutdown();
  RemoveDataDir(f);
  return rc;
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  auto* run = app.add_subcommand(
      "run", "run a job on this machine: coordinator and N workers in one process");
  run->add_option("JOB", f->job_file, "job spec (TOML)")->required();
  run->add_option("--local-workers", f->local_workers, "number of local workers")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  run->add_option("--out", f->out_dir, "directory for the outputs")->required();
  run->add_option("--data-dir", f->data_dir, "keep the pool state here (default: temporary)");
  run->add_flag("--json", f->json, "print one final JSON object");
  run->add_option("--http", f->http,
                  "serve the dashboard of the local pool at HOST:PORT or PORT (default: none)");
  return {run, [f, &app] { return Run(*f, app); }};
}

}  // namespace idlepool::cli
