// The workers table (cli/workers_table.h) fitted to a terminal's width, and the transfer meter's
// line (cli/transfer_meter.h).
#include <sstream>
#include <string>
#include <vector>

#include "cli/progress.h"
#include "cli/transfer_meter.h"
#include "cli/workers_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::ListWorkersReply Pool() {
  v1::ListWorkersReply r;
  for (int i = 0; i < 3; ++i) {
    v1::WorkerInfo* w = r.add_workers();
    w->set_worker("laptop-" + std::to_string(i));
    w->set_hostname("laptop-" + std::to_string(i) + ".lab.example.org");
    w->set_state("connected");
    w->set_activity("idle");
    w->mutable_capacity()->set_cpus(8);
    w->set_sandbox("userns");
    w->set_last_seen_ms_ago(1200);
    w->mutable_link()->set_rtt_ms(0.4);
    w->mutable_link()->set_down_bytes_per_s(112'000'000);
    w->mutable_link()->set_up_bytes_per_s(98'000'000);
    w->set_cpu_score(812);
    w->set_owner_state("unknown");
    w->set_owner_reason(
        "not starting: owner activity unknown: no input reading and no usable "
        "CPU load reading");
  }
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(WorkersTable, WideHasEveryColumnAndTheWholeReason) {
  const std::string t = WorkersTable(Pool(), 0);
  const auto lines = Lines(t);
  ASSERT_EQ(lines.size(), 4u);
  for (const char* h : {"WORKER", "HOST", "STATE", "ACTIVITY", "SLOTS", "BUSY", "GPUS", "SANDBOX",
                        "SEEN", "LINK", "CPU", "UP", "OWNER"}) {
    EXPECT_THAT(lines[0], HasSubstr(h));
  }
  EXPECT_THAT(lines[1], HasSubstr("no usable CPU load reading)"));
  EXPECT_GT(VisibleWidth(lines[1]), 160);
}

TEST(WorkersTable, FitsATerminalKeepingTheColumnsThatMatter) {
  for (int width : {60, 80, 100, 132}) {
    const auto lines = Lines(WorkersTable(Pool(), width));
    ASSERT_EQ(lines.size(), 4u);
    for (const std::string& l : lines) EXPECT_LE(VisibleWidth(l), width) << width << ": " << l;
    for (const char* h : {"WORKER", "STATE", "ACTIVITY", "BUSY", "OWNER"}) {
      EXPECT_THAT(lines[0], HasSubstr(h)) << width;
    }
    EXPECT_THAT(lines[1], HasSubstr("laptop-0")) << width;
    EXPECT_THAT(lines[1], HasSubstr("unknown")) << width;
  }
  // The least useful columns go first: at 80, no UP or LINK.
  const auto narrow = Lines(WorkersTable(Pool(), 80));
  EXPECT_THAT(narrow[0], Not(HasSubstr(" UP")));
  EXPECT_THAT(narrow[0], Not(HasSubstr("LINK")));
}

TEST(TransferMeter, LineHasBytesRateAndTimeLeft) {
  const std::string l = MeterLine("uploading inputs", 100ull << 20, 400ull << 20, 10, 100);
  EXPECT_THAT(l, HasSubstr("uploading inputs  100.0 MiB / 400.0 MiB  25%"));
  EXPECT_THAT(l, HasSubstr("10.0 MiB/s"));
  EXPECT_THAT(l, HasSubstr("30s left"));
  EXPECT_LE(VisibleWidth(MeterLine("uploading inputs", 1, 400ull << 20, 10, 40)), 40);
  // Nothing moved yet: no rate, no time left.
  EXPECT_THAT(MeterLine("fetching outputs", 0, 1000, 0, 100), Not(HasSubstr("/s")));
  EXPECT_EQ(MeterSummary("uploaded inputs:", 400ull << 20, 32),
            "uploaded inputs: 400.0 MiB in 32.0 s (12.5 MiB/s)");
}

}  // namespace
}  // namespace idlepool::cli
