// The store conformance fixture: one suite for every store backend (SQLite, memory). Shared by
// store_conformance_test.cc and store_paging_test.cc (one executable, store_test); each file
// instantiates its suites over Backends().
//
// Every durability test "reopens" the store before checking: for SQLite that closes the file and
// opens it again, for the memory store it is the same object, so both must give the same answers.
#pragma once

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/scheduler.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"

// Equality and printing for the plain records, so failures show both sides.
namespace idlepool::core {
inline const char* Name(TaskState s) {
  static const char* n[] = {"pending", "running", "succeeded", "failed", "cancelled"};
  return n[static_cast<int>(s)];
}
inline const char* Name(JobState s) {
  static const char* n[] = {"running", "succeeded", "failed", "cancelled"};
  return n[static_cast<int>(s)];
}
inline const char* Name(AttemptOutcome o) {
  static const char* n[] = {"running",   "succeeded", "failed",   "timed_out",
                            "preempted", "lost",      "cancelled"};
  return n[static_cast<int>(o)];
}
inline void PrintTo(TaskState s, std::ostream* os) { *os << Name(s); }
inline void PrintTo(JobState s, std::ostream* os) { *os << Name(s); }
inline void PrintTo(AttemptOutcome o, std::ostream* os) { *os << Name(o); }
inline void PrintTo(const TaskKey& t, std::ostream* os) { *os << t.job << "/" << t.index; }
inline void PrintTo(const JobCounters& c, std::ostream* os) {
  *os << "{attempts=" << c.attempts << " failures=" << c.failures
      << " preemptions=" << c.preemptions << " lost=" << c.lost << "}";
}
inline bool operator==(const RestoredTask& a, const RestoredTask& b) {
  return a.task == b.task && a.state == b.state && a.failures == b.failures;
}
inline void PrintTo(const RestoredTask& t, std::ostream* os) {
  *os << "{" << t.task.job << "/" << t.task.index << " " << Name(t.state)
      << " failures=" << t.failures << "}";
}
inline bool operator==(const RestoredAttempt& a, const RestoredAttempt& b) {
  return a.attempt == b.attempt && a.task == b.task && a.worker == b.worker && a.gpus == b.gpus;
}
inline void PrintTo(const RestoredAttempt& a, std::ostream* os) {
  *os << "{attempt " << a.attempt << " " << a.task.job << "/" << a.task.index << " on " << a.worker
      << " gpus";
  for (uint32_t g : a.gpus) *os << " " << g;
  *os << "}";
}
}  // namespace idlepool::core

namespace idlepool::store {
inline bool operator==(const TaskRecord& a, const TaskRecord& b) {
  return a.task == b.task && a.state == b.state && a.failures == b.failures &&
         a.committed_attempt == b.committed_attempt;
}
inline void PrintTo(const TaskRecord& t, std::ostream* os) {
  *os << "{" << t.task.job << "/" << t.task.index << " " << core::Name(t.state)
      << " failures=" << t.failures << " committed=" << t.committed_attempt << "}";
}
inline bool operator==(const AttemptRecord& a, const AttemptRecord& b) {
  return a.attempt == b.attempt && a.task == b.task && a.worker == b.worker &&
         a.outcome == b.outcome && a.exit_code == b.exit_code && a.message == b.message &&
         a.started_ms == b.started_ms && a.ended_ms == b.ended_ms;
}
inline void PrintTo(const AttemptRecord& a, std::ostream* os) {
  *os << "{attempt " << a.attempt << " " << a.task.job << "/" << a.task.index << " on " << a.worker
      << " " << core::Name(a.outcome) << " exit=" << a.exit_code << " msg='" << a.message << "' "
      << a.started_ms << ".." << a.ended_ms << "}";
}
inline bool operator==(const TaskOutput& a, const TaskOutput& b) {
  return a.index == b.index && a.file == b.file;
}
inline void PrintTo(const TaskOutput& o, std::ostream* os) {
  *os << "{" << o.index << " " << o.file.path << " " << o.file.sha256 << " " << o.file.size << "}";
}
inline bool operator==(const WorkerRecord& a, const WorkerRecord& b) {
  return a.worker == b.worker && a.hostname == b.hostname &&
         a.link_measured_ms == b.link_measured_ms && a.rtt_us == b.rtt_us &&
         a.down_bytes_per_s == b.down_bytes_per_s && a.up_bytes_per_s == b.up_bytes_per_s &&
         a.probe_bytes == b.probe_bytes && a.cpu_score == b.cpu_score && a.cores == b.cores &&
         a.first_seen_ms == b.first_seen_ms && a.up_ms == b.up_ms && a.down_ms == b.down_ms &&
         a.up_periods == b.up_periods && a.down_periods == b.down_periods &&
         a.updated_ms == b.updated_ms;
}
inline void PrintTo(const WorkerEvent& e, std::ostream* os) {
  *os << "{" << e.worker << " @" << e.at_ms << " " << e.kind << " " << e.state << " " << e.cause
      << " '" << e.reason << "'}";
}
inline void PrintTo(const WorkerRecord& w, std::ostream* os) {
  *os << "{" << w.worker << " host=" << w.hostname << " link@" << w.link_measured_ms
      << " rtt=" << w.rtt_us << "us " << w.down_bytes_per_s << "/" << w.up_bytes_per_s
      << " B/s probe=" << w.probe_bytes << " cpu=" << w.cpu_score << "x" << w.cores
      << " first=" << w.first_seen_ms << " up=" << w.up_ms << "/" << w.up_periods
      << " down=" << w.down_ms << "/" << w.down_periods << " at " << w.updated_ms << "}";
}

namespace {

using core::AttemptOutcome;
using core::Decision;
using core::JobState;
using core::TaskKey;
using core::TaskState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------------------------
// Backends

// A fresh temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = testing::TempDir() + "idlepool_store_XXXXXX";
    char* p = mkdtemp(tmpl.data());
    if (p == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Harness {
 public:
  virtual ~Harness() = default;
  virtual Store& store() = 0;
  // SQLite: close the file and open it again. Memory: nothing (the same object).
  virtual void Reopen() = 0;
};

class SqliteHarness : public Harness {
 public:
  SqliteHarness() : path_(dir_.path() + "/state.db") { Reopen(); }
  Store& store() override { return *store_; }
  void Reopen() override {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path_);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

 private:
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

class MemoryHarness : public Harness {
 public:
  Store& store() override { return *store_; }
  void Reopen() override {}

 private:
  std::unique_ptr<Store> store_ = NewMemoryStore();
};

struct Backend {
  std::string name;
  std::function<std::unique_ptr<Harness>()> make;
};

inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

// ---------------------------------------------------------------------------------------------
// Builders

inline NewJob MakeJob(std::string name, uint32_t tasks, uint32_t max_attempts = 3) {
  NewJob j;
  j.name = std::move(name);
  j.spec = std::string("spec\0bytes\xff", 11);
  j.sched.task_count = tasks;
  j.sched.resources = {2, 1, 512};
  j.sched.max_attempts = max_attempts;
  j.sched.timeout = core::Millis(600000);
  return j;
}

inline Decision Created(core::AttemptId a, TaskKey t, std::string worker) {
  return core::AttemptCreated{a, t, std::move(worker)};
}
inline Decision Ended(core::AttemptId a, TaskKey t, std::string worker, AttemptOutcome o,
                      int exit_code = 0, std::string message = "") {
  return core::AttemptEnded{a, t, std::move(worker), o, exit_code, std::move(message)};
}
inline Decision TaskTo(TaskKey t, TaskState s, uint32_t failures = 0, core::AttemptId committed = 0,
                       std::vector<core::OutputFile> outputs = {}) {
  return core::TaskChanged{t, s, failures, committed, std::move(outputs)};
}
inline Decision JobTo(core::JobId j, JobState s) { return core::JobChanged{j, s}; }

inline core::OutputFile File(std::string path, char hex, uint64_t size) {
  return {std::move(path), std::string(64, hex), size};
}

inline AttemptRecord Attempt(core::AttemptId a, TaskKey t, std::string worker, AttemptOutcome o,
                             int exit_code, std::string message, int64_t started, int64_t ended) {
  AttemptRecord r;
  r.attempt = a;
  r.task = t;
  r.worker = std::move(worker);
  r.outcome = o;
  r.exit_code = exit_code;
  r.message = std::move(message);
  r.started_ms = started;
  r.ended_ms = ended;
  return r;
}

inline TaskRecord Task(TaskKey t, TaskState s, uint32_t failures = 0,
                       core::AttemptId committed = 0) {
  TaskRecord r;
  r.task = t;
  r.state = s;
  r.failures = failures;
  r.committed_attempt = committed;
  return r;
}

// Expects `header` to be `full` without its spec: every other field equal, spec empty.
inline void ExpectHeaderOf(const JobRecord& header, const JobRecord& full) {
  SCOPED_TRACE(::testing::Message() << "job " << full.id);
  EXPECT_EQ(header.id, full.id);
  EXPECT_EQ(header.name, full.name);
  EXPECT_TRUE(header.spec.empty()) << header.spec.size() << " spec bytes in a header";
  EXPECT_EQ(header.sched.job, full.sched.job);
  EXPECT_EQ(header.sched.task_count, full.sched.task_count);
  EXPECT_EQ(header.sched.resources, full.sched.resources);
  EXPECT_EQ(header.sched.max_attempts, full.sched.max_attempts);
  EXPECT_EQ(header.sched.timeout, full.sched.timeout);
  EXPECT_EQ(header.state, full.state);
  EXPECT_EQ(header.submitted_ms, full.submitted_ms);
  EXPECT_EQ(header.finished_ms, full.finished_ms);
  EXPECT_EQ(header.profile_key, full.profile_key);
  EXPECT_EQ(header.input_bytes, full.input_bytes);
  EXPECT_EQ(header.input_files, full.input_files);
}

// Two jobs that differ in every field, the second finished; a large spec on the first.
inline NewJob HeaderJobA() {
  NewJob j = MakeJob("render", 3);
  j.spec = std::string(3 << 20, 'x') + std::string("\0end", 4);
  return j;
}
inline NewJob HeaderJobB() {
  NewJob j;
  j.name = "encode";
  j.profile_key = std::string(64, 'b');
  j.input_bytes = 123456789012;
  j.input_files = 3;
  j.spec = std::string("other\0spec", 10);
  j.sched.task_count = 5;
  j.sched.resources = {8, 0, 4096};
  j.sched.max_attempts = 1;
  j.sched.timeout = core::Millis(1500);
  return j;
}

// ---------------------------------------------------------------------------------------------
// The conformance suite

class StoreConformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { h_ = GetParam().make(); }
  Store& store() { return h_->store(); }

  core::JobId Insert(const NewJob& job, int64_t now_ms = 1000) {
    absl::StatusOr<core::JobId> id = store().InsertJob(job, now_ms);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : 0;
  }
  core::RestoredState MustLoad() {
    absl::StatusOr<core::RestoredState> s = store().Load();
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : core::RestoredState{};
  }
  std::vector<TaskRecord> Tasks(core::JobId job) {
    auto r = store().ListTasks(job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : std::vector<TaskRecord>{};
  }
  std::vector<AttemptRecord> Attempts(core::JobId job) {
    auto r = store().ListAttempts(job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : std::vector<AttemptRecord>{};
  }
  std::vector<TaskOutput> Outputs(core::JobId job) {
    auto r = store().ListOutputs(job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : std::vector<TaskOutput>{};
  }
  JobRecord Job(core::JobId job) {
    auto r = store().GetJob(job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : JobRecord{};
  }
  JobRecord Header(core::JobId job) {
    auto r = store().GetJobHeader(job);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : JobRecord{};
  }

  std::unique_ptr<Harness> h_;
};

#define REOPEN() ASSERT_NO_FATAL_FAILURE(h_->Reopen())

inline auto Backends() {
  return ::testing::Values(
      Backend{"Sqlite", [] { return std::unique_ptr<Harness>(new SqliteHarness); }},
      Backend{"Memory", [] { return std::unique_ptr<Harness>(new MemoryHarness); }});
}
inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param.name;
}

}  // namespace
}  // namespace idlepool::store
