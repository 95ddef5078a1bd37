// Availability readers and the Weibull sampler: exact intervals from small synthetic files, every
// error path (message names file, line and field), the real traces in ../shared/data/traces
// (skipped when absent), and determinism and means of the fitted models.

#include "sim/availability.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::sim {

void PrintTo(const Interval& iv, std::ostream* os) {
  *os << "[" << iv.start_s << ", " << iv.end_s << ")";
}

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

// Writes `text` to a file in a temp dir of the running test's own and returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(::testing::TempDir()) / "availability_test" /
                       (std::string(test->test_suite_name()) + "." + test->name());
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  return p.string();
}

std::string TracesDir() { return std::string(IDLEPOOL_SHARED_DATA) + "/traces"; }

// Sorted, non-overlapping, never adjacent, non-empty intervals.
void ExpectCanonical(const Lane& lane) {
  for (size_t i = 0; i < lane.up.size(); ++i) {
    ASSERT_LT(lane.up[i].start_s, lane.up[i].end_s) << lane.name << " interval " << i;
    if (i > 0) {
      ASSERT_LT(lane.up[i - 1].end_s, lane.up[i].start_s) << lane.name << " interval " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Spot JSON

TEST(SpotTrace, LaneIIsUpWhereCountExceedsI) {
  const std::string path = WriteTemp(
      "spot.json", R"({"metadata": {"gap_seconds": 10}, "data": [0, 2, 2, 1, 0, 3]})");
  absl::StatusOr<std::vector<Lane>> lanes = ReadSpotTrace(path);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 3u);
  EXPECT_EQ((*lanes)[0].name, "spot-0");
  EXPECT_EQ((*lanes)[2].name, "spot-2");
  EXPECT_THAT((*lanes)[0].up, ElementsAre(Interval{10, 40}, Interval{50, 60}));
  EXPECT_THAT((*lanes)[1].up, ElementsAre(Interval{10, 30}, Interval{50, 60}));
  EXPECT_THAT((*lanes)[2].up, ElementsAre(Interval{50, 60}));
  EXPECT_DOUBLE_EQ(AvailableFraction(*lanes, 60), (40.0 + 30.0 + 10.0) / 3 / 60);
}

TEST(SpotTrace, AllZeroGivesNoLanes) {
  absl::StatusOr<std::vector<Lane>> lanes = ReadSpotTrace(
      WriteTemp("zero.json", R"({"metadata": {"gap_seconds": 1.5}, "data": [0, 0]})"));
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  EXPECT_TRUE(lanes->empty());
}

struct BadCase {
  const char* name;
  std::string text;
  std::string want;  // after "PATH:"
};

TEST(SpotTrace, ErrorsNameFileLineAndField) {
  const std::vector<BadCase> cases = {
      {"notjson", "{\n \"metadata\": {\"gap_seconds\": 5},\n \"data\": [1,, 2]\n}", "3: not JSON"},
      {"array", "[1, 2]", "1: not a JSON object"},
      {"nogap", "{\"metadata\": {},\n \"data\": [1]}", "1: field 'metadata.gap_seconds': missing"},
      {"nometa", "{\"data\": [1]}", "1: field 'metadata.gap_seconds': missing"},
      {"neggap", "{\"data\": [1],\n\"metadata\": {\n\"gap_seconds\": -5}}",
       "3: field 'metadata.gap_seconds': not a number of seconds in [0.001, 1e7]: -5"},
      {"strgap", "{\"metadata\": {\"gap_seconds\": \"5\"}, \"data\": [1]}",
       "1: field 'metadata.gap_seconds': not a number of seconds in [0.001, 1e7]: \"5\""},
      {"nodata", "{\"metadata\": {\"gap_seconds\": 5}}", "1: field 'data': missing or not an array"},
      {"float", "{\"metadata\": {\"gap_seconds\": 5},\n \"data\": [1,\n 2,\n 1.5]\n}",
       "4: field 'data[2]': not an integer: 1.5"},
      {"string", "{\"metadata\": {\"gap_seconds\": 5}, \"data\": [\"[1]\", \"x\"]}",
       "1: field 'data[0]': not an integer: \"[1]\""},
      {"negative", "{\"metadata\": {\"gap_seconds\": 5},\n \"data\": [\n1, 0,\n -1]}",
       "4: field 'data[2]': negative: -1"},
  };
  for (const BadCase& c : cases) {
    const std::string path = WriteTemp(std::string(c.name) + ".json", c.text);
    absl::StatusOr<std::vector<Lane>> lanes = ReadSpotTrace(path);
    ASSERT_FALSE(lanes.ok()) << c.name;
    EXPECT_EQ(lanes.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(lanes.status().message()), StartsWith(path + ":" + c.want)) << c.name;
  }
}

TEST(SpotTrace, RefusesTooManyLanesAndMissingFile) {
  absl::StatusOr<std::vector<Lane>> lanes = ReadSpotTrace(
      WriteTemp("huge.json", R"({"metadata": {"gap_seconds": 5}, "data": [1, 1000001]})"));
  ASSERT_FALSE(lanes.ok());
  EXPECT_EQ(lanes.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(lanes.status().message()), HasSubstr("1000001 lanes"));

  lanes = ReadSpotTrace(WriteTemp("present.json", "") + ".absent");
  EXPECT_EQ(lanes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(lanes.status().message()), HasSubstr("present.json.absent"));
}

// ---------------------------------------------------------------------------------------------
// STUNner

constexpr int64_t kT0 = 1'400'000'000'000;  // ms
constexpr int64_t kWeek = 604'800'000;      // ms

std::string Week(const std::string& user, int first, int64_t start, const std::string& ds) {
  return user + " " + std::to_string(first) + " " + std::to_string(start) + " 2 " + ds + "\n";
}

TEST(StunnerTrace, MergesWeeksPerUserAndJoinsAdjacentIntervals) {
  const std::string text =
      // b's second week first: weeks are merged in time order, not file order.
      Week("b", 1, kT0 + kWeek, "1000 604799000") +
      Week("a", 1, kT0, "3600000 7200000 594000000") +
      Week("b", 0, kT0, "604799000 1000") +
      // c's only (so last) week ends after one day: the measurement stopped.
      Week("c", 1, kT0 + 5000, "86400000") + "\n";
  absl::StatusOr<std::vector<Lane>> lanes = ReadStunnerTrace(WriteTemp("stunner.txt", text));
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 3u);
  EXPECT_EQ((*lanes)[0].name, "a");
  EXPECT_THAT((*lanes)[0].up, ElementsAre(Interval{0, 3600}, Interval{10800, 604800}));
  EXPECT_EQ((*lanes)[1].name, "b");
  EXPECT_THAT((*lanes)[1].up, ElementsAre(Interval{604799, 604801}));
  EXPECT_EQ((*lanes)[2].name, "c");
  EXPECT_THAT((*lanes)[2].up, ElementsAre(Interval{5, 86405}));
}

TEST(StunnerTrace, ToleratesOneSecondOffAWeek) {
  absl::StatusOr<std::vector<Lane>> lanes = ReadStunnerTrace(WriteTemp(
      "tolerance.txt", Week("u", 0, kT0, "604000000 801000") +  // 1 s over
                           Week("u", 1, kT0 + kWeek, "604799000")));  // 1 s short, not last: ok
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 1u);
  // The 1 s overlap of the two weeks is joined.
  EXPECT_THAT((*lanes)[0].up, ElementsAre(Interval{604000, 1209599}));
}

TEST(StunnerTrace, ErrorsNameFileLineAndField) {
  const std::string ok = Week("u", 1, kT0, "604800000");
  const std::vector<BadCase> cases = {
      {"start", ok + "v 1 x 2 604800000\n", "2: field 3 ('week_start_epoch_ms'): not an integer: 'x'"},
      {"state", "u 2 1 2 604800000\n", "1: field 2 ('first_state'): not 0 or 1: '2'"},
      {"offset", "u 1 1 2.5 604800000\n", "1: field 4 ('utc_offset_hours'): not an integer"},
      {"offset_range", "u 1 1 99 604800000\n", "1: field 4 ('utc_offset_hours'): not an integer"},
      {"zero_d", "u 1 1 2 1000 0 604799000\n", "1: field 6 ('d2'): not a positive integer"},
      {"neg_d", "u 1 1 2 -1000 604801000\n", "1: field 5 ('d1'): not a positive integer"},
      {"text_d", ok + "\nu 1 1 2 604800000 1x\n", "3: field 6 ('d2'): not a positive integer"},
      {"no_d", "u 1 1 2\n", "1: field 5 ('d1'): missing"},
      {"no_start", "u 1\n", "1: field 3 ('week_start_epoch_ms'): missing"},
      {"long", "u 1 1 2 604800000 1001\n", "1: durations sum to 604801001 ms, over 168 h"},
      {"short_not_last", Week("u", 1, kT0, "604798999") + Week("u", 1, kT0 + kWeek, "604800000"),
       "1: durations sum to 604798999 ms, not 168 h"},
      {"overlap", Week("u", 1, kT0, "604800000") + Week("u", 1, kT0 + kWeek - 1001, "604800000"),
       "2: user 'u' week starts inside the week of line 1"},
  };
  for (const BadCase& c : cases) {
    const std::string path = WriteTemp(std::string(c.name) + ".txt", c.text);
    absl::StatusOr<std::vector<Lane>> lanes = ReadStunnerTrace(path);
    ASSERT_FALSE(lanes.ok()) << c.name;
    EXPECT_EQ(lanes.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(lanes.status().message()), StartsWith(path + ":" + c.want)) << c.name;
  }
}

// ---------------------------------------------------------------------------------------------
// FTA event_trace.tab

TEST(FtaEventTrace, OneLanePerNodeInNumericOrder) {
  const std::string text =
      "event_id  component_id node_id  platform_id   node_name     event_type   "
      "event_start_time     event_stop_time  event_end_reason\n"
      "    0\t       0\t     12\t    3\t  10.000\t  0\t\t100\t\t200\t  8000\n"
      "  1 0 12 3 10.000 1   200  500 4022\n"
      "2\t0\t12\t3\t10.000\t1\t500\t600\t2\textra trailing fields\r\n"
      "3 0 7 3 11.000 1 150 160 2\n"
      "\n"
      "4 0 9 3 12.000 0 120 130 2\n";
  absl::StatusOr<std::vector<Lane>> lanes = ReadFtaEventTrace(WriteTemp("events.tab", text));
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 3u);
  EXPECT_EQ((*lanes)[0].name, "7");
  EXPECT_THAT((*lanes)[0].up, ElementsAre(Interval{50, 60}));
  EXPECT_EQ((*lanes)[1].name, "9");
  EXPECT_TRUE((*lanes)[1].up.empty());
  EXPECT_EQ((*lanes)[2].name, "12");
  EXPECT_THAT((*lanes)[2].up, ElementsAre(Interval{100, 500}));  // 200-500 and 500-600 joined
}

TEST(FtaEventTrace, FirstLineIsDataWhenNumeric) {
  absl::StatusOr<std::vector<Lane>> lanes =
      ReadFtaEventTrace(WriteTemp("noheader.tab", "0 0 5 1 n 1 10 20 0\n1 0 5 1 n 1 15 30 0\n"));
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  ASSERT_EQ(lanes->size(), 1u);
  EXPECT_THAT((*lanes)[0].up, ElementsAre(Interval{0, 20}));  // overlapping events joined
}

TEST(FtaEventTrace, ErrorsNameFileLineAndField) {
  const std::string header =
      "event_id component_id node_id platform_id node_name event_type event_start_time "
      "event_stop_time event_end_reason\n";
  const std::vector<BadCase> cases = {
      {"type", header + "0 0 5 1 n 2 10 20 0\n", "2: field 6 ('event_type'): not 0 or 1: '2'"},
      {"node", header + "0 0 5 1 n 1 10 20 0\n1 0 x5 1 n 1 10 20 0\n",
       "3: field 3 ('node_id'): not an integer: 'x5'"},
      {"start", header + "0 0 5 1 n 1 1e3 20 0\n",
       "2: field 7 ('event_start_time'): not an integer: '1e3'"},
      {"stop", header + "0 0 5 1 n 1 30 20 0\n",
       "2: field 8 ('event_stop_time'): before event_start_time: 20 < 30"},
      {"short", header + "0 0 5 1 n 1 10 20\n", "2: field 9 ('event_end_reason'): missing"},
      // Only the first line may be a header.
      {"header2", header + header, "2: field 1 ('event_id'): not an integer: 'event_id'"},
  };
  for (const BadCase& c : cases) {
    const std::string path = WriteTemp(std::string(c.name) + ".tab", c.text);
    absl::StatusOr<std::vector<Lane>> lanes = ReadFtaEventTrace(path);
    ASSERT_FALSE(lanes.ok()) << c.name;
    EXPECT_EQ(lanes.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(lanes.status().message()), StartsWith(path + ":" + c.want)) << c.name;
  }
}

// ---------------------------------------------------------------------------------------------
// AvailableFraction

TEST(AvailableFraction, ClipsToHorizonAndAveragesOverLanes) {
  const std::vector<Lane> lanes = {
      {"a", {{0, 10}, {20, 150}}},  // 10 + 80 within [0, 100)
      {"b", {}},
  };
  EXPECT_DOUBLE_EQ(AvailableFraction(lanes, 100), 0.45);
  EXPECT_DOUBLE_EQ(AvailableFraction({}, 100), 0);
  EXPECT_DOUBLE_EQ(AvailableFraction(lanes, 0), 0);
  EXPECT_DOUBLE_EQ(LastUpEnd(lanes), 150);
}

// ---------------------------------------------------------------------------------------------
// Weibull models

double WeibullMean(double shape, double scale) { return scale * std::tgamma(1 + 1 / shape); }

TEST(WeibullLanes, UnknownModelListsKnownOnes) {
  std::mt19937_64 rng(1);
  absl::StatusOr<std::vector<Lane>> lanes = SampleWeibullLanes("condor", 1, 100, rng);
  ASSERT_FALSE(lanes.ok());
  EXPECT_EQ(lanes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(lanes.status().message()),
              AllOf(HasSubstr("'condor'"),
                    HasSubstr("nd07cpu, microsoft99, overnet03, skype06, g5k06, lanl05")));
  EXPECT_FALSE(SampleWeibullLanes("nd07cpu", 1, 0, rng).ok());
  EXPECT_FALSE(SampleWeibullLanes("nd07cpu", 1, INFINITY, rng).ok());
  EXPECT_FALSE(SampleWeibullLanes("nd07cpu", -1, 100, rng).ok());
}

TEST(WeibullLanes, SameSeedSameLanesBitForBit) {
  for (const WeibullModel& m : KnownWeibullModels()) {
    std::mt19937_64 a(42), b(42), c(43);
    absl::StatusOr<std::vector<Lane>> la = SampleWeibullLanes(m.name, 20, 1e7, a);
    absl::StatusOr<std::vector<Lane>> lb = SampleWeibullLanes(m.name, 20, 1e7, b);
    absl::StatusOr<std::vector<Lane>> lc = SampleWeibullLanes(m.name, 20, 1e7, c);
    ASSERT_TRUE(la.ok() && lb.ok() && lc.ok()) << m.name;
    EXPECT_EQ(*la, *lb) << m.name;  // operator== compares doubles exactly
    EXPECT_NE(*la, *lc) << m.name;
    EXPECT_EQ((*la)[3].name, std::string(m.name) + "-3");
    for (const Lane& lane : *la) {
      ExpectCanonical(lane);
      ASSERT_FALSE(lane.up.empty()) << lane.name;
      EXPECT_EQ(lane.up.front().start_s, 0) << lane.name << ": every lane starts up";
      EXPECT_LE(lane.up.back().end_s, 1e7) << lane.name;
    }
  }
}

TEST(WeibullLanes, MeanUpAndOutageDurationsMatchTheModel) {
  constexpr double kHour = 3600;
  for (const WeibullModel& m : KnownWeibullModels()) {
    const double up_mean = WeibullMean(m.up_shape, m.up_scale_h) * kHour;
    const double out_mean = WeibullMean(m.outage_shape, m.outage_scale_h) * kHour;
    const double horizon = 2000 * (up_mean + out_mean);  // ~2000 cycles per lane
    std::mt19937_64 rng(7);
    absl::StatusOr<std::vector<Lane>> lanes = SampleWeibullLanes(m.name, 200, horizon, rng);
    ASSERT_TRUE(lanes.ok()) << lanes.status();
    double up_sum = 0, out_sum = 0;
    int64_t up_n = 0, out_n = 0;
    for (const Lane& lane : *lanes) {
      // Interior periods only: the first starts at a random phase, the last is clipped.
      for (size_t i = 1; i + 1 < lane.up.size(); ++i) {
        up_sum += lane.up[i].end_s - lane.up[i].start_s;
        ++up_n;
      }
      for (size_t i = 1; i < lane.up.size(); ++i) {
        out_sum += lane.up[i].start_s - lane.up[i - 1].end_s;
        ++out_n;
      }
    }
    ASSERT_GT(up_n, 100'000) << m.name;
    EXPECT_NEAR(up_sum / up_n / up_mean, 1.0, 0.15) << m.name << " seed 7";
    EXPECT_NEAR(out_sum / out_n / out_mean, 1.0, 0.15) << m.name << " seed 7";
    EXPECT_NEAR(AvailableFraction(*lanes, horizon), up_mean / (up_mean + out_mean), 0.05)
        << m.name << " seed 7";
  }
}

// ---------------------------------------------------------------------------------------------
// Real traces (../shared/data/traces), skipped when absent.

void Report(const std::string& what, const std::vector<Lane>& lanes, double horizon_s) {
  std::cout << "  " << what << ": " << lanes.size() << " lanes, horizon " << horizon_s / 86400
            << " days, available fraction " << AvailableFraction(lanes, horizon_s) << "\n";
}

TEST(RealTraces, SpotFilesAllParse) {
  const fs::path dir = fs::path(TracesDir()) / "spot";
  if (!fs::is_directory(dir)) {
    GTEST_SKIP() << "spot traces not found at " << dir
                 << " (they live outside the repository, in ../shared/data); skipping";
  }
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++files;
    absl::StatusOr<std::vector<Lane>> lanes = ReadSpotTrace(e.path().string());
    ASSERT_TRUE(lanes.ok()) << lanes.status();
    // The directory says how many nodes were requested: "4-node" has lanes spot-0..spot-3.
    const std::string nodes_dir = e.path().parent_path().parent_path().filename().string();
    const int want = std::stoi(nodes_dir.substr(0, nodes_dir.find('-')));
    EXPECT_EQ(lanes->size(), static_cast<size_t>(want)) << e.path();
    for (const Lane& lane : *lanes) ExpectCanonical(lane);
    const double horizon = LastUpEnd(*lanes);
    EXPECT_GT(horizon, 86400) << e.path();  // each series spans more than a day
    Report(e.path().lexically_relative(dir).string(), *lanes, horizon);
  }
  EXPECT_GE(files, 1);
}

TEST(RealTraces, StunnerHas776Phones) {
  const std::string path = TracesDir() + "/stunner/peersim_session_100.txt";
  if (!fs::exists(path)) {
    GTEST_SKIP() << "STUNner trace not found at " << path
                 << " (it lives outside the repository, in ../shared/data); skipping";
  }
  absl::StatusOr<std::vector<Lane>> lanes = ReadStunnerTrace(path);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  EXPECT_EQ(lanes->size(), 776u);
  for (const Lane& lane : *lanes) ExpectCanonical(lane);
  const double horizon = LastUpEnd(*lanes);
  // Weeks run from April to November 2014 (216 days); the last phone online is seen on day 178.
  EXPECT_GT(horizon, 170 * 86400.0);
  EXPECT_LE(horizon, 216 * 86400.0);
  // Phones are online about a quarter of their measured weeks, and each is measured only some
  // weeks, so over the whole span the fraction is small.
  const double fraction = AvailableFraction(*lanes, horizon);
  EXPECT_GT(fraction, 0.01);
  EXPECT_LT(fraction, 0.25);
  Report("stunner", *lanes, horizon);
}

TEST(RealTraces, LanlHas3577Nodes) {
  const std::string path = TracesDir() + "/fta/lanl05_event_trace.tab";
  if (!fs::exists(path)) {
    GTEST_SKIP() << "LANL trace not found at " << path
                 << " (it lives outside the repository, in ../shared/data); skipping";
  }
  absl::StatusOr<std::vector<Lane>> lanes = ReadFtaEventTrace(path);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  EXPECT_EQ(lanes->size(), 3577u);
  for (const Lane& lane : *lanes) ExpectCanonical(lane);
  const double horizon = LastUpEnd(*lanes);
  EXPECT_GT(horizon, 9 * 365 * 86400.0);  // 1996-2005
  EXPECT_LT(horizon, 11 * 365 * 86400.0);
  // Nodes are available nearly all the time they are in the trace, but each is in it for only
  // part of the ten years, and lanes do not separate "not observed" from "down".
  const double fraction = AvailableFraction(*lanes, horizon);
  EXPECT_GT(fraction, 0.05);
  EXPECT_LT(fraction, 0.5);
  Report("lanl05", *lanes, horizon);
}

}  // namespace
}  // namespace idlepool::sim
