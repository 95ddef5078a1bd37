// The metrics registry and its text exposition format (src/metrics/metrics.h).
#include "metrics/metrics.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::metrics {
namespace {

TEST(Metrics, RendersHelpTypeAndSamplesInRegistrationOrder) {
  Registry r;
  r.AddCounter("x_requests_total", "Requests.", {{"code", "200"}}).Inc(3);
  r.AddCounter("x_requests_total", "Requests.", {{"code", "500"}}).Inc();
  r.AddGauge("x_temperature_celsius", "Heat.").Set(41.5);
  EXPECT_EQ(r.Render(),
            "# HELP x_requests_total Requests.\n"
            "# TYPE x_requests_total counter\n"
            "x_requests_total{code=\"200\"} 3\n"
            "x_requests_total{code=\"500\"} 1\n"
            "# HELP x_temperature_celsius Heat.\n"
            "# TYPE x_temperature_celsius gauge\n"
            "x_temperature_celsius 41.5\n");
}

TEST(Metrics, SameNameAndLabelsIsTheSameMetric) {
  Registry r;
  Counter& a = r.AddCounter("c_total", "C.", {{"k", "v"}});
  Counter& b = r.AddCounter("c_total", "C.", {{"k", "v"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &r.AddCounter("c_total", "C.", {{"k", "w"}}));
}

TEST(Metrics, CounterNeverGoesDown) {
  Counter c;
  c.Inc(2);
  c.Inc(-5);
  c.Inc(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.Value(), 2);
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInf) {
  Registry r;
  Histogram& h = r.AddHistogram("lat_seconds", "Latency.", {0.1, 1}, {{"op", "commit"}});
  h.Observe(0.05);
  h.Observe(0.1);  // on the bound: in the le="0.1" bucket
  h.Observe(0.5);
  h.Observe(7);
  EXPECT_EQ(r.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"commit\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{op=\"commit\",le=\"1\"} 3\n"
            "lat_seconds_bucket{op=\"commit\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{op=\"commit\"} 7.65\n"
            "lat_seconds_count{op=\"commit\"} 4\n");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  Registry r;
  r.AddGauge("g", "a \\ b\nc", {{"worker", "we\"ird\\na\nme"}}).Set(1);
  EXPECT_EQ(r.Render(),
            "# HELP g a \\\\ b\\nc\n"
            "# TYPE g gauge\n"
            "g{worker=\"we\\\"ird\\\\na\\nme\"} 1\n");
}

TEST(Metrics, FormatsNumbers) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(12345678901.0), "12345678901");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(Metrics, CollectorRunsBeforeEachRender) {
  Registry r;
  Gauge& g = r.AddGauge("pool_slots", "Slots.");
  int n = 0;
  r.SetCollector([&] { g.Set(++n); });
  EXPECT_NE(r.Render().find("pool_slots 1\n"), std::string::npos);
  EXPECT_NE(r.Render().find("pool_slots 2\n"), std::string::npos);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  Registry r;
  Counter& c = r.AddCounter("n_total", "N.");
  Histogram& h = r.AddHistogram("h_seconds", "H.", LatencyBuckets());
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        h.Observe(0.001);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.Value(), 40000);
  EXPECT_EQ(h.Read().count, 40000u);
}

TEST(MetricsDeathTest, InvalidNamesAndTypeClashesAbort) {
  Registry r;
  EXPECT_DEATH(r.AddCounter("bad-name", "x"), "invalid metric name");
  EXPECT_DEATH(r.AddGauge("g", "x", {{"__reserved", "v"}}), "invalid label name");
  r.AddCounter("c_total", "C.");
  EXPECT_DEATH(r.AddGauge("c_total", "C."), "another type");
}

}  // namespace
}  // namespace idlepool::metrics
