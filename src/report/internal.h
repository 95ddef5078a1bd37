// Helpers shared by the report module's sources (not part of its public API). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "idlepool.pb.h"

namespace idlepool::report::internal {

// Appends printf-formatted text. Never pass untrusted text through `fmt`; append it escaped.
template <typename... Args>
void Appendf(std::string& out, const char* fmt, Args... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n <= 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out.append(buf, static_cast<size_t>(n));
    return;
  }
  const size_t old = out.size();
  out.resize(old + static_cast<size_t>(n) + 1);
  std::snprintf(out.data() + old, static_cast<size_t>(n) + 1, fmt, args...);
  out.resize(old + static_cast<size_t>(n));
}

// "850 ms", "12 s", "3 min 5 s", "2 h 4 min", "1 d 3 h"; negative values get a "-".
std::string FormatDuration(int64_t ms);
// "2025-01-02 03:04:05 UTC" (Unix ms, wall clock); "-" for 0.
std::string FormatUtc(int64_t unix_ms);
// "0 B", "512 B", "1.5 KiB", "3.2 GiB".
std::string FormatBytes(uint64_t bytes);

// The outcomes drawn, in legend order, with their Okabe-Ito colour; index kOutcomeCount is any
// other outcome string.
struct OutcomeStyle {
  const char* outcome;
  const char* fill;
  const char* label;
};
inline constexpr OutcomeStyle kOutcomes[] = {
    {"succeeded", "#009E73", "succeeded"},   {"running", "#0072B2", "running"},
    {"failed", "#D55E00", "failed"},         {"timed_out", "#E69F00", "timed out"},
    {"preempted", "#56B4E9", "preempted"},   {"lost", "#CC79A7", "lost"},
    {"machine_fault", "#F0E442", "machine fault"}, {"cancelled", "#BBBBBB", "cancelled"},
};
inline constexpr int kOutcomeCount = sizeof(kOutcomes) / sizeof(kOutcomes[0]);
inline constexpr OutcomeStyle kOtherOutcome = {"other", "#666666", "other"};
int OutcomeIndex(const std::string& outcome);  // kOutcomeCount when unknown
// Whether an attempt with this outcome ended by exiting on its own (succeeded, failed), so its
// exit code means something; a timed-out, preempted, lost, cancelled, machine-fault or running
// attempt was stopped (or is still running) and its exit code is left blank.
bool ExitedOnItsOwn(const std::string& outcome);
const OutcomeStyle& StyleOf(int index);

// The window drawn: from the submission (or the earliest attempt/event) to the end (finished, or
// now while running, and at least the last attempt's end); end > begin.
struct Window {
  int64_t begin_ms = 0;
  int64_t end_ms = 0;
};
Window WindowOf(const v1::JobTimeline& t);
// An attempt's end on the timeline: ended_ms, or now_ms (not before its start) while it runs.
int64_t AttemptEnd(const v1::TimelineAttempt& a, int64_t now_ms);

// A period of one worker read from its WorkerEvents, clamped to the window.
struct Period {
  std::string worker;
  int64_t begin_ms = 0;
  int64_t end_ms = 0;
  bool suspension = false;  // owner suspend/vacate; otherwise offline (disconnected/lost/left)
  std::string state;        // suspension: suspend or vacate; offline: the event kind
  std::string cause;
  std::string reason;
};
// Suspensions: an owner event with state suspend or vacate until the worker's next owner event,
// connected, disconnected, lost or left. Offline: disconnected/lost/left until the next connected
// (a change of kind starts a new period). Open periods end at the window's end. By worker (in
// event order), then time.
std::vector<Period> PeriodsOf(const v1::JobTimeline& t, const Window& w);

}  // namespace idlepool::report::internal
