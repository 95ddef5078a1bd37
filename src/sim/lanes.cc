#include "sim/lanes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace idlepool::sim {

bool IsUp(const SimWorker& w, double t) {
  if (w.always_up) return true;
  double x = t + w.phase_s;
  if (w.period_s > 0) x = std::fmod(x, w.period_s);
  auto it = std::upper_bound(w.up.begin(), w.up.end(), x,
                             [](double v, const Interval& i) { return v < i.start_s; });
  if (it == w.up.begin()) return false;
  --it;
  return x < it->end_s;
}

double NextChange(const SimWorker& w, double t) {
  if (w.always_up) return std::numeric_limits<double>::infinity();
  const double x0 = t + w.phase_s;
  double base = 0, x = x0;
  if (w.period_s > 0) {
    base = std::floor(x0 / w.period_s) * w.period_s;
    x = x0 - base;
  }
  for (int wrap = 0; wrap < 2; ++wrap) {
    for (const Interval& i : w.up) {
      if (i.start_s > x) return base + i.start_s - w.phase_s;
      if (i.end_s > x) return base + i.end_s - w.phase_s;
    }
    if (w.period_s <= 0) break;
    base += w.period_s;
    x = -1;  // the next period: its first boundary
  }
  return std::numeric_limits<double>::infinity();
}

double MakespanLowerBound(const std::vector<SimWorker>& workers, const std::vector<SimJob>& jobs) {
  double work = 0, longest = 0, fastest = 0;
  for (const SimJob& j : jobs) {
    for (double s : j.task_seconds) {
      work += s * j.resources.cpus;
      longest = std::max(longest, s);
    }
  }
  for (const SimWorker& w : workers) fastest = std::max(fastest, w.speed);
  const double floor_s = fastest > 0 ? longest / fastest : 0;
  if (work <= 0) return floor_s;
  // Capacity steps: (time, +-rate). Always-up workers add a constant rate.
  double constant = 0;
  std::vector<std::pair<double, double>> steps;
  double horizon = 0;
  for (const SimWorker& w : workers) {
    if (!w.always_up && w.period_s > 0) horizon = std::max(horizon, w.period_s);
    if (!w.always_up) {
      for (const Interval& i : w.up) horizon = std::max(horizon, i.end_s);
    }
  }
  // Sweep window by window (a window is one period of the longest lane) until the work fits.
  const double window = horizon > 0 ? horizon : 86400.0;
  double done = 0;
  for (int k = 0; k < 1'000'000; ++k) {
    const double t0 = window * k, t1 = window * (k + 1);
    steps.clear();
    constant = 0;
    for (const SimWorker& w : workers) {
      const double rate = w.speed * w.slots;
      if (w.always_up) {
        constant += rate;
        continue;
      }
      // Up intervals of this worker that meet [t0, t1), in simulation time.
      auto add = [&](double a, double b) {
        a = std::max(a, t0);
        b = std::min(b, t1);
        if (a < b) {
          steps.push_back({a, rate});
          steps.push_back({b, -rate});
        }
      };
      if (w.period_s > 0) {
        const double first = std::floor((t0 + w.phase_s) / w.period_s);
        for (double p = first; p * w.period_s - w.phase_s < t1; p += 1) {
          const double base = p * w.period_s - w.phase_s;
          for (const Interval& i : w.up) add(base + i.start_s, base + i.end_s);
        }
      } else {
        for (const Interval& i : w.up) add(i.start_s - w.phase_s, i.end_s - w.phase_s);
      }
    }
    std::sort(steps.begin(), steps.end());
    double t = t0, rate = constant;
    for (size_t i = 0; i <= steps.size(); ++i) {
      const double next = i < steps.size() ? steps[i].first : t1;
      const double gain = rate * (next - t);
      if (done + gain >= work && rate > 0) return std::max(floor_s, t + (work - done) / rate);
      done += gain;
      t = next;
      if (i < steps.size()) rate += steps[i].second;
    }
    if (constant <= 0 && steps.empty() && k > 0) break;  // nothing ever comes up again
    if (k == 9999 && done > 0) {
      // Ten thousand windows in and still short (tiny windows or enormous work): go on at the
      // average rate so far, which the periodic lanes repeat.
      return std::max(floor_s, t1 + (work - done) / (done / t1));
    }
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace idlepool::sim
