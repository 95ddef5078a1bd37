// idlepool: one binary for the coordinator, the worker and every client subcommand.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/json.h"
#include "cli/client.h"
#include "cli/plan_command.h"
#include "cli/log_format.h"
#include "cli/plan_job.h"
#include "cli/profile_command.h"
#include "cli/progress.h"
#include "cli/report_command.h"
#include "cli/resources_command.h"
#include "cli/timeline_command.h"
#include "cli/sim_command.h"
#include "coordinator/coordinator.h"
#include "nlohmann/json.hpp"
#include "platform/clock.h"
#include "platform/gpu.h"
#include "platform/gpu_probe.h"
#include "platform/memory.h"
#include "platform/process.h"
#include "platform/random.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "spec/spec.h"
#include "worker/owner_policy_config.h"
#include "worker/blob_cache.h"
#include "worker/measure.h"
#include "worker/worker.h"

namespace fs = std::filesystem;
using idlepool::cli::PoolClient;
using idlepool::api::JobJson;
using idlepool::api::WorkersJson;

namespace {

const char* kVersion = IDLEPOOL_VERSION;

// Exit codes: 0 success, 1 a failure (job failed, coordinator unreachable...), 2 bad input
// (the command line, a job spec).
int Fail(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int BadSpec(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return 2;
}

std::string Plural(uint64_t n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

std::string Seconds(double s) {
  return s < 10 ? absl::StrFormat("%.3f s", s) : absl::StrFormat("%.1f s", s);
}

// Binary units, as `ls -h` and `du -h` print them.
std::string Bytes(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, units[u]);
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// "42s", "9m", "2h10m", "3d4h".
std::string ShortDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) {
    return s % 3600 >= 60 ? absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m")
                          : absl::StrCat(s / 3600, "h");
  }
  return absl::StrCat(s / 86400, "d", (s % 86400) / 3600, "h");
}

// "1.2MB/s", "112MB/s", "850kB/s" (10^3 multiples, as network rates are quoted).
std::string ShortRate(uint64_t bytes_per_s) {
  const double b = static_cast<double>(bytes_per_s);
  char buf[32];
  if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.3gGB/s", b / 1e9);
  else if (b >= 1e6) std::snprintf(buf, sizeof buf, "%.3gMB/s", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3gkB/s", b / 1e3);
  return buf;
}

// The table's LINK column: "0.4ms 112MB/s↓ 98MB/s↑", "-" when never measured.
std::string LinkText(const idlepool::v1::WorkerInfo& w) {
  if (!w.has_link()) return "-";
  char rtt[32];
  std::snprintf(rtt, sizeof rtt, "%.3gms", w.link().rtt_ms());
  return absl::StrCat(rtt, " ", ShortRate(w.link().down_bytes_per_s()), "↓ ",
                      ShortRate(w.link().up_bytes_per_s()), "↑");
}

// The table's UP column: "93% up 2h10m/down 9m": the up fraction, then the mean up and down
// periods ("(no end seen)" when none of them ended: the time so far, a lower bound).
// The GPUS column: how many devices it offers and each one's memory ("2: 40G,8G"), "-" for none.
std::string GpusText(const idlepool::v1::WorkerInfo& w) {
  if (w.gpus_size() == 0) return "-";
  std::string out = std::to_string(w.gpus_size()) + ":";
  for (int i = 0; i < w.gpus_size(); ++i) {
    const uint64_t mb = w.gpus(i).memory_mb();
    char one[32];
    if (mb >= 1024) {
      std::snprintf(one, sizeof one, "%.0fG", static_cast<double>(mb) / 1024.0);
    } else {
      std::snprintf(one, sizeof one, "%lluM", static_cast<unsigned long long>(mb));
    }
    out += (i == 0 ? " " : ",") + std::string(one);
  }
  return out;
}

std::string UpText(const idlepool::v1::WorkerInfo& w) {
  const auto& a = w.availability();
  if (a.observed_s() <= 0) return "-";
  auto mean = [](double mean_s, uint32_t ended, double total_s) -> std::string {
    if (total_s <= 0) return "-";
    return ended > 0 ? ShortDuration(mean_s) : ShortDuration(mean_s) + " (no end seen)";
  };
  const double up_s = a.up_fraction() * a.observed_s(), down_s = a.observed_s() - up_s;
  return absl::StrCat(static_cast<int>(a.up_fraction() * 100 + 0.5), "% up ",
                      mean(a.mean_up_s(), a.up_periods(), up_s), "/down ",
                      mean(a.mean_down_s(), a.down_periods(), down_s));
}

// `s` padded with spaces to `width` columns (UTF-8: one column per code point).
std::string Pad(const std::string& s, size_t width) {
  size_t cols = 0;
  for (unsigned char c : s) cols += (c & 0xC0) != 0x80;
  return cols >= width ? s : s + std::string(width - cols, ' ');
}

// Wall clock, Unix ms (for the ETA on a terminal).
int64_t WallMs() { return idlepool::platform::SystemClock().WallMs(); }

double MakespanSeconds(const idlepool::v1::JobStatus& s) {
  if (s.finished_ms() == 0) return 0;
  return static_cast<double>(s.finished_ms() - s.submitted_ms()) / 1000.0;
}

// Progress for `wait` and `run`: on a terminal (stderr) the job's bar and the pool's workers by
// activity, redrawn in place and left on screen at the end; otherwise one line per change.
class Progress {
 public:
  // `client` (may be null: no worker line) is asked for the workers at most once a second.
  Progress(bool quiet, PoolClient* client)
      : quiet_(quiet), client_(client), term_(idlepool::cli::TerminalFor(STDERR_FILENO)) {
    if (!quiet_ && term_.fancy) live_.emplace(stderr);
  }
  // Whether the bar is drawn (and left on screen), so the caller can skip repeating its header.
  bool live() const { return live_.has_value(); }
  // How often the waiter should call Update even when the job did not change (ETA, workers).
  std::chrono::milliseconds every() const {
    return live_ ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0);
  }
  void Update(const idlepool::v1::JobStatus& s) {
    if (quiet_) return;
    if (live_) {
      const auto& clock = idlepool::platform::SystemClock();
      const bool last = s.state() != "running";  // the block left on screen: fresh workers
      if (client_ != nullptr &&
          (!workers_ || last || clock.Now() - workers_at_ >= std::chrono::seconds(1))) {
        auto w = client_->ListWorkers();
        if (w.ok()) workers_ = *std::move(w);
        workers_at_ = clock.Now();
      }
      const auto style = idlepool::cli::TerminalFor(STDERR_FILENO).style;  // follows resizes
      std::string block = idlepool::cli::JobBlock(s, clock.WallMs(), style);
      if (workers_) block += idlepool::cli::WorkerSummary(*workers_, style);
      live_->Draw(block);
      if (last) live_->Finish();
      return;
    }
    std::fprintf(stderr, "job %llu: %u/%u succeeded, %u running, %u pending, %u failed, %s, %s\n",
                 static_cast<unsigned long long>(s.job()), s.succeeded(), s.tasks(), s.running(),
                 s.pending(), s.failed(), Plural(s.attempts(), "attempt").c_str(),
                 s.state().c_str());
    std::fflush(stderr);
  }

 private:
  bool quiet_;
  PoolClient* client_;
  idlepool::cli::Terminal term_;
  std::optional<idlepool::cli::LiveDisplay> live_;
  std::optional<idlepool::v1::ListWorkersReply> workers_;
  idlepool::core::MonoTime workers_at_{};
};

// The first two lines of PrintJob (its header, which a terminal's JobBlock replaces).
void PrintJobHeader(const idlepool::v1::JobStatus& s) {
  std::printf("job %llu  %s  %s\n", static_cast<unsigned long long>(s.job()), s.name().c_str(),
              s.state().c_str());
  std::printf("  tasks %u: %u succeeded, %u running, %u pending, %u failed, %u cancelled\n",
              s.tasks(), s.succeeded(), s.running(), s.pending(), s.failed(), s.cancelled());
}

void PrintJobDetails(const idlepool::v1::JobStatus& s) {
  std::printf("  attempts %llu, failures %llu, preemptions %llu, lost %llu (workers lost %u)\n",
              static_cast<unsigned long long>(s.attempts()),
              static_cast<unsigned long long>(s.failures()),
              static_cast<unsigned long long>(s.preemptions()),
              static_cast<unsigned long long>(s.attempts_lost()), s.workers_lost());
  std::printf("  owners: %llu suspensions, %s of work lost to preemptions and lost workers\n",
              static_cast<unsigned long long>(s.suspensions()),
              Seconds(static_cast<double>(s.lost_ms()) / 1000.0).c_str());
  if (s.machine_faults() != 0) {
    std::printf("  machine faults %llu (disk full; never counted against the tasks)\n",
                static_cast<unsigned long long>(s.machine_faults()));
  }
  {
    const auto& t = s.transfer();
    const uint64_t files = uint64_t{t.cache_hits()} + t.cache_misses();
    std::printf("  data: %s staged (%s from worker caches, %s from the coordinator, %s from "
                "peers), %s uploaded; cache hits %u/%llu files%s\n",
                Bytes(t.input_bytes()).c_str(), Bytes(t.cached_bytes()).c_str(),
                Bytes(t.coordinator_bytes()).c_str(), Bytes(t.peer_bytes()).c_str(),
                Bytes(t.output_bytes()).c_str(), t.cache_hits(),
                static_cast<unsigned long long>(files),
                files ? absl::StrFormat(" (%.0f%%)", 100.0 * t.cache_hits() / files).c_str() : "");
  }
  if (s.finished_ms() != 0) std::printf("  makespan %s\n", Seconds(MakespanSeconds(s)).c_str());
  if (s.has_prediction()) {
    const auto& p = s.prediction();
    std::string check;
    if (s.state() == "succeeded" && MakespanSeconds(s) > 0 && std::isfinite(p.makespan_s())) {
      check = absl::StrFormat(": %+.1f%% vs the actual", 100.0 * (p.makespan_s() - MakespanSeconds(s)) /
                                                        MakespanSeconds(s));
    }
    std::printf("  predicted makespan %s on %d workers (single machine %s; %s)%s\n",
                std::isfinite(p.makespan_s()) ? Seconds(p.makespan_s()).c_str() : "never",
                p.workers_size(),
                std::isfinite(p.single_makespan_s()) ? Seconds(p.single_makespan_s()).c_str() : "-",
                p.basis().c_str(), check.c_str());
  }
  if (s.fits_no_worker()) {
    std::printf("  waiting: no connected worker has the cpus/memory/gpus (with their memory and "
                "API) one task needs\n");
  }
  for (const auto& f : s.failed_tasks()) {
    // The message's first line says why; the rest is the tail of the task's stderr.
    // Task output: printed, but never as terminal escape sequences.
    std::string msg = idlepool::spec::PrintableText(f.message(), /*keep_newlines=*/true);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    std::string indented;
    for (char c : msg) {
      indented += c;
      if (c == '\n') indented += "      | ";
    }
    std::printf("  task %u failed: %s\n", f.index(), indented.c_str());
  }
}

void PrintJob(const idlepool::v1::JobStatus& s) {
  PrintJobHeader(s);
  PrintJobDetails(s);
}

nlohmann::json RunSummary(const idlepool::v1::JobStatus& s, const std::vector<std::string>& out,
                          const std::string& out_dir) {
  nlohmann::json j = JobJson(s);
  j.erase("job");
  j["job_id"] = s.job();
  j["out_dir"] = out_dir;
  j["outputs"] = out;
  return j;
}

struct Common {
  std::string coordinator;
  std::string token;
  std::string log_level = "info";
  std::string log_format = "text";
};

PoolClient MakeClient(const Common& c) { return PoolClient(c.coordinator, c.token); }

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == idlepool::platform::kGpuProbeSubcommand) {
    idlepool::platform::GpuProbeMain(argc, argv);  // the worker's discovery child; exits
  }
  idlepool::platform::IgnoreSigpipe();
  CLI::App app{"idlepool: pool the idle machines of an office, lab or home for embarrassingly "
               "parallel work"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  // Options of the app itself (--log-level, --log-format) may come after the subcommand too:
  // subcommands created below inherit this and pass options they do not know up to the app.
  app.fallthrough();
  Common common;
  common.coordinator = EnvOr("IDLEPOOL_COORDINATOR", "127.0.0.1:7878");
  common.token = EnvOr("IDLEPOOL_TOKEN", "");
  app.add_option("--log-level", common.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--log-format", common.log_format,
                 "text, or json: one JSON object per line (ts, level, logger, thread, msg)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  std::string token_file;
  auto add_client_opts = [&](CLI::App* sub) {
    sub->add_option("--coordinator", common.coordinator,
                    "coordinator address host:port (env IDLEPOOL_COORDINATOR)")
        ->capture_default_str();
    sub->add_option("--token", common.token,
                    "pool token (env IDLEPOOL_TOKEN; visible to other users in `ps`, prefer the "
                    "environment or --token-file)");
    sub->add_option("--token-file", token_file, "read the pool token from this file")
        ->check(CLI::ExistingFile);
  };

  // coordinator
  idlepool::coordinator::Options copts;
  copts.data_dir = "";
  int64_t lease_ms = 5000, heartbeat_ms = 1000;
  auto* coord = app.add_subcommand("coordinator", "run the coordinator");
  coord->add_option("--listen", copts.listen, "address to listen on (host:port)")
      ->capture_default_str();
  coord->add_option("--data-dir", copts.data_dir, "store, blobs and pool token")->required();
  coord->add_option("--lease-timeout-ms", lease_ms, "a worker silent this long is lost")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  coord->add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval suggested to workers")
      ->capture_default_str();
  std::string coord_http = "127.0.0.1:7879";
  auto* coord_http_opt = coord->add_option(
      "--http", coord_http,
      "dashboard, JSON API and /metrics: HOST:PORT or PORT (host 127.0.0.1), port 0 = a free "
      "one, off = none (the default address, when taken, only warns)");
  coord_http_opt->capture_default_str();

  // worker
  idlepool::worker::Options wopts;
  int64_t worker_hb_ms = 1000;
  auto* work = app.add_subcommand("worker", "lend this machine to a pool");
  add_client_opts(work);
  work->add_option("--slots", wopts.slots, "CPU slots offered (default: number of cores)");
  work->add_option("--work-dir", wopts.work_dir, "task dirs, logs and the blob cache (required)");
  std::string worker_config;
  bool print_default_config = false, dedicated = false, normal_priority = false;
  work->add_option("--config", worker_config,
                   "owner policy file (TOML, table [owner]; see --print-default-config)");
  work->add_flag("--print-default-config", print_default_config,
                 "print the default owner policy, with comments, and exit");
  work->add_option("--sensors-dir", wopts.sensors_dir,
                   "read the owner's sensors from one-value files in DIR instead of the "
                   "machine's (idle_seconds, on_ac_power, battery_percent, temperature_c, "
                   "lid_closed, owner_cpu_load, sleep_imminent)");
  work->add_flag("--dedicated", dedicated,
                 "a machine lent full time: neither owner input nor other load waits for or "
                 "suspends work (start_idle_minutes = 0, max_owner_cpu_load = 1); battery, lid, "
                 "sleep, heat and window rules still hold");
  work->add_flag("--normal-priority", normal_priority,
                 "run tasks at normal CPU and I/O priority (default: SCHED_IDLE, nice 19, idle "
                 "I/O)");
  work->add_option("--name", wopts.name, "worker name, unique in the pool (default: host name)");
  work->add_option("--memory-mb", wopts.memory_mb, "memory offered (default: not stated)");
  std::string gpus_choice = "all";
  bool opencl_cpu = false, print_resources = false, resources_json = false;
  work->add_option("--gpus", gpus_choice,
                   "GPUs to offer: all, none, or indexes as --print-resources numbers them "
                   "(0,2)")
      ->capture_default_str();
  work->add_flag("--opencl-cpu", opencl_cpu,
                 "also offer CPU-type OpenCL devices (PoCL) as GPUs: for tests and CI, since a "
                 "CPU is not a GPU (also IDLEPOOL_OPENCL_CPU=1)");
  work->add_flag("--print-resources", print_resources,
                 "print the cores, memory, slots and GPUs this worker would offer, and what each "
                 "GPU backend (NVML, OpenCL, ROCm SMI, Metal) said, then exit");
  work->add_flag("--json", resources_json, "with --print-resources: print JSON");
  std::string min_free_disk;
  work->add_option("--min-free-disk", min_free_disk,
                   "take no work while less than this is free under --work-dir: bytes, or "
                   "256M, 1G (default: 256M)");
  std::string cache_size;
  work->add_option("--cache-size", cache_size,
                   "cap of the blob cache in WORK_DIR/cache: bytes, or 512M, 10G, 1.5GiB "
                   "(default: 10G)");
  bool no_peer = false;
  work->add_option("--peer-listen", wopts.peer_listen,
                   "where to serve cached blobs to the pool's other workers, HOST:PORT "
                   "(0.0.0.0 = every interface; port 0 = a free one)")
      ->capture_default_str();
  work->add_flag("--no-peer", no_peer,
                 "neither serve blobs to peers nor fetch from them: every input comes from the "
                 "coordinator");
  std::string probe_interval = "10m";
  bool no_probe = false, no_calibrate = false;
  work->add_option("--probe-interval", probe_interval,
                   "measure the link to the coordinator again this often: 30s, 10m, 1h; 0 = only "
                   "on join")
      ->capture_default_str();
  work->add_flag("--no-probe", no_probe,
                 "never measure the link (the planner then assumes a default link)");
  work->add_flag("--no-calibrate", no_calibrate, "skip the CPU calibration at start");
  work->add_option("--heartbeat-ms", worker_hb_ms, "heartbeat interval")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{600'000}));

  // clients
  std::string job_file;
  auto* submit = app.add_subcommand("submit", "submit a job spec; prints the job id");
  add_client_opts(submit);
  submit->add_option("JOB", job_file, "job spec (TOML)")->required();

  std::optional<uint64_t> status_job;
  bool json = false;
  auto* status = app.add_subcommand("status", "show one job, or all jobs");
  add_client_opts(status);
  status->add_option("JOB", status_job, "job id");
  status->add_flag("--json", json, "print JSON");

  uint64_t job_id = 0;
  bool quiet = false;
  auto* wait = app.add_subcommand("wait", "wait for a job to finish; exit 0 only if it succeeded");
  add_client_opts(wait);
  wait->add_option("JOB", job_id, "job id")->required();
  wait->add_flag("--json", json, "print the final status as JSON");
  wait->add_flag("--quiet", quiet, "no progress output");

  std::string out_dir;
  auto* fetch = app.add_subcommand("fetch", "download a job's outputs");
  add_client_opts(fetch);
  fetch->add_option("JOB", job_id, "job id")->required();
  fetch->add_option("--out", out_dir, "directory to write outputs into")->required();

  auto* workers = app.add_subcommand("workers", "list the pool's workers");
  add_client_opts(workers);
  workers->add_flag("--json", json, "print JSON");

  auto* cancel = app.add_subcommand("cancel", "cancel a job");
  add_client_opts(cancel);
  cancel->add_option("JOB", job_id, "job id")->required();

  std::string frame_spec;
  uint32_t chunk = 0;
  auto* frames = app.add_subcommand("frames", "expand a frame spec, to check it before use");
  frames->add_option("SPEC", frame_spec, "frame spec, e.g. 1-10x2,20")->required();
  frames->add_option("--chunk", chunk, "print one chunk (task) per line")
      ->check(CLI::Range(1u, 1'000'000u));

  idlepool::cli::ProfileOptions pro;
  auto* profilec = app.add_subcommand(
      "profile", "where the time of succeeded attempts went (stage, run, upload), per worker");
  add_client_opts(profilec);
  profilec->add_option("JOB", pro.job, "job id");
  profilec->add_option("--key", pro.key, "every job with this profile key (status --json)");
  profilec->add_option("--spec", pro.spec_file,
                       "every job with the profile key of this job spec (TOML), not submitted");
  profilec->add_option("--max-samples", pro.max_samples, "newest attempts (default 200, max 5000)")
      ->check(CLI::Range(1u, 5000u));
  profilec->add_flag("--json", pro.json, "print one JSON object");

  idlepool::cli::ReportCommandOptions rep;
  auto* reportc = app.add_subcommand(
      "report", "a job's report as one self-contained HTML file (timeline, tasks, log tails)");
  add_client_opts(reportc);
  reportc->add_option("JOB", rep.job, "job id")->required();
  reportc->add_option("--out", rep.out, "the file to write (- for stdout)")->required();
  reportc->add_flag("--svg", rep.svg, "write the timeline alone, as SVG");
  reportc->add_option("--max-attempts", rep.max_attempts, "newest attempts (default 20000)")
      ->check(CLI::Range(1u, 1'000'000u));

  idlepool::cli::TimelineOptions tlo;
  auto* timelinec = app.add_subcommand(
      "timeline", "a job's attempts and its workers' events, for scripts (`report` draws it)");
  add_client_opts(timelinec);
  timelinec->add_option("JOB", tlo.job, "job id")->required();
  timelinec->add_option("--max-attempts", tlo.max_attempts, "newest attempts (default 20000)");
  timelinec->add_flag("--json", tlo.json, "print the JobTimeline as protobuf JSON");

  uint32_t local_workers = 2;
  std::string run_data_dir;
  auto* run = app.add_subcommand(
      "run", "run a job on this machine: coordinator and N workers in one process");
  run->add_option("JOB", job_file, "job spec (TOML)")->required();
  run->add_option("--local-workers", local_workers, "number of local workers")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  run->add_option("--out", out_dir, "directory for the outputs")->required();
  run->add_option("--data-dir", run_data_dir, "keep the pool state here (default: temporary)");
  run->add_flag("--json", json, "print one final JSON object");
  std::string run_http;
  run->add_option("--http", run_http,
                  "serve the dashboard of the local pool at HOST:PORT or PORT (default: none)");

  idlepool::cli::PlanPatternOptions po;
  idlepool::cli::PlanJobOptions pj;
  auto* planc = app.add_subcommand(
      "plan",
      "before running: does the pool beat one machine? JOB.toml (predicted makespans, "
      "calibrating first when the job has no history) or --pattern for coupled work");
  add_client_opts(planc);
  planc->add_option("JOB", pj.job_file, "job spec (TOML) to plan")->check(CLI::ExistingFile);
  planc->add_option("--calibrate", pj.calibrate,
                    "JOB: tasks in the calibration run when there is no history (0 or absent: "
                    "one per available worker, 2 to 8)");
  planc->add_flag("--no-calibrate", pj.no_calibrate,
                  "JOB: never submit a calibration run (fail without history)");
  planc->add_option("--task-seconds", pj.task_seconds,
                    "JOB: compute seconds per task on every worker (plan without a profile)");
  planc->add_option("--output-bytes", pj.output_bytes,
                    "JOB: output bytes per task (4MiB, 100K; default: the profile's median)");
  planc->add_option("--workers", pj.workers_csv, "JOB: plan on these workers only (a,b,c)");
  auto* pattern_opt =
      planc->add_option("--pattern", po.pattern, "allreduce, pipeline or tensor (coupled work)");
  planc->add_option("--machines", po.machines, "machines (pipeline: stages)")->capture_default_str();
  auto* compute_opt = planc->add_option(
      "--compute-ms", po.compute_ms,
      "--pattern: one machine's compute per step (allreduce) or per token (pipeline, tensor)");
  planc->add_option("--fixed-ms", po.fixed_ms, "allreduce: per-step time that is not divided");
  planc->add_option("--bytes", po.bytes,
                    "allreduce: gradient bytes per step; pipeline: bytes per hop; tensor: bytes "
                    "of one layer's activation (512K, 100M, 1.5G: binary)");
  planc->add_option("--layers", po.layers, "tensor: layers")->capture_default_str();
  planc->add_flag("--ring", po.ring,
                  "pipeline: the token returns to the first stage (hops = stages)");
  planc->add_option("--link", po.link, "bandwidth between two machines: 100mbit, 1gbit, 125MB/s")
      ->capture_default_str();
  planc->add_option("--rtt-ms", po.rtt_ms, "round trip between two machines")
      ->capture_default_str();
  planc->add_option("--overhead-ms", po.overhead_ms, "software cost per message")
      ->capture_default_str();
  planc->add_flag("--json", pj.json, "print one JSON object");

  idlepool::cli::SimOptions so;
  auto* simc = app.add_subcommand(
      "sim", "simulate the pool deterministically: a job on N simulated workers that follow an "
             "availability trace or model (or, with --dst, many seeds of fault injection)");
  simc->add_option("--workers", so.workers, "simulated workers")->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}));
  auto* trace_opt = simc->add_option("--trace", so.trace,
                                     "availability trace: spot .json, FTA .tab, or STUNner text "
                                     "(each worker follows one lane; lanes wrap around)");
  simc->add_option("--model", so.model,
                   "synthetic churn from a fitted Weibull model: nd07cpu, microsoft99, "
                   "overnet03, skype06, g5k06, lanl05")
      ->excludes(trace_opt);
  simc->add_option("--horizon", so.horizon_s, "seconds of model lanes sampled (they repeat)")
      ->capture_default_str();
  auto* job_opt = simc->add_option("--job", so.job,
                                   "a job spec (TOML): its task count, resources, max_attempts "
                                   "and timeout");
  simc->add_option("--tasks", so.tasks, "tasks (without --job)")->capture_default_str()
      ->excludes(job_opt);
  simc->add_option("--task-seconds", so.task_seconds,
                   "task duration on a speed-1 worker: N, uniform:A:B, loguniform:A:B, exp:MEAN, "
                   "lognormal:MEDIAN:SIGMA, pareto:MIN:ALPHA, tiers:A,B,...")
      ->capture_default_str();
  simc->add_option("--speeds", so.speeds, "worker speed distribution (same forms)")
      ->capture_default_str();
  simc->add_option("--slots", so.slots, "slots per worker")->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  simc->add_option("--policy", so.policy, "scheduling policy")->capture_default_str();
  simc->add_option("--seed", so.seed, "seed (the same seed gives the same run)")
      ->capture_default_str();
  simc->add_option("--chunk", so.chunk,
                   "group frames into tasks: N frames per task, or 'auto' (toward "
                   "--target-runtime, bounded by the tail); --tasks then counts frames and "
                   "--task-seconds is per frame");
  simc->add_option("--target-runtime", so.target_runtime_s, "with --chunk auto: seconds per task")
      ->capture_default_str()->check(CLI::PositiveNumber);
  simc->add_option("--task-overhead", so.task_overhead_s,
                   "start-up seconds every task pays (loading a scene or model)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  simc->add_option("--checkpoint-interval", so.checkpoint_interval_s,
                   "tasks checkpoint every N s of running (0: never)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  simc->add_flag("--checkpoint-on-vacate", so.checkpoint_on_vacate,
                 "tasks save their progress when stopped for the owner");
  simc->add_option("--hard-down", so.hard_down_fraction,
                   "fraction of machine downs with no goodbye (power loss)")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  simc->add_option("--lease", so.lease_s, "lease timeout, seconds")->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  simc->add_option("--heartbeat", so.heartbeat_s, "worker heartbeat, seconds")
      ->capture_default_str()->check(CLI::Range(0.01, 3600.0));
  simc->add_option("--tick", so.tick_s, "coordinator tick, seconds")->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  simc->add_option("--max-days", so.max_days, "give up after this many simulated days")
      ->capture_default_str()->check(CLI::Range(0.001, 3650.0));
  simc->add_flag("--json", so.json, "print one JSON object");
  simc->add_flag("--no-timing", so.no_timing,
                 "leave out wall-time figures, so two runs of one seed print the same bytes");
  simc->add_flag("--dst", so.dst,
                 "deterministic simulation testing: random workloads and faults, invariants "
                 "checked after every step");
  simc->add_option("--seeds", so.seeds, "with --dst: how many seeds, from --seed on")
      ->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  simc->add_option("--plant", so.plant,
                   "with --dst: plant a known bug in the core (tests the harness): no-fencing, "
                   "forget-lost-tasks, no-lease-expiry, count-preemptions, strand-preempted");
  simc->add_flag("--verbose", so.verbose, "with --dst: one line per seed");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every command-line error is bad input: exit 2 (README).
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(common.log_level));
  spdlog::set_default_logger(spdlog::stderr_color_mt("idlepool"));
  if (common.log_format == "json") spdlog::set_formatter(idlepool::cli::MakeJsonLogFormatter());
  spdlog::set_level(spdlog::level::from_str(common.log_level));

  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::getline(in, common.token);
  }
  auto need_token = [&]() -> bool {
    if (!common.token.empty()) return true;
    std::fprintf(stderr,
                 "idlepool: no pool token: pass --token, --token-file FILE or set "
                 "IDLEPOOL_TOKEN (the coordinator printed it at its first start; it is in "
                 "DATA_DIR/pool.token)\n");
    return false;
  };

  if (*coord) {
    idlepool::platform::BlockTerminationSignals();
    copts.lease_timeout = idlepool::core::Millis(lease_ms);
    copts.heartbeat = idlepool::core::Millis(heartbeat_ms);
    copts.http = coord_http == "off" ? "" : coord_http;
    copts.http_required = coord_http_opt->count() > 0;
    auto c = idlepool::coordinator::Coordinator::Start(copts);
    if (!c.ok()) return Fail(c.status());
    std::string host = copts.listen.substr(0, copts.listen.rfind(':'));
    if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
      char buf[256] = {0};
      ::gethostname(buf, sizeof buf - 1);
      host = buf;
    }
    std::string addr = absl::StrCat(host, ":", (*c)->port());
    std::printf("idlepool coordinator listening on %s (data dir %s)\n",
                absl::StrCat(copts.listen.substr(0, copts.listen.rfind(':')), ":", (*c)->port())
                    .c_str(),
                copts.data_dir.c_str());
    if ((*c)->token_created()) std::printf("created a new pool secret in %s/pool.token\n",
                                           copts.data_dir.c_str());
    std::printf("join a machine to this pool with:\n  IDLEPOOL_TOKEN=%s idlepool worker "
                "--coordinator %s --work-dir /var/tmp/idlepool-worker\n",
                (*c)->token().c_str(), addr.c_str());
    std::printf("(or copy %s/pool.token to the machine and pass --token-file)\n",
                copts.data_dir.c_str());
    if ((*c)->http_port() != 0) {
      std::string web = (*c)->http_host();
      if (web.find(':') != std::string::npos) web = "[" + web + "]";
      if (web == "0.0.0.0" || web == "[::]") web = host;
      std::printf("dashboard (the link logs you in):\n  http://%s:%d/login?token=%s\n",
                  web.c_str(), (*c)->http_port(), (*c)->token().c_str());
    }
    std::printf("submit with:\n  IDLEPOOL_COORDINATOR=%s IDLEPOOL_TOKEN=%s idlepool submit "
                "JOB.toml\n",
                addr.c_str(), (*c)->token().c_str());
    std::fflush(stdout);
    std::thread waiter([&] {
      int sig = idlepool::platform::WaitForTerminationSignal();
      spdlog::info("signal {}: shutting down", sig);
      (*c)->Shutdown();
    });
    absl::Status st = (*c)->Wait();
    if (!st.ok()) {
      std::fprintf(stderr, "idlepool: coordinator stopped: %s\n", st.ToString().c_str());
      std::_Exit(1);
    }
    waiter.join();
    return 0;
  }

  if (*work) {
    idlepool::platform::KeepLargeBlocksOutOfTheHeap();  // a light idle worker: platform/memory.h
    if (print_default_config) {
      std::printf("%s", idlepool::worker::DefaultConfigToml().c_str());
      return 0;
    }
    if (!wopts.name.empty() && !idlepool::spec::IsPrintableUtf8(wopts.name)) {
      std::fprintf(stderr, "idlepool worker: --name must be printable UTF-8 (no control "
                           "characters)\n");
      return 2;
    }
    {
      // GPUs: discovered before anything else, so --print-resources needs no work dir or token.
      auto selection = idlepool::platform::ParseGpuSelection(gpus_choice);
      if (!selection.ok()) {
        std::fprintf(stderr, "idlepool worker: %s\n",
                     std::string(selection.status().message()).c_str());
        return 2;
      }
      idlepool::platform::GpuDiscoveryOptions gopts;
      gopts.opencl_cpu = opencl_cpu;
      gopts.selection = *selection;
      gopts.opencl_probe = idlepool::platform::SelfGpuProbeCommand();  // OpenCL in a child
      gopts.discover_unoffered = print_resources;
      wopts.gpus = idlepool::platform::GpuInventory::Discover(gopts);
      if (print_resources) {
        return idlepool::cli::PrintResources(*wopts.gpus, {wopts.slots, wopts.memory_mb,
                                                           resources_json});
      }
      for (const auto& b : wopts.gpus->backends()) {
        spdlog::info("gpu discovery: {}: {}", b.backend, b.message);
      }
      for (uint32_t m : wopts.gpus->missing()) {
        spdlog::warn("--gpus: there is no GPU {} ({} found); not offered", m,
                     wopts.gpus->discovered().size());
      }
      for (const auto& g : wopts.gpus->offered()) {
        spdlog::info("offering gpu {}: {} {}, {} MiB, apis {}", g.index, g.vendor, g.name,
                     g.memory_mb, absl::StrJoin(g.apis, ","));
      }
    }
    if (wopts.work_dir.empty()) {
      std::fprintf(stderr, "idlepool worker: --work-dir is required\n");
      return 2;
    }
    if (!min_free_disk.empty()) {
      auto bytes = idlepool::worker::ParseByteSize(min_free_disk);
      if (!bytes.ok()) {
        std::fprintf(stderr, "idlepool worker: --min-free-disk: %s\n",
                     std::string(bytes.status().message()).c_str());
        return 2;
      }
      wopts.min_free_disk_bytes = *bytes;
    }
    {
      // HOST:PORT (or [v6]:PORT), port 0..65535: refused here with exit 2, not by gRPC later.
      const std::string& pl = wopts.peer_listen;
      const size_t colon = pl.rfind(':');
      const std::string port = colon == std::string::npos ? "" : pl.substr(colon + 1);
      const bool digits =
          !port.empty() && port.size() <= 5 &&
          std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (colon == 0 || !digits || std::stoi(port) > 65535 ||
          pl.find_first_of(" /") != std::string::npos) {
        std::fprintf(stderr,
                     "idlepool worker: --peer-listen: '%s' is not HOST:PORT with a port of 0 to "
                     "65535\n",
                     pl.substr(0, 100).c_str());
        return 2;
      }
    }
    if (!cache_size.empty()) {
      auto bytes = idlepool::worker::ParseByteSize(cache_size);
      if (!bytes.ok()) {
        std::fprintf(stderr, "idlepool worker: --cache-size: %s\n",
                     std::string(bytes.status().message()).c_str());
        return 2;
      }
      wopts.cache_bytes = *bytes;
    }
    if (!worker_config.empty()) {
      auto policy = idlepool::worker::LoadPolicyConfig(worker_config);
      if (!policy.ok()) return BadSpec(policy.status());  // missing, too large or wrong: exit 2
      wopts.policy = *policy;
    }
    if (dedicated) idlepool::worker::MakeDedicated(&wopts.policy);
    if (!wopts.sensors_dir.empty() && !fs::is_directory(wopts.sensors_dir)) {
      std::fprintf(stderr, "idlepool worker: --sensors-dir %s is not a directory\n",
                   wopts.sensors_dir.c_str());
      return 2;
    }
    wopts.low_priority = !normal_priority;
    wopts.peers = !no_peer;
    wopts.probe = !no_probe;
    wopts.calibrate = !no_calibrate;
    {
      auto every = idlepool::worker::ParseDuration(probe_interval);
      if (!every.ok()) {
        std::fprintf(stderr, "idlepool worker: --probe-interval: %s\n",
                     std::string(every.status().message()).c_str());
        return 2;
      }
      wopts.probe_interval = *every;
    }
    if (!need_token()) return 2;
    idlepool::platform::BlockTerminationSignals();
    wopts.coordinator = common.coordinator;
    wopts.token = common.token;
    wopts.heartbeat = idlepool::core::Millis(worker_hb_ms);
    idlepool::worker::Worker w(wopts);
    std::thread waiter([&] {
      idlepool::platform::WaitForTerminationSignal();
      w.Stop();
    });
    waiter.detach();
    absl::Status st = w.Run();
    if (!st.ok()) return Fail(st);
    return 0;
  }

  if (*frames) {
    if (chunk == 0) {
      auto f = idlepool::spec::ParseFrames(frame_spec);
      if (!f.ok()) return Fail(f.status());
      std::printf("%s\n", idlepool::spec::JoinFrames(*f).c_str());
    } else {
      auto chunks = idlepool::spec::ChunkFrames(frame_spec, chunk);
      if (!chunks.ok()) return Fail(chunks.status());
      for (const auto& c : *chunks) std::printf("%s\n", idlepool::spec::JoinFrames(c.frames).c_str());
    }
    return 0;
  }

  if (*submit) {
    if (!need_token()) return 2;
    auto spec = idlepool::spec::ParseJobFile(job_file);
    if (!spec.ok()) return BadSpec(spec.status());
    PoolClient client = MakeClient(common);
    auto reply = client.Submit(*spec, fs::absolute(job_file).string());
    if (!reply.ok()) return Fail(reply.status());
    std::printf("%llu\n", static_cast<unsigned long long>(reply->job()));
    std::fprintf(stderr, "submitted job %llu '%s': %s\n",
                 static_cast<unsigned long long>(reply->job()), spec->name.c_str(),
                 Plural(reply->tasks(), "task").c_str());
    return 0;
  }

  if (*status) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    if (status_job) {
      auto s = client.GetJob(*status_job);
      if (!s.ok()) return Fail(s.status());
      if (json) {
        std::printf("%s\n", JobJson(*s).dump().c_str());
      } else if (const auto term = idlepool::cli::TerminalFor(STDOUT_FILENO); term.fancy) {
        // A terminal: the job's bar, the details, the pool's workers by activity.
        std::fputs(idlepool::cli::JobBlock(*s, WallMs(), term.style).c_str(), stdout);
        PrintJobDetails(*s);
        if (auto w = client.ListWorkers(); w.ok()) {
          std::fputs(idlepool::cli::WorkerSummary(*w, term.style).c_str(), stdout);
        }
      } else {
        PrintJob(*s);
      }
      return 0;
    }
    auto jobs = client.ListJobs();
    if (!jobs.ok()) return Fail(jobs.status());
    if (json) {
      std::printf("%s\n", idlepool::api::JobsJson(*jobs).dump().c_str());
      return 0;
    }
    if (const auto term = idlepool::cli::TerminalFor(STDOUT_FILENO); term.fancy) {
      // A terminal: every job's bar, then the workers (by activity, then one line each).
      if (jobs->jobs().empty()) std::printf("no jobs\n");
      for (const auto& j : jobs->jobs()) {
        std::fputs(idlepool::cli::JobBlock(j, WallMs(), term.style).c_str(), stdout);
      }
      if (auto w = client.ListWorkers(); w.ok()) {
        std::fputs(idlepool::cli::WorkerSummary(*w, term.style).c_str(), stdout);
        std::fputs(idlepool::cli::WorkerLines(*w, term.style).c_str(), stdout);
      }
      return 0;
    }
    std::printf("%-6s %-24s %-10s %8s %8s %8s %9s\n", "JOB", "NAME", "STATE", "DONE", "TASKS",
                "FAILED", "ATTEMPTS");
    for (const auto& j : jobs->jobs()) {
      std::printf("%-6llu %-24s %-10s %8u %8u %8u %9llu\n",
                  static_cast<unsigned long long>(j.job()), j.name().c_str(), j.state().c_str(),
                  j.succeeded(), j.tasks(), j.failed(),
                  static_cast<unsigned long long>(j.attempts()));
    }
    return 0;
  }

  if (*wait) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    Progress progress(quiet || json, &client);
    auto s = client.Wait(job_id, [&](const auto& st) { progress.Update(st); }, progress.every());
    if (!s.ok()) return Fail(s.status());
    if (json) {
      std::printf("%s\n", JobJson(*s).dump().c_str());
    } else if (progress.live() && idlepool::cli::TerminalFor(STDOUT_FILENO).fancy) {
      PrintJobDetails(*s);  // under the bar left on the same terminal
    } else {
      PrintJob(*s);
    }
    return s->state() == "succeeded" ? 0 : 1;
  }

  if (*fetch) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    auto status = client.GetJob(job_id);
    if (!status.ok()) return Fail(status.status());
    auto files = client.Fetch(job_id, out_dir);
    if (!files.ok()) return Fail(files.status());
    std::printf("%s in %s\n", Plural(files->size(), "file").c_str(), out_dir.c_str());
    if (status->state() != "succeeded") {
      std::fprintf(stderr,
                   "note: job %llu is %s: these are the outputs of the %s committed so far\n",
                   static_cast<unsigned long long>(job_id), status->state().c_str(),
                   Plural(status->succeeded(), "task").c_str());
    }
    return 0;
  }

  if (*workers) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    auto w = client.ListWorkers();
    if (!w.ok()) return Fail(w.status());
    if (json) {
      std::printf("%s\n", WorkersJson(*w).dump().c_str());
      return 0;
    }
    std::printf("%-20s %-20s %-13s %-14s %6s %6s %-16s %10s  %s %6s  %s  %s\n", "WORKER", "HOST",
                "STATE", "ACTIVITY", "SLOTS", "BUSY", "GPUS", "SEEN", Pad("LINK", 26).c_str(),
                "CPU", Pad("UP", 32).c_str(), "OWNER");
    for (const auto& x : w->workers()) {
      // Only a worker that is there has an owner policy to show.
      const bool here = x.state() == "connected" || x.state() == "disconnected";
      std::string owner = !here || x.owner_state().empty() ? "-" : x.owner_state();
      if (here && !x.owner_reason().empty()) owner += " (" + x.owner_reason() + ")";
      char seen[32] = "-";
      if (x.last_seen_ms_ago() >= 0) {
        std::snprintf(seen, sizeof seen, "%.1fs", static_cast<double>(x.last_seen_ms_ago()) / 1000.0);
      }
      const std::string cpu =
          x.cpu_score() > 0 ? std::to_string(static_cast<int64_t>(x.cpu_score() + 0.5)) : "-";
      std::printf("%-20s %-20s %-13s %-14s %6u %6u %-16s %10s  %s %6s  %s  %s\n",
                  x.worker().c_str(), x.hostname().c_str(), x.state().c_str(),
                  x.activity().empty() ? "-" : x.activity().c_str(), x.capacity().cpus(),
                  x.slots_busy(), GpusText(x).c_str(), seen, Pad(LinkText(x), 26).c_str(),
                  cpu.c_str(),
                  Pad(UpText(x), 32).c_str(), owner.c_str());
    }
    return 0;
  }

  if (*cancel) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    auto st = client.Cancel(job_id);
    if (!st.ok()) return Fail(st.status());
    std::printf("job %llu %s\n", static_cast<unsigned long long>(job_id), st->c_str());
    return 0;
  }

  if (*simc) return idlepool::cli::RunSimCommand(so);
  if (*planc) {
    if (pj.job_file.empty() == pattern_opt->empty()) {
      std::fprintf(stderr, "idlepool plan: give either a job spec (JOB.toml) or --pattern\n");
      return 2;
    }
    if (!pattern_opt->empty()) {
      if (compute_opt->empty()) {
        std::fprintf(stderr, "idlepool plan: --pattern needs --compute-ms\n");
        return 2;
      }
      po.json = pj.json;
      return idlepool::cli::RunPlanPattern(po);
    }
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    return idlepool::cli::RunPlanJob(client, pj);
  }
  if (*profilec) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    return idlepool::cli::RunProfile(client, pro);
  }
  if (*reportc) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    return idlepool::cli::RunReport(client, rep);
  }
  if (*timelinec) {
    if (!need_token()) return 2;
    PoolClient client = MakeClient(common);
    return idlepool::cli::RunTimeline(client, tlo);
  }

  if (*run) {
    idlepool::platform::BlockTerminationSignals();
    auto spec = idlepool::spec::ParseJobFile(job_file);
    if (!spec.ok()) return BadSpec(spec.status());
    bool temp_dir = run_data_dir.empty();
    if (temp_dir) {
      run_data_dir = (fs::temp_directory_path() /
                      ("idlepool-run-" + idlepool::platform::RandomHex(6)))
                         .string();
    }
    // The embedded pool is an implementation detail of `run`: only warnings unless asked.
    if (app.get_option("--log-level")->count() == 0) spdlog::set_level(spdlog::level::warn);
    idlepool::coordinator::Options ro;
    ro.listen = "127.0.0.1:0";
    ro.http = run_http;
    ro.data_dir = run_data_dir + "/coordinator";
    auto c = idlepool::coordinator::Coordinator::Start(ro);
    if (!c.ok()) return Fail(c.status());
    std::string addr = absl::StrCat("127.0.0.1:", (*c)->port());
    if ((*c)->http_port() != 0) {
      std::fprintf(stderr, "idlepool: dashboard at http://%s:%d/login?token=%s\n",
                   (*c)->http_host().c_str(), (*c)->http_port(), (*c)->token().c_str());
    }
    std::vector<std::unique_ptr<idlepool::worker::Worker>> ws;
    std::vector<std::thread> threads;
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (uint32_t i = 0; i < local_workers; ++i) {
      idlepool::worker::Options o;
      o.coordinator = addr;
      o.token = (*c)->token();
      o.name = absl::StrCat("local-", i + 1);
      o.slots = std::max(1u, cores / local_workers);
      o.work_dir = absl::StrCat(run_data_dir, "/worker-", i + 1);
      // Your own job on your own machine: your typing and the charger do not stop it (the lid,
      // sleep and heat rules still do); Ctrl-C gives tasks 1 s to save a checkpoint.
      idlepool::worker::MakeDedicated(&o.policy);
      o.policy.on_battery = idlepool::worker::BatteryAction::kRun;
      o.policy.vacate_grace_s = 1;
      o.probe = false;  // a loopback link tells the planner nothing
      ws.push_back(std::make_unique<idlepool::worker::Worker>(o));
      threads.emplace_back([w = ws.back().get()] { (void)w->Run(); });
    }
    // Ctrl-C / SIGTERM: the tasks run in their own process groups, so they would outlive us;
    // vacate the workers (which kills them), stop the pool and clean up before exiting.
    std::thread([&] {
      int sig = idlepool::platform::WaitForTerminationSignal();
      idlepool::cli::RestoreTerminal();  // a progress bar may have hidden the cursor
      std::fprintf(stderr, "\nidlepool: signal %d: stopping the local pool\n", sig);
      for (auto& w : ws) w->Stop();
      (*c)->Shutdown();
      if (temp_dir) {
        std::error_code ec;
        fs::remove_all(run_data_dir, ec);
      }
      std::_Exit(130);
    }).detach();
    PoolClient client(addr, (*c)->token());
    int rc = 0;
    auto reply = client.Submit(*spec, fs::absolute(job_file).string());
    if (!reply.ok()) {
      rc = Fail(reply.status());
    } else {
      Progress progress(json, &client);
      auto s = client.Wait(reply->job(), [&](const auto& st) { progress.Update(st); },
                           progress.every());
      if (!s.ok()) {
        rc = Fail(s.status());
      } else {
        auto files = client.Fetch(reply->job(), out_dir);
        if (!files.ok()) {
          rc = Fail(files.status());
        } else {
          if (json) {
            std::printf("%s\n", RunSummary(*s, *files, out_dir).dump().c_str());
          } else {
            PrintJob(*s);
            std::printf("  %s in %s\n", Plural(files->size(), "output file").c_str(),
                        out_dir.c_str());
          }
          rc = s->state() == "succeeded" ? 0 : 1;
        }
      }
    }
    for (auto& w : ws) w->Stop();
    for (auto& t : threads) t.join();
    (*c)->Shutdown();
    if (temp_dir) {
      std::error_code ec;
      fs::remove_all(run_data_dir, ec);
    }
    return rc;
  }
  return 0;
}
