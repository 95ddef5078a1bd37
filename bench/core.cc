// bench/core: how fast and how big the pure scheduler core is, with no I/O at all.
//
//   build/bench/core [--tasks 100000] [--workers 1000] [--slots 4]
//
// Submits one job of N tasks, says hello for W workers of S slots each, then answers every
// assignment with a success report (in assignment order), heartbeating every worker once per
// simulated second and ticking, until the job succeeds. Prints the events applied, the decisions
// returned, events and decisions per second of wall time, and the process's peak RSS (VmHWM), so
// the scale targets of step 3 (1,000,000 tasks and 100,000 workers in under 2 GiB; a simulator
// running 1,000,000 tasks on 10,000 workers in under 60 s) can be checked, and regressions seen.
// Wall time is read here (a measuring program), never in the core.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <string>
#include <variant>

#include "bench/peak_rss.h"
#include "core/scheduler.h"

namespace {

using idlepool::core::AssignAttempt;
using idlepool::core::AttemptReport;
using idlepool::core::Decision;
using idlepool::core::JobState;
using idlepool::core::JobSubmitted;
using idlepool::core::Millis;
using idlepool::core::MonoTime;
using idlepool::core::OutputFile;
using idlepool::core::ReportResult;
using idlepool::core::Resources;
using idlepool::core::Scheduler;
using idlepool::core::Tick;
using idlepool::core::WorkerHeartbeat;
using idlepool::core::WorkerHello;

using idlepool::bench::PeakRssKb;

}  // namespace

int main(int argc, char** argv) {
  long tasks = 100000, workers = 1000, slots = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (a == "--tasks") tasks = v;
    else if (a == "--workers") workers = v;
    else if (a == "--slots") slots = v;
    else {
      std::fprintf(stderr, "usage: %s [--tasks N] [--workers W] [--slots S]\n", argv[0]);
      return 2;
    }
  }
  if (tasks < 1 || tasks > 4'000'000'000L || workers < 1 || slots < 1) {
    std::fprintf(stderr, "bench/core: --tasks, --workers and --slots must be positive\n");
    return 2;
  }
  std::printf("bench/core: 1 job of %ld tasks, %ld workers x %ld slots (pure core, no I/O)\n",
              tasks, workers, slots);
  std::fflush(stdout);

  Scheduler s(idlepool::core::Options{Millis{5000}});
  uint64_t events = 0, decisions = 0;
  std::deque<AssignAttempt> running;
  int64_t now_ms = 0;
  auto apply = [&](const idlepool::core::Event& e) {
    std::vector<Decision> out = s.Apply(e, MonoTime(Millis(now_ms)));
    ++events;
    decisions += out.size();
    for (Decision& d : out) {
      if (auto* a = std::get_if<AssignAttempt>(&d)) running.push_back(std::move(*a));
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  apply(JobSubmitted{1, static_cast<uint32_t>(tasks), Resources{1, 0, 0}, 3, Millis{0}, {}});
  for (long w = 0; w < workers; ++w) {
    WorkerHello h;
    h.worker = "w" + std::to_string(w);
    h.session = static_cast<uint64_t>(w + 1);
    h.boot_id = "boot";
    h.capacity = Resources{static_cast<uint32_t>(slots), 0, 0};
    apply(h);
  }
  const auto t_setup = std::chrono::steady_clock::now();
  const OutputFile out{"out.txt", std::string(64, 'a'), 1};
  uint64_t reports = 0;
  int64_t next_second_ms = 1000;
  while (!running.empty()) {
    AssignAttempt a = std::move(running.front());
    running.pop_front();
    now_ms += 1;  // a millisecond of simulated time per report
    AttemptReport r;
    r.worker = a.worker;
    r.session = a.session;
    r.attempt = a.attempt;
    r.result = ReportResult::kSucceeded;
    r.outputs = {out};
    apply(r);
    ++reports;
    if (now_ms >= next_second_ms) {  // every worker heartbeats once per simulated second
      next_second_ms += 1000;
      for (long w = 0; w < workers; ++w) {
        apply(WorkerHeartbeat{"w" + std::to_string(w), static_cast<uint64_t>(w + 1)});
      }
      apply(Tick{});
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  const auto job = s.Job(1);
  const double setup_s = std::chrono::duration<double>(t_setup - t0).count();
  const double run_s = std::chrono::duration<double>(t1 - t_setup).count();
  const double all_s = std::chrono::duration<double>(t1 - t0).count();
  std::printf("  job %s: %llu reports, %llu events, %llu decisions\n",
              job && job->state == JobState::kSucceeded ? "succeeded" : "NOT succeeded",
              static_cast<unsigned long long>(reports), static_cast<unsigned long long>(events),
              static_cast<unsigned long long>(decisions));
  std::printf("  setup (submit + hellos): %.3f s; reports: %.3f s; total %.3f s\n", setup_s, run_s,
              all_s);
  std::printf("  %.0f events/s, %.0f decisions/s, %.0f tasks/s\n", events / all_s,
              decisions / all_s, reports / all_s);
  std::printf("  peak RSS %.1f MiB (%.0f bytes per task)\n", PeakRssKb() / 1024.0,
              PeakRssKb() * 1024.0 / static_cast<double>(tasks));
  return job && job->state == JobState::kSucceeded ? 0 : 1;
}
