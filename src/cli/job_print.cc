#include "cli/job_print.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "api/json.h"
#include "cli/command.h"
#include "platform/clock.h"
#include "text/utf8.h"

namespace idlepool::cli {
namespace {

double MakespanSeconds(const v1::JobStatus& s) {
  if (s.finished_ms() == 0) return 0;
  return static_cast<double>(s.finished_ms() - s.submitted_ms()) / 1000.0;
}

}  // namespace

std::string Seconds(double s) {
  return s < 10 ? absl::StrFormat("%.3f s", s) : absl::StrFormat("%.1f s", s);
}

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

int64_t WallMs() { return platform::SystemClock().WallMs(); }

// The first two lines of PrintJob (its header, which a terminal's JobBlock replaces).
void PrintJobHeader(const v1::JobStatus& s) {
  std::printf("job %llu  %s  %s%s\n", static_cast<unsigned long long>(s.job()), s.name().c_str(),
              s.state().c_str(), s.user().empty() ? "" : ("  (user " + s.user() + ")").c_str());
  std::printf("  tasks %u: %u succeeded, %u running, %u pending, %u failed, %u cancelled\n",
              s.tasks(), s.succeeded(), s.running(), s.pending(), s.failed(), s.cancelled());
}

void PrintJobDetails(const v1::JobStatus& s, Hints hints) {
  if (!s.reason().empty()) std::printf("  %s: %s\n", s.state().c_str(), s.reason().c_str());
  if (s.backoff() != 0) std::printf("  %u tasks waiting out a retry backoff\n", s.backoff());
  std::printf("  attempts %llu, failures %llu, preemptions %llu, lost %llu (workers lost %u)\n",
              static_cast<unsigned long long>(s.attempts()),
              static_cast<unsigned long long>(s.failures()),
              static_cast<unsigned long long>(s.preemptions()),
              static_cast<unsigned long long>(s.attempts_lost()), s.workers_lost());
  std::printf("  owners: %llu suspensions, %s of work lost to preemptions and lost workers\n",
              static_cast<unsigned long long>(s.suspensions()),
              Seconds(static_cast<double>(s.lost_ms()) / 1000.0).c_str());
  if (s.machine_faults() != 0) {
    std::printf(
        "  machine faults %llu (a full disk, a command that could not start there; never "
        "counted against the tasks)\n",
        static_cast<unsigned long long>(s.machine_faults()));
  }
  {
    const auto& t = s.transfer();
    const uint64_t files = uint64_t{t.cache_hits()} + t.cache_misses();
    std::printf(
        "  data: %s staged (%s from worker caches, %s from the coordinator, %s from "
        "peers), %s uploaded; cache hits %u/%llu files%s\n",
        Bytes(t.input_bytes()).c_str(), Bytes(t.cached_bytes()).c_str(),
        Bytes(t.coordinator_bytes()).c_str(), Bytes(t.peer_bytes()).c_str(),
        Bytes(t.output_bytes()).c_str(), t.cache_hits(), static_cast<unsigned long long>(files),
        files ? absl::StrFormat(" (%.0f%%)", 100.0 * t.cache_hits() / files).c_str() : "");
  }
  if (s.finished_ms() != 0) std::printf("  makespan %s\n", Seconds(MakespanSeconds(s)).c_str());
  if (s.has_prediction()) {
    const auto& p = s.prediction();
    std::string check;
    if (s.state() == "succeeded" && MakespanSeconds(s) > 0 && std::isfinite(p.makespan_s())) {
      check = absl::StrFormat(": %+.1f%% vs the actual",
                              100.0 * (p.makespan_s() - MakespanSeconds(s)) / MakespanSeconds(s));
    }
    std::printf("  predicted makespan %s on %d workers (single machine %s; %s)%s\n",
                std::isfinite(p.makespan_s()) ? Seconds(p.makespan_s()).c_str() : "never",
                p.workers_size(),
                std::isfinite(p.single_makespan_s()) ? Seconds(p.single_makespan_s()).c_str() : "-",
                p.basis().c_str(), check.c_str());
  }
  if (s.host_network()) std::printf("  network: host (its tasks share the worker's network)\n");
  for (const auto& h : s.held_off()) {
    std::printf(
        "  held off %s (%u failed there; none of its tasks go there while others can run "
        "them): %s\n",
        text::PrintableText(h.worker(), false).c_str(), h.failures(),
        text::PrintableText(h.last_error(), false).c_str());
  }
  if (const std::string why = api::WaitingReason(s); !why.empty()) {
    std::printf("  waiting: %s\n", why.c_str());
  }
  PrintFailedTasks(s.failed_tasks());
  if (s.failed_tasks_size() > 0 && hints == Hints::kShow) {
    const auto& last = s.failed_tasks(s.failed_tasks_size() - 1);
    const unsigned long long job = s.job();
    if (s.more_failed_tasks() && s.failed() > static_cast<uint32_t>(s.failed_tasks_size())) {
      std::printf("  ... and %u more failed tasks: idlepool failures %llu --after %u\n",
                  s.failed() - static_cast<uint32_t>(s.failed_tasks_size()), job, last.index());
    }
    std::printf("  a task's output: idlepool logs %llu TASK\n", job);
  }
}

void PrintFailedTasks(const google::protobuf::RepeatedPtrField<v1::FailedTask>& tasks) {
  for (const auto& f : tasks) {
    // Why it failed (its log tail is `idlepool logs`'s). Task output: printed, but never as
    // terminal escape sequences.
    std::string msg = text::PrintableText(f.message(), /*keep_newlines=*/true);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    std::string indented;
    for (char c : msg) {
      indented += c;
      if (c == '\n') indented += "      | ";
    }
    const std::string worker = text::PrintableText(f.worker(), /*keep_newlines=*/false);
    std::printf("  task %u failed on %s: %s\n", f.index(), worker.empty() ? "?" : worker.c_str(),
                indented.c_str());
  }
}

void PrintJob(const v1::JobStatus& s, Hints hints) {
  PrintJobHeader(s);
  PrintJobDetails(s, hints);
}

void PrintStderrTails(PoolClient& client, const v1::JobStatus& s) {
  int shown = 0;
  for (const auto& f : s.failed_tasks()) {
    if (shown == kStderrTailTasks) break;
    auto log = client.GetTaskLog(s.job(), f.index());
    if (!log.ok() || log->attempts_size() == 0) continue;
    const auto& newest =
        *std::max_element(log->attempts().begin(), log->attempts().end(),
                          [](const auto& a, const auto& b) { return a.attempt() < b.attempt(); });
    std::string tail = text::PrintableText(newest.log_tail(), /*keep_newlines=*/true);
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    if (tail.empty()) continue;
    std::vector<std::string> lines = absl::StrSplit(tail, '\n');
    const size_t keep = static_cast<size_t>(kStderrTailLines);
    const size_t from = lines.size() > keep ? lines.size() - keep : 0;
    std::printf("  task %u stderr (last lines):\n", f.index());
    for (size_t i = from; i < lines.size(); ++i) {
      std::printf("      | %s\n", std::string(lines[i]).c_str());
    }
    ++shown;
  }
  if (s.failed() > static_cast<uint32_t>(shown) && shown > 0) {
    std::printf("  (stderr of the first %s only)\n", Plural(shown, "failed task").c_str());
  }
}

nlohmann::json RunSummary(const v1::JobStatus& s, const std::vector<std::string>& out,
                          const std::string& out_dir) {
  nlohmann::json j = api::JobJson(s);
  j.erase("job");
  j["job_id"] = s.job();
  j["out_dir"] = out_dir;
  j["outputs"] = out;
  return j;
}

void Progress::Update(const v1::JobStatus& s) {
  if (quiet_) return;
  if (live_) {
    const auto& clock = platform::SystemClock();
    // The block left on screen: fresh workers. "waiting": for the jobs it runs after.
    const bool last = s.state() != "running" && s.state() != "waiting";
    if (client_ != nullptr &&
        (!workers_ || last || clock.Now() - workers_at_ >= std::chrono::seconds(1))) {
      auto w = client_->ListWorkers();
      if (w.ok()) workers_ = *std::move(w);
      workers_at_ = clock.Now();
    }
    const auto style = TerminalFor(STDERR_FILENO).style;  // follows resizes
    std::string block = JobBlock(s, clock.WallMs(), style);
    if (workers_) block += WorkerSummary(*workers_, style);
    live_->Draw(block);
    if (last) live_->Finish();
    return;
  }
  std::fprintf(stderr, "job %llu: %u/%u succeeded, %u running, %u pending, %u failed, %s, %s\n",
               static_cast<unsigned long long>(s.job()), s.succeeded(), s.tasks(), s.running(),
               s.pending(), s.failed(), Plural(s.attempts(), "attempt").c_str(), s.state().c_str());
  std::fflush(stderr);
}

}  // namespace idlepool::cli
