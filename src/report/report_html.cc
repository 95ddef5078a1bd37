// RenderReportHtml (report/timeline_svg.h): the job report as one self-contained HTML file.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "report/internal.h"
#include "report/timeline_svg.h"

namespace idlepool::report {
namespace {

using internal::Appendf;
using internal::FormatBytes;
using internal::FormatDuration;
using internal::FormatUtc;

constexpr const char* kCss =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em;color:#222}"
    "h1 small{font-weight:normal;color:#555}"
    "table{border-collapse:collapse;margin:.4em 0 1.5em}"
    "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}"
    "thead th{background:#f0f0f0}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.task td{border-top:2px solid #888}"
    ".timeline svg{max-width:100%;height:auto}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto;"
    "background:#f6f6f6;margin:.3em 0;padding:.4em;font-size:12px}"
    ".dot{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.3em;"
    "vertical-align:-.05em}"
    ".muted{color:#777}"
    // Printed, every log tail shows, closed <details> included (::details-content: Chromium 131,
    // Firefox 143, Safari 18.4); the summary line, a toggle, is left out.
    "@media print{body{margin:0;font-size:11px}pre{max-height:none;overflow:visible}"
    "h2{break-after:avoid}.timeline{break-inside:avoid}"
    "details::details-content{content-visibility:visible;display:block;height:auto}"
    "details>summary{display:none}}";

std::string Num(uint64_t v) { return std::to_string(v); }

void Row(std::string& out, const char* head, const std::string& html_value) {
  out += "<tr><th>";
  out += head;
  out += "</th><td>" + html_value + "</td></tr>";
}

std::string OutcomeCell(const std::string& outcome) {
  const auto& style = internal::StyleOf(internal::OutcomeIndex(outcome));
  return std::string("<span class=\"dot\" style=\"background:") + style.fill + "\"></span>" +
         EscapeXml(outcome);
}

struct WorkerRow {
  uint64_t attempts = 0;
  std::map<std::string, uint64_t> outcomes;
  int64_t busy_ms = 0;
  uint64_t suspensions = 0, periods = 0, offline = 0, lost_ms = 0, staged = 0, uploaded = 0;
};

}  // namespace

std::string RenderReportHtml(const v1::JobTimeline& t, const ReportOptions& options) {
  const v1::JobStatus& j = t.job();
  const int64_t now = t.now_ms();
  std::string out;
  out.reserve(64 * 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<meta name=\"generator\" content=\"idlepool report\"><title>";
  Appendf(out, "idlepool job %llu", static_cast<unsigned long long>(j.job()));
  if (!j.name().empty()) out += " \xE2\x80\x94 " + EscapeXml(j.name());
  out += "</title><style>";
  out += kCss;
  out += "</style></head>\n<body>";
  Appendf(out, "<h1>Job %llu", static_cast<unsigned long long>(j.job()));
  if (!j.name().empty()) out += " <small>" + EscapeXml(j.name()) + "</small>";
  out += "</h1><p class=\"muted\">Report generated " + FormatUtc(now) +
         " by idlepool (times on the coordinator's clock).</p>\n";

  // Summary.
  out += "<h2>Summary</h2><table class=\"summary\">";
  Row(out, "State", EscapeXml(j.state()));
  std::string tasks;
  Appendf(tasks, "%u: %u succeeded, %u failed, %u cancelled, %u running, %u pending", j.tasks(),
          j.succeeded(), j.failed(), j.cancelled(), j.running(), j.pending());
  Row(out, "Tasks", tasks);
  std::string attempts = Num(j.attempts());
  if (t.truncated()) {
    Appendf(attempts, " (the newest %d are shown below)", t.attempts_size());
  }
  Row(out, "Attempts", attempts);
  Row(out, "Failures", Num(j.failures()));
  Row(out, "Preemptions", Num(j.preemptions()));
  Row(out, "Suspensions", Num(j.suspensions()) + " (attempts frozen for a machine's owner)");
  Row(out, "Machine faults", Num(j.machine_faults()));
  Row(out, "Lost workers / attempts", Num(j.workers_lost()) + " / " + Num(j.attempts_lost()));
  Row(out, "Lost work", FormatDuration(static_cast<int64_t>(j.lost_ms())) +
                            " (since the last checkpoint, preempted or lost attempts)");
  const v1::Transfer& x = j.transfer();
  Row(out, "Bytes moved",
      "staged " + FormatBytes(x.input_bytes()) + " (from cache " + FormatBytes(x.cached_bytes()) +
          ", coordinator " + FormatBytes(x.coordinator_bytes()) + ", peers " +
          FormatBytes(x.peer_bytes()) + "), uploaded " + FormatBytes(x.output_bytes()));
  Row(out, "Submitted", FormatUtc(j.submitted_ms()));
  const bool finished = j.finished_ms() != 0;
  Row(out, "Finished", finished ? FormatUtc(j.finished_ms()) : std::string("running"));
  const int64_t actual_ms = (finished ? j.finished_ms() : now) - j.submitted_ms();
  if (j.submitted_ms() != 0) {
    Row(out, finished ? "Makespan" : "Running for", FormatDuration(actual_ms));
  }
  if (j.has_prediction()) {
    const v1::Prediction& p = j.prediction();
    // Formatted as the actual makespan (whole ms, rounded); the error as the CLI's `status` and
    // its JSON prediction_error: (predicted - actual) / actual, only for a job that ran to the end.
    std::string pred = std::isfinite(p.makespan_s())
                           ? FormatDuration(std::llround(p.makespan_s() * 1000))
                           : std::string("never");
    pred += " predicted";
    if (finished && j.submitted_ms() != 0) {
      pred += ", " + FormatDuration(actual_ms) + " actual";
      if (j.state() == "succeeded" && actual_ms > 0 && std::isfinite(p.makespan_s())) {
        const double actual_s = static_cast<double>(actual_ms) / 1000;
        Appendf(pred, ": prediction error %+.1f%% = (predicted &#8722; actual) / actual",
                100 * (p.makespan_s() - actual_s) / actual_s);
      }
    }
    pred += "; bottleneck " + EscapeXml(p.bottleneck());
    Appendf(pred, ", speedup %.1f of %.1f ideal", p.speedup(), p.ideal_speedup());
    pred += "; " + EscapeXml(p.basis());
    Appendf(pred, " (%u samples, made %s)", p.samples(), FormatUtc(p.made_ms()).c_str());
    Row(out, "Prediction", pred);
  }
  if (!j.profile_key().empty()) {
    Row(out, "Profile key", "<code>" + EscapeXml(j.profile_key()) + "</code>");
  }
  out += "</table>\n";

  out += "<h2>Timeline</h2><div class=\"timeline\">";
  out += RenderTimelineSvg(t, options.svg);
  out += "</div>\n";

  // Workers, in the order of the timeline's lanes (first attempt's start, then name).
  std::map<std::string, WorkerRow> workers;
  std::map<std::string, int64_t> first;
  for (const auto& a : t.attempts()) {
    WorkerRow& w = workers[a.worker()];
    ++w.attempts;
    ++w.outcomes[a.outcome()];
    w.busy_ms += internal::AttemptEnd(a, now) - a.started_ms();
    w.suspensions += a.suspensions();
    w.lost_ms += a.lost_ms();
    w.staged += a.transfer().input_bytes();
    w.uploaded += a.transfer().output_bytes();
    auto [it, fresh] = first.emplace(a.worker(), a.started_ms());
    if (!fresh) it->second = std::min(it->second, a.started_ms());
  }
  for (const auto& p : internal::PeriodsOf(t, internal::WindowOf(t))) {
    auto it = workers.find(p.worker);
    if (it == workers.end()) continue;
    ++(p.suspension ? it->second.periods : it->second.offline);
  }
  std::vector<std::string> order;
  for (const auto& [name, ms] : first) order.push_back(name);
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return first[a] < first[b]; });
  out += "<h2>Workers</h2><table class=\"workers\"><thead><tr><th>Worker</th><th>Attempts</th>"
         "<th>Outcomes</th><th>Busy</th><th>Suspensions</th><th>Owner periods</th>"
         "<th>Offline periods</th><th>Lost work</th><th>Staged</th><th>Uploaded</th></tr>"
         "</thead><tbody>";
  for (const std::string& name : order) {
    const WorkerRow& w = workers[name];
    std::string outcomes;
    for (const auto& [outcome, n] : w.outcomes) {
      if (!outcomes.empty()) outcomes += ", ";
      outcomes += Num(n) + " " + OutcomeCell(outcome);
    }
    out += "<tr><td>" + EscapeXml(name) + "</td><td class=\"n\">" + Num(w.attempts) +
           "</td><td>" + outcomes + "</td><td class=\"n\">" + FormatDuration(w.busy_ms) +
           "</td><td class=\"n\">" + Num(w.suspensions) + "</td><td class=\"n\">" +
           Num(w.periods) + "</td><td class=\"n\">" + Num(w.offline) + "</td><td class=\"n\">" +
           FormatDuration(static_cast<int64_t>(w.lost_ms)) + "</td><td class=\"n\">" +
           FormatBytes(w.staged) + "</td><td class=\"n\">" + FormatBytes(w.uploaded) +
           "</td></tr>";
  }
  out += "</tbody></table>\n";

  // Which log tails fit: the last attempt of each task and every attempt that did not succeed
  // first, then the others, by attempt id within each.
  std::map<uint32_t, std::vector<const v1::TimelineAttempt*>> by_task;
  for (const auto& a : t.attempts()) by_task[a.task()].push_back(&a);
  for (auto& [task, as] : by_task) {
    std::stable_sort(as.begin(), as.end(),
                     [](const auto* a, const auto* b) { return a->attempt() < b->attempt(); });
  }
  std::set<uint64_t> shown_logs;
  {
    std::vector<const v1::TimelineAttempt*> first_pass, second_pass;
    for (const auto& [task, as] : by_task) {
      for (const auto* a : as) {
        const bool important = a == as.back() || a->outcome() != "succeeded";
        (important ? first_pass : second_pass).push_back(a);
      }
    }
    auto by_id = [](const auto* a, const auto* b) { return a->attempt() < b->attempt(); };
    std::stable_sort(first_pass.begin(), first_pass.end(), by_id);
    std::stable_sort(second_pass.begin(), second_pass.end(), by_id);
    size_t budget = options.max_log_bytes;
    for (const auto* pass : {&first_pass, &second_pass}) {
      for (const auto* a : *pass) {
        if (a->log_tail().empty() || a->log_tail().size() > budget) continue;
        budget -= a->log_tail().size();
        shown_logs.insert(a->attempt());
      }
    }
  }

  out += "<h2>Tasks</h2><table class=\"tasks\"><thead><tr><th>Task</th><th>Attempt</th>"
         "<th>Worker</th><th>Outcome</th><th>Started</th><th>Duration</th><th>Exit</th>"
         "<th>Message</th><th>Log tail</th></tr></thead><tbody>";
  const int64_t t0 = internal::WindowOf(t).begin_ms;
  for (const auto& [task, as] : by_task) {
    bool first_row = true;
    for (const auto* a : as) {
      Appendf(out, "<tr class=\"%s\" id=\"attempt-%llu\"><td class=\"n\">",
              first_row ? "task" : "retry", static_cast<unsigned long long>(a->attempt()));
      if (first_row) Appendf(out, "%u", task);
      first_row = false;
      Appendf(out, "</td><td class=\"n\">%llu</td><td>",
              static_cast<unsigned long long>(a->attempt()));
      out += EscapeXml(a->worker()) + "</td><td>" + OutcomeCell(a->outcome());
      if (a->next_attempt() != 0) {
        Appendf(out, " &#8594; <a href=\"#attempt-%llu\">%llu</a>",
                static_cast<unsigned long long>(a->next_attempt()),
                static_cast<unsigned long long>(a->next_attempt()));
      }
      out += "</td><td class=\"n\">+" + FormatDuration(a->started_ms() - t0) +
             "</td><td class=\"n\">" +
             FormatDuration(internal::AttemptEnd(*a, now) - a->started_ms()) +
             "</td><td class=\"n\">";
      if (internal::ExitedOnItsOwn(a->outcome())) Appendf(out, "%d", a->exit_code());
      out += "</td><td>" + EscapeXml(a->message()) + "</td><td>";
      if (a->log_tail().empty()) {
        out += "<span class=\"muted\">none</span>";
      } else if (shown_logs.count(a->attempt())) {
        // Open where the log says why: attempts that failed or timed out.
        const bool open = a->outcome() == "failed" || a->outcome() == "timed_out";
        out += open ? "<details open><summary>" : "<details><summary>";
        out += FormatBytes(a->log_tail().size()) + "</summary><pre>" + EscapeXml(a->log_tail()) +
               "</pre></details>";
      } else {
        out += "<span class=\"muted\">left out (report size limit)</span>";
      }
      out += "</td></tr>";
    }
  }
  out += "</tbody></table>\n</body></html>\n";
  return out;
}

}  // namespace idlepool::report
