#include "report/internal.h"

#include <algorithm>
#include <ctime>
#include <map>

namespace idlepool::report::internal {

std::string FormatDuration(int64_t ms) {
  if (ms < 0) return "-" + FormatDuration(-ms);
  std::string out;
  if (ms < 1000) {
    Appendf(out, "%lld ms", static_cast<long long>(ms));
    return out;
  }
  const int64_t s = ms / 1000;
  if (s < 60) {
    if (ms < 10'000 && ms % 1000 != 0) {
      Appendf(out, "%.1f s", static_cast<double>(ms) / 1000);
    } else {
      Appendf(out, "%lld s", static_cast<long long>(s));
    }
  } else if (s < 3600) {
    Appendf(out, "%lld min", static_cast<long long>(s / 60));
    if (s % 60) Appendf(out, " %lld s", static_cast<long long>(s % 60));
  } else if (s < 86400) {
    Appendf(out, "%lld h", static_cast<long long>(s / 3600));
    if (s % 3600 / 60) Appendf(out, " %lld min", static_cast<long long>(s % 3600 / 60));
  } else {
    Appendf(out, "%lld d", static_cast<long long>(s / 86400));
    if (s % 86400 / 3600) Appendf(out, " %lld h", static_cast<long long>(s % 86400 / 3600));
  }
  return out;
}

std::string FormatUtc(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) == nullptr) return "-";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  std::string out;
  if (bytes < 1024) {
    Appendf(out, "%llu B", static_cast<unsigned long long>(bytes));
    return out;
  }
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  Appendf(out, "%.1f %s", v, kUnits[u]);
  return out;
}

int OutcomeIndex(const std::string& outcome) {
  for (int i = 0; i < kOutcomeCount; ++i) {
    if (outcome == kOutcomes[i].outcome) return i;
  }
  return kOutcomeCount;
}

bool ExitedOnItsOwn(const std::string& outcome) {
  return outcome == "succeeded" || outcome == "failed";
}

const OutcomeStyle& StyleOf(int index) {
  return index >= 0 && index < kOutcomeCount ? kOutcomes[index] : kOtherOutcome;
}

int64_t AttemptEnd(const v1::TimelineAttempt& a, int64_t now_ms) {
  int64_t end = a.ended_ms() != 0 ? a.ended_ms() : now_ms;
  return std::max(end, a.started_ms());
}

Window WindowOf(const v1::JobTimeline& t) {
  int64_t lo = t.job().submitted_ms();
  if (lo == 0) {
    for (const auto& a : t.attempts()) {
      if (a.started_ms() != 0 && (lo == 0 || a.started_ms() < lo)) lo = a.started_ms();
    }
    for (const auto& e : t.events()) {
      if (e.at_ms() != 0 && (lo == 0 || e.at_ms() < lo)) lo = e.at_ms();
    }
    if (lo == 0) lo = t.now_ms();
  }
  for (const auto& a : t.attempts()) {
    if (a.started_ms() != 0) lo = std::min(lo, a.started_ms());
  }
  int64_t hi = t.job().finished_ms() != 0 ? t.job().finished_ms() : t.now_ms();
  for (const auto& a : t.attempts()) hi = std::max(hi, AttemptEnd(a, t.now_ms()));
  if (hi <= lo) hi = lo + 1000;
  return {lo, hi};
}

std::vector<Period> PeriodsOf(const v1::JobTimeline& t, const Window& w) {
  // Events in time order (stable: ties keep the coordinator's order), grouped by worker.
  std::vector<const v1::WorkerEvent*> events;
  events.reserve(static_cast<size_t>(t.events_size()));
  for (const auto& e : t.events()) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(),
                   [](const auto* a, const auto* b) { return a->at_ms() < b->at_ms(); });
  struct Open {
    bool owner = false, offline = false;
    Period owner_period, offline_period;
  };
  std::map<std::string, Open> open;
  std::map<std::string, std::vector<Period>> by_worker;
  auto close = [&](bool owner, Open& o, int64_t at) {
    Period& p = owner ? o.owner_period : o.offline_period;
    bool& is_open = owner ? o.owner : o.offline;
    if (!is_open) return;
    is_open = false;
    p.begin_ms = std::max(p.begin_ms, w.begin_ms);
    p.end_ms = std::min(at, w.end_ms);
    if (p.end_ms > p.begin_ms) by_worker[p.worker].push_back(p);
  };
  for (const v1::WorkerEvent* e : events) {
    Open& o = open[e->worker()];
    const std::string& kind = e->kind();
    if (kind == "owner") {
      close(true, o, e->at_ms());
      if (e->state() == "suspend" || e->state() == "vacate") {
        o.owner = true;
        o.owner_period = Period{e->worker(), e->at_ms(), 0, true, e->state(), e->cause(),
                                e->reason()};
      }
    } else if (kind == "connected") {
      close(true, o, e->at_ms());
      close(false, o, e->at_ms());
    } else if (kind == "disconnected" || kind == "lost" || kind == "left") {
      close(true, o, e->at_ms());
      if (o.offline && o.offline_period.state == kind) continue;
      close(false, o, e->at_ms());
      o.offline = true;
      o.offline_period = Period{e->worker(), e->at_ms(), 0, false, kind, "", e->reason()};
    }
  }
  for (auto& [worker, o] : open) {
    close(true, o, w.end_ms);
    close(false, o, w.end_ms);
  }
  std::vector<Period> out;
  for (auto& [worker, ps] : by_worker) {
    std::stable_sort(ps.begin(), ps.end(),
                     [](const Period& a, const Period& b) { return a.begin_ms < b.begin_ms; });
    out.insert(out.end(), ps.begin(), ps.end());
  }
  return out;
}

}  // namespace idlepool::report::internal
