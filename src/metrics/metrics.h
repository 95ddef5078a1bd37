// A small metrics registry in the Prometheus text exposition format 0.0.4 (served by the
// coordinator at /metrics; see docs/operations.md "Prometheus metrics").
//
// Counters only go up (since the process started), gauges are set, histograms count
// observations in fixed cumulative buckets (upper bounds given at registration, +Inf added).
// Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and not
// start with "__"; label values are any UTF-8 (escaped on output). Prometheus conventions are the
// caller's job: counters end in _total, units are base units (_seconds, _bytes).
//
// Registering is idempotent: the same name and label set returns the same metric. A name used
// with another type or help text, or an invalid name, is a programming error: it aborts with a
// message. Returned references stay valid for the registry's lifetime.
//
// Thread safety: everything may be called from any thread. Updates are lock-free atomics
// (histograms take a per-histogram mutex so a scrape sees count, sum and buckets agree);
// Render takes the registry's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace idlepool::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(double by = 1);  // by < 0 or NaN is ignored: a counter never goes down
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double by) { value_.fetch_add(by, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `upper_bounds` strictly increasing and finite; +Inf is implied.
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);  // NaN is ignored

  struct Snapshot {
    std::vector<double> upper_bounds;  // without +Inf
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), last = above every bound
  double sum_ = 0;
};

// Bucket bounds for latencies in seconds: 100 us to 10 s, roughly 1-2.5-5 per decade.
std::vector<double> LatencyBuckets();

class Registry {
 public:
  Counter& AddCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& AddGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> upper_bounds, const Labels& labels = {});

  // Runs before each Render (outside the registry's mutex): where gauges computed from state
  // are set. One collector; a second call replaces the first.
  void SetCollector(std::function<void()> collect);

  // Every family in registration order, each with # HELP and # TYPE lines, then its samples in
  // registration order. Ends with a newline.
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<std::unique_ptr<Series>> series;
  };
  Series& Find(const std::string& name, const std::string& help, Type type, const Labels& labels);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::function<void()> collect_;
};

// Exposed for tests: the exposition format's escaping and number formatting.
std::string EscapeLabelValue(const std::string& v);  // \ " and newline
std::string EscapeHelp(const std::string& v);        // \ and newline
std::string FormatValue(double v);                   // integers without exponent, +Inf, NaN

}  // namespace idlepool::metrics
