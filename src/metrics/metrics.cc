#include "metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace idlepool::metrics {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "metrics registry: %s\n", what.c_str());
  std::abort();
}

bool ValidName(const std::string& n, bool label) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                       (!label && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return !(label && n.rfind("__", 0) == 0);
}

std::string LabelText(const Labels& labels, const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra_name.empty()) {
    if (!first) out += ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

}  // namespace

void Counter::Inc(double by) {
  if (!(by >= 0)) return;
  value_.fetch_add(by, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1])) {
      Die("histogram bounds must be finite and strictly increasing");
    }
  }
}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard lock(mu_);
  ++counts_[i];
  sum_ += v;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,     10};
}

Registry::Series& Registry::Find(const std::string& name, const std::string& help, Type type,
                                 const Labels& labels) {
  if (!ValidName(name, false)) Die("invalid metric name '" + name + "'");
  for (const auto& [k, v] : labels) {
    if (!ValidName(k, true) || k == "le") Die("invalid label name '" + k + "' on " + name);
  }
  std::lock_guard lock(mu_);
  Family* fam = nullptr;
  for (auto& f : families_) {
    if (f->name == name) fam = f.get();
  }
  if (!fam) {
    families_.push_back(std::make_unique<Family>(Family{name, help, type, {}}));
    fam = families_.back().get();
  } else if (fam->type != type || fam->help != help) {
    Die("metric '" + name + "' registered again with another type or help");
  }
  for (auto& s : fam->series) {
    if (s->labels == labels) return *s;
  }
  fam->series.push_back(std::make_unique<Series>());
  fam->series.back()->labels = labels;
  return *fam->series.back();
}

Counter& Registry::AddCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  Series& s = Find(name, help, Type::kCounter, labels);
  std::lock_guard lock(mu_);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Registry::AddGauge(const std::string& name, const std::string& help,
                          const Labels& labels) {
  Series& s = Find(name, help, Type::kGauge, labels);
  std::lock_guard lock(mu_);
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Registry::AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> upper_bounds, const Labels& labels) {
  Series& s = Find(name, help, Type::kHistogram, labels);
  std::lock_guard lock(mu_);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  return *s.histogram;
}

void Registry::SetCollector(std::function<void()> collect) {
  std::lock_guard lock(mu_);
  collect_ = std::move(collect);
}

std::string Registry::Render() const {
  std::function<void()> collect;
  {
    std::lock_guard lock(mu_);
    collect = collect_;
  }
  if (collect) collect();
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP " + f->name + " " + EscapeHelp(f->help) + "\n";
    out += "# TYPE " + f->name + " " +
           (f->type == Type::kCounter ? "counter"
            : f->type == Type::kGauge ? "gauge"
                                      : "histogram") +
           "\n";
    for (const auto& s : f->series) {
      if (s->counter) {
        out += f->name + LabelText(s->labels) + " " + FormatValue(s->counter->Value()) + "\n";
      } else if (s->gauge) {
        out += f->name + LabelText(s->labels) + " " + FormatValue(s->gauge->Value()) + "\n";
      } else if (s->histogram) {
        const Histogram::Snapshot h = s->histogram->Read();
        for (size_t i = 0; i < h.cumulative.size(); ++i) {
          const std::string le =
              i < h.upper_bounds.size() ? FormatValue(h.upper_bounds[i]) : "+Inf";
          out += f->name + "_bucket" + LabelText(s->labels, "le", le) + " " +
                 FormatValue(static_cast<double>(h.cumulative[i])) + "\n";
        }
        out += f->name + "_sum" + LabelText(s->labels) + " " + FormatValue(h.sum) + "\n";
        out += f->name + "_count" + LabelText(s->labels) + " " +
               FormatValue(static_cast<double>(h.count)) + "\n";
      }
    }
  }
  return out;
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace idlepool::metrics
