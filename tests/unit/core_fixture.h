// The core tests' fixture (CoreTest: a Scheduler fed events by name, decisions as strings),
// shared by core_test.cc and core_crash_test.cc. Included by test sources only; everything is in
// an anonymous namespace, so each test source has its own copy.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/scheduler.h"
#include "core/types.h"
#include "tests/unit/core_test_util.h"

namespace idlepool::core {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using test::At;
using test::Key;
using test::KillReasonName;
using test::Only;
using test::Out;
using test::Overloaded;

// One line per decision, so whole batches can be asserted exactly and in order.
std::string Str(const Decision& d) {
  return std::visit(Overloaded{
                        [](const AttemptCreated& x) {
                          return "created #" + std::to_string(x.attempt) + " " + Key(x.task) +
                                 " @" + x.worker;
                        },
                        [](const AttemptEnded& x) {
                          return "ended #" + std::to_string(x.attempt) + " " + Key(x.task) + " @" +
                                 x.worker + " " + ToString(x.outcome);
                        },
                        [](const TaskChanged& x) {
                          std::string s = "task " + Key(x.task) + " " + ToString(x.state) +
                                          " f=" + std::to_string(x.failures);
                          if (x.committed_attempt != 0 || !x.outputs.empty()) {
                            s += " commit #" + std::to_string(x.committed_attempt) +
                                 " outputs=" + std::to_string(x.outputs.size());
                          }
                          return s;
                        },
                        [](const JobChanged& x) {
                          return "job " + std::to_string(x.job) + " " + ToString(x.state);
                        },
                        [](const WorkerLost& x) { return "lost " + x.worker; },
                        [](const AttemptSuspended& x) {
                          return "suspended #" + std::to_string(x.attempt) + " " + Key(x.task);
                        },
                        [](const TaskCheckpointed& x) {
                          return "checkpoint " + Key(x.task) + " #" + std::to_string(x.attempt) +
                                 " files=" + std::to_string(x.files.size());
                        },
                        [](const AssignAttempt& x) {
                          return "assign #" + std::to_string(x.attempt) + " " + Key(x.task) + " @" +
                                 x.worker + " s" + std::to_string(x.session);
                        },
                        [](const KillAttempt& x) {
                          return "kill #" + std::to_string(x.attempt) + " @" + x.worker + " s" +
                                 std::to_string(x.session) + " " + KillReasonName(x.reason);
                        },
                        [](const AckReport& x) {
                          return "ack #" + std::to_string(x.attempt) + " @" + x.worker + " s" +
                                 std::to_string(x.session) + (x.accepted ? " ok" : " refused");
                        },
                        [](const RefuseSession& x) {
                          return "refuse " + x.worker + " s" + std::to_string(x.session);
                        },
                    },
                    d);
}

template <class D>
std::vector<std::string> Strs(const std::vector<D>& ds) {
  std::vector<std::string> out;
  for (const D& d : ds) out.push_back(Str(Decision{d}));
  return out;
}

class CoreTest : public ::testing::Test {
 protected:
  std::vector<Decision> Do(const Event& e, int64_t ms) {
    std::vector<Decision> out = s_.Apply(e, At(ms));
    // Every batch: all records before all messages.
    bool seen_message = false;
    for (const Decision& d : out) {
      if (!IsRecord(d)) seen_message = true;
      EXPECT_FALSE(seen_message && IsRecord(d)) << "record after a message: " << Str(d);
    }
    return out;
  }

  std::vector<Decision> Submit(JobId job, uint32_t tasks, int64_t ms = 0, Resources res = {},
                               uint32_t max_attempts = 3, Millis timeout = Millis{0}) {
    return Do(JobSubmitted{job, tasks, res, max_attempts, timeout}, ms);
  }

  std::vector<Decision> Hello(const std::string& worker, SessionId session, uint32_t cpus,
                              int64_t ms = 0, std::vector<AttemptId> held = {},
                              const std::string& boot = "boot1", Resources cap = {}) {
    cap.cpus = cpus;
    return Do(WorkerHello{worker, session, boot, cap, std::move(held)}, ms);
  }

  std::vector<Decision> Report(const std::string& worker, SessionId session, AttemptId attempt,
                               ReportResult result, int64_t ms = 0,
                               std::vector<OutputFile> outputs = {}) {
    AttemptReport r;
    r.worker = worker;
    r.session = session;
    r.attempt = attempt;
    r.result = result;
    r.exit_code = result == ReportResult::kFailed ? 1 : 0;
    r.outputs = std::move(outputs);
    return Do(r, ms);
  }

  std::vector<Decision> Heartbeat(const std::string& worker, SessionId session, int64_t ms) {
    return Do(WorkerHeartbeat{worker, session}, ms);
  }

  std::vector<Decision> TickAt(int64_t ms) { return Do(Tick{}, ms); }

  WorkerView Worker(const std::string& name) const {
    for (const WorkerView& w : s_.Workers()) {
      if (w.worker == name) return w;
    }
    ADD_FAILURE() << "no worker " << name;
    return {};
  }

  JobSummary JobOf(JobId id) const {
    auto j = s_.Job(id);
    EXPECT_TRUE(j.has_value());
    return j.value_or(JobSummary{});
  }

  Scheduler s_{Options{Millis{5000}}};
};

}  // namespace
}  // namespace idlepool::core
