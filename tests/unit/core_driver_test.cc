// The core driver (coordinator/core_driver.h): a batch's records are committed once, before any
// decision reaches the target; a failed commit sends nothing; decisions arrive in order.
#include "coordinator/core_driver.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

struct Log {
  std::vector<std::string> lines;
};

class FakeSink final : public RecordSink {
 public:
  explicit FakeSink(Log& log) : log_(log) {}
  absl::Status Commit(const std::vector<core::Decision>& batch) override {
    log_.lines.push_back("commit " + std::to_string(batch.size()));
    return fail ? absl::InternalError("disk full") : absl::OkStatus();
  }
  bool fail = false;

 private:
  Log& log_;
};

class FakeTarget final : public DecisionTarget {
 public:
  explicit FakeTarget(Log& log) : log_(log) {}
  void Committed(const std::vector<core::Decision>& b) override {
    log_.lines.push_back("committed " + std::to_string(b.size()));
  }
  void Each(const core::Decision& /*d*/) override { ++each; }
  void AttemptCreated(const core::AttemptCreated& a) override {
    log_.lines.push_back("created " + std::to_string(a.attempt));
  }
  void JobChanged(const core::JobChanged& j) override {
    log_.lines.push_back("job " + std::to_string(j.job));
  }
  void WorkerLost(const core::WorkerLost& l) override { log_.lines.push_back("lost " + l.worker); }
  void Assign(const core::AssignAttempt& a) override {
    log_.lines.push_back("assign " + std::to_string(a.attempt));
  }
  void Kill(const core::KillAttempt& k) override {
    log_.lines.push_back("kill " + std::to_string(k.attempt));
  }
  void Ack(const core::AckReport& a) override {
    log_.lines.push_back("ack " + std::to_string(a.attempt));
  }
  void Refuse(const core::RefuseSession& r) override {
    log_.lines.push_back("refuse " + std::to_string(r.session));
  }
  int each = 0;

 private:
  Log& log_;
};

TEST(CoreDriver, CommitsTheRecordsThenHandsOverEveryDecisionInOrder) {
  Log log;
  FakeSink sink(log);
  FakeTarget target(log);
  CoreDriver driver(sink, target);
  core::AttemptCreated created;
  created.attempt = 7;
  core::AssignAttempt assign;
  assign.attempt = 7;
  core::KillAttempt kill;
  kill.attempt = 3;
  std::vector<core::Decision> batch{created, assign, core::TaskChanged{}, kill,
                                    core::JobChanged{2, core::JobState::kRunning}};
  ASSERT_TRUE(driver.Apply(batch).ok());
  EXPECT_EQ(log.lines, (std::vector<std::string>{"commit 5", "committed 5", "created 7", "assign 7",
                                                 "kill 3", "job 2"}));
  EXPECT_EQ(target.each, 5);
}

TEST(CoreDriver, ABatchOfMessagesOnlyCommitsNothing) {
  Log log;
  FakeSink sink(log);
  FakeTarget target(log);
  CoreDriver driver(sink, target);
  core::AckReport ack;
  ack.attempt = 4;
  core::RefuseSession refuse;
  refuse.session = 9;
  ASSERT_TRUE(driver.Apply({ack, refuse}).ok());
  EXPECT_EQ(log.lines, (std::vector<std::string>{"committed 2", "ack 4", "refuse 9"}));
}

TEST(CoreDriver, AFailedCommitSendsNothing) {
  Log log;
  FakeSink sink(log);
  sink.fail = true;
  FakeTarget target(log);
  CoreDriver driver(sink, target);
  core::AssignAttempt assign;
  assign.attempt = 1;
  absl::Status st = driver.Apply({core::WorkerLost{"w"}, assign});
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(log.lines, (std::vector<std::string>{"commit 2"}));
  EXPECT_EQ(target.each, 0);
}

}  // namespace
}  // namespace idlepool::coordinator
