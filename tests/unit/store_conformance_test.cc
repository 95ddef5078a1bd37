// One conformance suite for every store backend (SQLite, memory), plus SQLite-only tests for
// what only a file can get wrong (garbage files, WAL, schema versions, crashes). The fixture is in
// store_fixture.h; the paged reads (failed tasks, a task's attempts) are in store_paging_test.cc.

#include "store_fixture.h"

namespace idlepool::store {
namespace {

TEST_P(StoreConformance, InsertedJobIsDurableWithAllTasksPending) {
  const core::JobId id = Insert(MakeJob("render", 3), 1234);
  EXPECT_EQ(id, 1u);
  REOPEN();

  JobRecord j = Job(id);
  EXPECT_EQ(j.id, id);
  EXPECT_EQ(j.name, "render");
  EXPECT_EQ(j.spec, std::string("spec\0bytes\xff", 11));
  EXPECT_EQ(j.sched.job, id);
  EXPECT_EQ(j.sched.task_count, 3u);
  EXPECT_EQ(j.sched.resources, (core::Resources{2, 1, 512}));
  EXPECT_EQ(j.sched.max_attempts, 3u);
  EXPECT_EQ(j.sched.timeout, core::Millis(600000));
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.submitted_ms, 1234);
  EXPECT_EQ(j.finished_ms, 0);

  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].spec.job, id);
  EXPECT_EQ(s.jobs[0].spec.task_count, 3u);
  EXPECT_EQ(s.jobs[0].spec.resources, (core::Resources{2, 1, 512}));
  EXPECT_EQ(s.jobs[0].spec.max_attempts, 3u);
  EXPECT_EQ(s.jobs[0].spec.timeout, core::Millis(600000));
  EXPECT_EQ(s.jobs[0].state, JobState::kRunning);
  EXPECT_EQ(s.jobs[0].counters, core::JobCounters{});
  EXPECT_THAT(s.jobs[0].workers_lost, IsEmpty());
  EXPECT_THAT(s.tasks, ElementsAre(core::RestoredTask{{id, 0}, TaskState::kPending, 0},
                                   core::RestoredTask{{id, 1}, TaskState::kPending, 0},
                                   core::RestoredTask{{id, 2}, TaskState::kPending, 0}));
  EXPECT_THAT(s.running, IsEmpty());
  EXPECT_EQ(s.next_attempt_id, 1u);
  EXPECT_THAT(Tasks(id), ElementsAre(Task({id, 0}, TaskState::kPending),
                                     Task({id, 1}, TaskState::kPending),
                                     Task({id, 2}, TaskState::kPending)));
  EXPECT_THAT(Attempts(id), IsEmpty());
  EXPECT_THAT(Outputs(id), IsEmpty());
}

TEST_P(StoreConformance, JobIdsAreSequentialAndNeverReusedAfterReopen) {
  EXPECT_EQ(Insert(MakeJob("a", 1)), 1u);
  EXPECT_EQ(Insert(MakeJob("b", 2)), 2u);
  REOPEN();
  EXPECT_EQ(Insert(MakeJob("c", 1)), 3u);
  REOPEN();
  absl::StatusOr<std::vector<JobRecord>> jobs = store().ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].id, 1u);
  EXPECT_EQ((*jobs)[0].name, "a");
  EXPECT_EQ((*jobs)[1].id, 2u);
  EXPECT_EQ((*jobs)[1].sched.task_count, 2u);
  EXPECT_EQ((*jobs)[2].id, 3u);
  EXPECT_EQ((*jobs)[2].name, "c");
  EXPECT_EQ(MustLoad().tasks.size(), 4u);
}

TEST_P(StoreConformance, InsertJobRejectsZeroTasks) {
  absl::StatusOr<core::JobId> id = store().InsertJob(MakeJob("empty", 0), 1);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << id.status();
  REOPEN();
  EXPECT_THAT(*store().ListJobs(), IsEmpty());
  EXPECT_EQ(Insert(MakeJob("next", 1)), 1u);
}

TEST_P(StoreConformance, LifecycleIsExactAfterReopen) {
  const core::JobId id = Insert(MakeJob("render", 2), 500);
  const TaskKey t0{id, 0}, t1{id, 1};
  // Message decisions and WorkerLost are mixed in, as the scheduler emits them: ignored.
  ASSERT_TRUE(store()
                  .Apply({Created(1, t0, "w1"), TaskTo(t0, TaskState::kRunning),
                          Created(2, t1, "w2"), TaskTo(t1, TaskState::kRunning),
                          core::AssignAttempt{"w1", 7, 1, t0}, core::AssignAttempt{"w2", 8, 2, t1}},
                         1000)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({Ended(1, t0, "w1", AttemptOutcome::kFailed, 2, "exit code 2"),
                          TaskTo(t0, TaskState::kPending, 1),
                          core::AckReport{"w1", 7, 1, true, ""}},
                         2000)
                  .ok());
  REOPEN();
  ASSERT_TRUE(store()
                  .Apply({Created(3, t0, "w2"), TaskTo(t0, TaskState::kRunning, 1),
                          core::AssignAttempt{"w2", 8, 3, t0}},
                         3000)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({Ended(3, t0, "w2", AttemptOutcome::kSucceeded),
                          TaskTo(t0, TaskState::kSucceeded, 1, 3,
                                 {File("frame_2.png", 'b', 20), File("frame_1.png", 'a', 10)}),
                          core::AckReport{"w2", 8, 3, true, ""}},
                         4000)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({Ended(2, t1, "w2", AttemptOutcome::kSucceeded, 0, "done"),
                          TaskTo(t1, TaskState::kSucceeded, 0, 2, {File("sub/x.txt", 'c', 0)}),
                          JobTo(id, JobState::kSucceeded), core::AckReport{"w2", 8, 2, true, ""}},
                         5000)
                  .ok());
  REOPEN();

  EXPECT_THAT(Attempts(id),
              ElementsAre(Attempt(1, t0, "w1", AttemptOutcome::kFailed, 2, "exit code 2", 1000,
                                  2000),
                          Attempt(2, t1, "w2", AttemptOutcome::kSucceeded, 0, "done", 1000, 5000),
                          Attempt(3, t0, "w2", AttemptOutcome::kSucceeded, 0, "", 3000, 4000)));
  EXPECT_THAT(Tasks(id), ElementsAre(Task(t0, TaskState::kSucceeded, 1, 3),
                                     Task(t1, TaskState::kSucceeded, 0, 2)));
  EXPECT_THAT(Outputs(id), ElementsAre(TaskOutput{0, File("frame_1.png", 'a', 10)},
                                       TaskOutput{0, File("frame_2.png", 'b', 20)},
                                       TaskOutput{1, File("sub/x.txt", 'c', 0)}));
  JobRecord j = Job(id);
  EXPECT_EQ(j.state, JobState::kSucceeded);
  EXPECT_EQ(j.submitted_ms, 500);
  EXPECT_EQ(j.finished_ms, 5000);

  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].state, JobState::kSucceeded);
  EXPECT_EQ(s.jobs[0].counters, (core::JobCounters{3, 1, 0, 0}));
  EXPECT_THAT(s.jobs[0].workers_lost, IsEmpty());
  EXPECT_THAT(s.tasks, ElementsAre(core::RestoredTask{t0, TaskState::kSucceeded, 1},
                                   core::RestoredTask{t1, TaskState::kSucceeded, 0}));
  EXPECT_THAT(s.running, IsEmpty());
  EXPECT_EQ(s.next_attempt_id, 4u);
}

TEST_P(StoreConformance, RunningAttemptsComeBackAsRunning) {
  const core::JobId a = Insert(MakeJob("a", 3));
  const core::JobId b = Insert(MakeJob("b", 1));
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), TaskTo({a, 0}, TaskState::kRunning),
                          Created(2, {a, 2}, "w2"), TaskTo({a, 2}, TaskState::kRunning),
                          Created(3, {b, 0}, "w1"), TaskTo({b, 0}, TaskState::kRunning)},
                         1000)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({Ended(2, {a, 2}, "w2", AttemptOutcome::kPreempted),
                          TaskTo({a, 2}, TaskState::kPending)},
                         2000)
                  .ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  EXPECT_THAT(s.running, ElementsAre(core::RestoredAttempt{1, {a, 0}, "w1"},
                                     core::RestoredAttempt{3, {b, 0}, "w1"}));
  EXPECT_THAT(s.tasks, ElementsAre(core::RestoredTask{{a, 0}, TaskState::kRunning, 0},
                                   core::RestoredTask{{a, 1}, TaskState::kPending, 0},
                                   core::RestoredTask{{a, 2}, TaskState::kPending, 0},
                                   core::RestoredTask{{b, 0}, TaskState::kRunning, 0}));
  EXPECT_EQ(s.next_attempt_id, 4u);
  EXPECT_EQ(Attempts(a)[0].outcome, AttemptOutcome::kRunning);
  EXPECT_EQ(Attempts(a)[0].ended_ms, 0);
}

TEST_P(StoreConformance, LostAttemptsOfRunningJobsComeBackAndALateSuccessReplacesOne) {
  const core::JobId a = Insert(MakeJob("a", 2));
  const core::JobId b = Insert(MakeJob("b", 1));
  core::AttemptEnded lost{1, {a, 0}, "w1", AttemptOutcome::kLost, 0, "worker lost",
                          core::Millis(700)};
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w2"),
                          Created(3, {b, 0}, "w1"), lost,
                          Ended(2, {a, 1}, "w2", AttemptOutcome::kFailed, 1),
                          Ended(3, {b, 0}, "w1", AttemptOutcome::kLost), JobTo(b, JobState::kFailed)},
                         1000)
                  .ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  // Only job a still runs; only the lost attempt comes back.
  ASSERT_EQ(s.lost.size(), 1u);
  EXPECT_EQ(s.lost[0].attempt, 1u);
  EXPECT_EQ(s.lost[0].task, (TaskKey{a, 0}));
  EXPECT_EQ(s.lost[0].worker, "w1");
  EXPECT_EQ(s.lost[0].lost, core::Millis(700));
  EXPECT_EQ(s.jobs.at(0).counters.lost, 1u);

  // A late end must be a success of a lost attempt.
  core::AttemptEnded late{1, {a, 0}, "w1", AttemptOutcome::kFailed, 0, "", core::Millis(0)};
  late.late = true;
  EXPECT_EQ(store().Apply({late}, 2000).code(), absl::StatusCode::kInvalidArgument);
  late.outcome = AttemptOutcome::kSucceeded;
  late.attempt = 2;
  late.task = {a, 1};
  late.worker = "w2";
  EXPECT_EQ(store().Apply({late}, 2000).code(), absl::StatusCode::kInvalidArgument);
  late.attempt = 1;
  late.task = {a, 0};
  late.worker = "w1";
  late.transfer.output_bytes = 42;
  ASSERT_TRUE(store().Apply({late, TaskTo({a, 0}, TaskState::kSucceeded, 0, 1, {File("o", 'b', 3)})},
                            2000)
                  .ok());
  REOPEN();
  s = MustLoad();
  EXPECT_TRUE(s.lost.empty());
  EXPECT_EQ(s.jobs.at(0).counters.lost, 0u);
  EXPECT_EQ(s.jobs.at(0).counters.lost_work, core::Millis(0));
  EXPECT_EQ(s.jobs.at(0).counters.transfer.output_bytes, 42u);
  EXPECT_EQ(Attempts(a)[0].outcome, AttemptOutcome::kSucceeded);
  // Once replaced it cannot be replaced again.
  EXPECT_EQ(store().Apply({late}, 3000).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreConformance, ARevivedAttemptRunsAgain) {
  const core::JobId a = Insert(MakeJob("a", 1));
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), Ended(1, {a, 0}, "w1", AttemptOutcome::kLost)},
                         1000)
                  .ok());
  core::AttemptCreated revive{1, {a, 0}, "w2", /*revived=*/true};
  EXPECT_EQ(store().Apply({revive}, 2000).code(), absl::StatusCode::kInvalidArgument);  // not w2's
  revive.worker = "w1";
  ASSERT_TRUE(store().Apply({revive}, 2000).ok());
  EXPECT_EQ(store().Apply({revive}, 2000).code(), absl::StatusCode::kInvalidArgument);  // running
  REOPEN();
  core::RestoredState s = MustLoad();
  EXPECT_THAT(s.running, ElementsAre(core::RestoredAttempt{1, {a, 0}, "w1"}));
  EXPECT_TRUE(s.lost.empty());
  EXPECT_EQ(s.jobs.at(0).counters.lost, 0u);
  EXPECT_EQ(s.jobs.at(0).counters.attempts, 1u);
}

// GPUs: a running attempt's devices come back with it (the core marks them busy again when its
// worker re-adopts it), a lost one's too (a revival needs them), and a job's GPU needs are kept.
TEST_P(StoreConformance, GpusAreKeptWithAttemptsAndJobs) {
  NewJob gj = MakeJob("gpu", 2);
  gj.sched.resources.gpus = 2;
  gj.sched.resources.gpu_memory_mb = 16000;
  gj.sched.resources.gpu_api = "cuda";
  const core::JobId a = Insert(gj);
  const core::JobId b = Insert(MakeJob("cpu", 1));
  core::AttemptCreated c1{1, {a, 0}, "w1", false, {0, 3}};
  core::AttemptCreated c2{2, {a, 1}, "w1", false, {1, 2}};
  ASSERT_TRUE(store()
                  .Apply({c1, TaskTo({a, 0}, TaskState::kRunning), c2,
                          Ended(2, {a, 1}, "w1", AttemptOutcome::kLost),
                          Created(3, {b, 0}, "w2"), TaskTo({b, 0}, TaskState::kRunning)},
                         1000)
                  .ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  EXPECT_THAT(s.running, ElementsAre(core::RestoredAttempt{1, {a, 0}, "w1", {0, 3}},
                                     core::RestoredAttempt{3, {b, 0}, "w2", {}}));
  ASSERT_EQ(s.lost.size(), 1u);
  EXPECT_EQ(s.lost[0].gpus, (std::vector<uint32_t>{1, 2}));
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.jobs[0].spec.resources, (core::Resources{2, 2, 512, 16000, "cuda"}));
  EXPECT_EQ(s.jobs[1].spec.resources, (core::Resources{2, 1, 512, 0, ""}));
  EXPECT_EQ(Header(a).sched.resources, (core::Resources{2, 2, 512, 16000, "cuda"}));
  EXPECT_EQ(Attempts(a)[0].gpus, (std::vector<uint32_t>{0, 3}));
  EXPECT_TRUE(Attempts(b)[0].gpus.empty());
}

TEST_P(StoreConformance, MachineFaultsAreCountedApart) {
  const core::JobId a = Insert(MakeJob("a", 1));
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"),
                          Ended(1, {a, 0}, "w1", AttemptOutcome::kMachineFault, 0, "disk full")},
                         1000)
                  .ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  EXPECT_EQ(s.jobs.at(0).counters.machine_faults, 1u);
  EXPECT_EQ(s.jobs.at(0).counters.failures, 0u);
  EXPECT_EQ(Attempts(a)[0].outcome, AttemptOutcome::kMachineFault);
}

TEST_P(StoreConformance, NextAttemptIdIsOnePastTheLargestEver) {
  const core::JobId id = Insert(MakeJob("a", 2));
  EXPECT_EQ(MustLoad().next_attempt_id, 1u);
  // Ids need not be dense; the largest one counts even once it has ended.
  ASSERT_TRUE(store().Apply({Created(5, {id, 0}, "w1"), Created(17, {id, 1}, "w1")}, 1).ok());
  ASSERT_TRUE(store().Apply({Ended(17, {id, 1}, "w1", AttemptOutcome::kLost)}, 2).ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  EXPECT_EQ(s.next_attempt_id, 18u);
  EXPECT_THAT(s.running, ElementsAre(core::RestoredAttempt{5, {id, 0}, "w1"}));
}

TEST_P(StoreConformance, BatchWithAnUnknownNameIsRejectedAndNothingOfItIsWritten) {
  const core::JobId id = Insert(MakeJob("a", 2));
  const TaskKey t0{id, 0};
  ASSERT_TRUE(store().Apply({Created(1, t0, "w1"), TaskTo(t0, TaskState::kRunning)}, 100).ok());

  // A valid prefix touching every table, then one bad record.
  const std::vector<Decision> prefix = {
      Ended(1, t0, "w1", AttemptOutcome::kSucceeded),
      TaskTo(t0, TaskState::kSucceeded, 0, 1, {File("out.png", 'a', 1)}),
      Created(2, {id, 1}, "w2"),
      TaskTo({id, 1}, TaskState::kRunning),
      JobTo(id, JobState::kCancelled),
  };
  struct Case {
    const char* what;
    Decision bad;
  };
  const Case cases[] = {
      {"AttemptCreated unknown job", Created(3, {99, 0}, "w1")},
      {"AttemptCreated unknown index", Created(3, {id, 2}, "w1")},
      {"AttemptEnded unknown attempt", Ended(42, t0, "w1", AttemptOutcome::kFailed)},
      {"TaskChanged unknown job", TaskTo({99, 0}, TaskState::kRunning)},
      {"TaskChanged unknown index", TaskTo({id, 7}, TaskState::kRunning)},
      {"JobChanged unknown job", JobTo(99, JobState::kFailed)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<Decision> batch = prefix;
    batch.push_back(c.bad);
    absl::Status st = store().Apply(batch, 200);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    REOPEN();
    EXPECT_THAT(Attempts(id), ElementsAre(Attempt(1, t0, "w1", AttemptOutcome::kRunning, 0, "",
                                                  100, 0)));
    EXPECT_THAT(Tasks(id), ElementsAre(Task(t0, TaskState::kRunning),
                                       Task({id, 1}, TaskState::kPending)));
    EXPECT_THAT(Outputs(id), IsEmpty());
    JobRecord j = Job(id);
    EXPECT_EQ(j.state, JobState::kRunning);
    EXPECT_EQ(j.finished_ms, 0);
    core::RestoredState s = MustLoad();
    EXPECT_EQ(s.next_attempt_id, 2u);
    EXPECT_EQ(s.jobs[0].counters, (core::JobCounters{1, 0, 0, 0}));
  }

  // The store is still usable, and the valid prefix alone goes through.
  ASSERT_TRUE(store().Apply(prefix, 300).ok());
  REOPEN();
  EXPECT_THAT(Attempts(id),
              ElementsAre(Attempt(1, t0, "w1", AttemptOutcome::kSucceeded, 0, "", 100, 300),
                          Attempt(2, {id, 1}, "w2", AttemptOutcome::kRunning, 0, "", 300, 0)));
  EXPECT_THAT(Outputs(id), ElementsAre(TaskOutput{0, File("out.png", 'a', 1)}));
  EXPECT_EQ(Job(id).state, JobState::kCancelled);
  EXPECT_EQ(Job(id).finished_ms, 300);
}

TEST_P(StoreConformance, InvalidAttemptRecordsAreRejected) {
  const core::JobId id = Insert(MakeJob("a", 2));
  const TaskKey t0{id, 0}, t1{id, 1};
  ASSERT_TRUE(store().Apply({Created(1, t0, "w1")}, 100).ok());
  ASSERT_TRUE(store().Apply({Created(2, t1, "w1"), Ended(2, t1, "w1", AttemptOutcome::kFailed)},
                            100)
                  .ok());
  struct Case {
    const char* what;
    Decision bad;
  };
  const Case cases[] = {
      {"attempt id reused", Created(1, t1, "w2")},
      {"attempt id 0", Created(0, t1, "w2")},
      {"ended twice", Ended(2, t1, "w1", AttemptOutcome::kSucceeded)},
      {"ended with outcome running", Ended(1, t0, "w1", AttemptOutcome::kRunning)},
      {"ended naming another task", Ended(1, t1, "w1", AttemptOutcome::kFailed)},
      {"ended naming another worker", Ended(1, t0, "w9", AttemptOutcome::kFailed)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    absl::Status st = store().Apply({TaskTo(t0, TaskState::kRunning), c.bad}, 200);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  }
  REOPEN();
  EXPECT_THAT(Attempts(id),
              ElementsAre(Attempt(1, t0, "w1", AttemptOutcome::kRunning, 0, "", 100, 0),
                          Attempt(2, t1, "w1", AttemptOutcome::kFailed, 0, "", 100, 100)));
  EXPECT_THAT(Tasks(id), ElementsAre(Task(t0, TaskState::kPending), Task(t1, TaskState::kPending)));
}

TEST_P(StoreConformance, DuplicateOutputPathRejectsTheWholeBatch) {
  const core::JobId id = Insert(MakeJob("a", 1));
  const TaskKey t0{id, 0};
  ASSERT_TRUE(store().Apply({Created(1, t0, "w1")}, 100).ok());
  absl::Status st = store().Apply(
      {Ended(1, t0, "w1", AttemptOutcome::kSucceeded),
       TaskTo(t0, TaskState::kSucceeded, 0, 1, {File("a", '1', 1), File("a", '2', 2)}),
       JobTo(id, JobState::kSucceeded)},
      200);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  REOPEN();
  EXPECT_THAT(Outputs(id), IsEmpty());
  EXPECT_THAT(Tasks(id), ElementsAre(Task(t0, TaskState::kPending)));
  EXPECT_EQ(Attempts(id)[0].outcome, AttemptOutcome::kRunning);
  EXPECT_EQ(Job(id).state, JobState::kRunning);
}

TEST_P(StoreConformance, CountersAndLostWorkersAreRecomputedPerJob) {
  const core::JobId a = Insert(MakeJob("a", 4));
  const core::JobId b = Insert(MakeJob("b", 1));
  const core::JobId c = Insert(MakeJob("c", 1));
  std::vector<Decision> created, ended;
  struct A {
    core::AttemptId id;
    TaskKey task;
    const char* worker;
    AttemptOutcome outcome;
  };
  const A attempts[] = {
      {1, {a, 0}, "w2", AttemptOutcome::kLost},      {2, {a, 0}, "w2", AttemptOutcome::kLost},
      {3, {a, 1}, "w1", AttemptOutcome::kLost},      {4, {a, 1}, "w1", AttemptOutcome::kPreempted},
      {5, {a, 2}, "w3", AttemptOutcome::kPreempted}, {6, {a, 2}, "w3", AttemptOutcome::kTimedOut},
      {7, {a, 3}, "w3", AttemptOutcome::kFailed},    {8, {a, 3}, "w3", AttemptOutcome::kCancelled},
      {9, {a, 0}, "w4", AttemptOutcome::kSucceeded}, {10, {a, 1}, "w5", AttemptOutcome::kRunning},
      {11, {b, 0}, "w9", AttemptOutcome::kLost},     {12, {b, 0}, "w1", AttemptOutcome::kFailed},
  };
  for (const A& x : attempts) {
    created.push_back(Created(x.id, x.task, x.worker));
    if (x.outcome != AttemptOutcome::kRunning) {
      ended.push_back(Ended(x.id, x.task, x.worker, x.outcome));
    }
  }
  ASSERT_TRUE(store().Apply(created, 100).ok());
  ASSERT_TRUE(store().Apply(ended, 200).ok());
  // A WorkerLost record is accepted (nothing else to keep for it).
  ASSERT_TRUE(store().Apply({core::WorkerLost{"w2"}}, 300).ok());
  REOPEN();
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 3u);
  EXPECT_EQ(s.jobs[0].spec.job, a);
  EXPECT_EQ(s.jobs[0].counters, (core::JobCounters{10, 2, 2, 3}));
  EXPECT_THAT(s.jobs[0].workers_lost, ElementsAre("w1", "w2"));
  EXPECT_EQ(s.jobs[1].spec.job, b);
  EXPECT_EQ(s.jobs[1].counters, (core::JobCounters{2, 1, 0, 1}));
  EXPECT_THAT(s.jobs[1].workers_lost, ElementsAre("w9"));
  EXPECT_EQ(s.jobs[2].spec.job, c);
  EXPECT_EQ(s.jobs[2].counters, core::JobCounters{});
  EXPECT_THAT(s.jobs[2].workers_lost, IsEmpty());
  EXPECT_THAT(s.running, ElementsAre(core::RestoredAttempt{10, {a, 1}, "w5"}));
  EXPECT_EQ(s.next_attempt_id, 13u);
}

TEST_P(StoreConformance, SuspensionsAndLostWorkAreKeptPerAttemptAndSummedPerJob) {
  const core::JobId a = Insert(MakeJob("a", 2));
  const core::JobId b = Insert(MakeJob("b", 1));
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w1"),
                          Created(3, {b, 0}, "w2")},
                         100)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({core::AttemptSuspended{1, {a, 0}}, core::AttemptSuspended{1, {a, 0}},
                          core::AttemptSuspended{2, {a, 1}}},
                         150)
                  .ok());
  core::AttemptEnded pre{1, {a, 0}, "w1", AttemptOutcome::kPreempted, 0, "vacated"};
  pre.lost = core::Millis(1500);
  core::AttemptEnded lost{3, {b, 0}, "w2", AttemptOutcome::kLost, 0, "worker lost"};
  lost.lost = core::Millis(700);
  ASSERT_TRUE(store().Apply({pre, lost}, 200).ok());
  // A suspension of an attempt that has ended is refused, with the rest of its batch.
  absl::Status st = store().Apply({core::AttemptSuspended{2, {a, 1}},
                                   core::AttemptSuspended{1, {a, 0}}},
                                  250);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  REOPEN();
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 2u);
  EXPECT_EQ(s.jobs[0].counters.suspensions, 3u);
  EXPECT_EQ(s.jobs[0].counters.lost_work, core::Millis(1500));
  EXPECT_EQ(s.jobs[1].counters.suspensions, 0u);
  EXPECT_EQ(s.jobs[1].counters.lost_work, core::Millis(700));
  std::vector<AttemptRecord> at = Attempts(a);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0].suspensions, 2u);
  EXPECT_EQ(at[0].lost_ms, 1500);
  EXPECT_EQ(at[1].suspensions, 1u);  // the refused batch left nothing
  EXPECT_EQ(at[1].lost_ms, 0);
}

TEST_P(StoreConformance, LatestCheckpointReplacesThePreviousOneAndSurvivesReopen) {
  const core::JobId a = Insert(MakeJob("a", 2));
  ASSERT_TRUE(store().Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w1")}, 100).ok());
  auto get = [&](TaskKey t) {
    auto c = store().GetCheckpoint(t);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : std::vector<core::OutputFile>{};
  };
  EXPECT_THAT(get({a, 0}), IsEmpty());
  ASSERT_TRUE(store()
                  .Apply({core::TaskCheckpointed{{a, 0}, 1, {File("z", 'a', 1), File("d/b", 'b', 2)}}},
                         110)
                  .ok());
  EXPECT_THAT(get({a, 0}), ElementsAre(File("d/b", 'b', 2), File("z", 'a', 1)));
  // The next one replaces it (fewer files), in the same batch as the preemption that took it.
  ASSERT_TRUE(store()
                  .Apply({core::TaskCheckpointed{{a, 0}, 1, {File("c", 'c', 3)}},
                          Ended(1, {a, 0}, "w1", AttemptOutcome::kPreempted),
                          TaskTo({a, 0}, TaskState::kPending)},
                         120)
                  .ok());
  EXPECT_THAT(get({a, 0}), ElementsAre(File("c", 'c', 3)));
  // From an attempt that has ended, or for another task than its attempt's: refused.
  EXPECT_EQ(store().Apply({core::TaskCheckpointed{{a, 0}, 1, {}}}, 130).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().Apply({core::TaskCheckpointed{{a, 0}, 2, {}}}, 130).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().Apply({core::TaskCheckpointed{{a, 1}, 99, {}}}, 130).code(),
            absl::StatusCode::kInvalidArgument);
  REOPEN();
  EXPECT_THAT(get({a, 0}), ElementsAre(File("c", 'c', 3)));
  EXPECT_THAT(get({a, 1}), IsEmpty());
  EXPECT_EQ(store().GetCheckpoint({a + 7, 0}).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreConformance, JobFinishTimeIsSetOnlyWhenTerminal) {
  const core::JobId a = Insert(MakeJob("a", 1), 10);
  const core::JobId b = Insert(MakeJob("b", 1), 20);
  ASSERT_TRUE(store().Apply({JobTo(a, JobState::kRunning)}, 30).ok());
  ASSERT_TRUE(store().Apply({JobTo(b, JobState::kFailed)}, 40).ok());
  REOPEN();
  EXPECT_EQ(Job(a).state, JobState::kRunning);
  EXPECT_EQ(Job(a).finished_ms, 0);
  EXPECT_EQ(Job(b).state, JobState::kFailed);
  EXPECT_EQ(Job(b).finished_ms, 40);
  ASSERT_TRUE(store().Apply({JobTo(a, JobState::kCancelled)}, 50).ok());
  REOPEN();
  EXPECT_EQ(Job(a).state, JobState::kCancelled);
  EXPECT_EQ(Job(a).finished_ms, 50);
  core::RestoredState s = MustLoad();
  EXPECT_EQ(s.jobs[0].state, JobState::kCancelled);
  EXPECT_EQ(s.jobs[1].state, JobState::kFailed);
}

TEST_P(StoreConformance, ReadsOfUnknownJobsAreNotFound) {
  Insert(MakeJob("a", 1));
  EXPECT_EQ(store().GetJob(2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().GetJob(0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().GetJobHeader(2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().GetJobHeader(0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().ListTasks(2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().ListAttempts(2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().ListOutputs(2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store().GetJob(1).ok());
  EXPECT_TRUE(store().GetJobHeader(1).ok());
}

TEST_P(StoreConformance, JobHeaderOfAnEmptyStoreIsNotFound) {
  absl::StatusOr<JobRecord> h = store().GetJobHeader(1);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kNotFound) << h.status();
  REOPEN();
  EXPECT_EQ(store().GetJobHeader(1).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreConformance, JobHeaderIsTheJobWithoutItsSpec) {
  const NewJob a = HeaderJobA(), b = HeaderJobB();
  const core::JobId ia = Insert(a, 111), ib = Insert(b, 222);
  ASSERT_TRUE(store().Apply({JobTo(ib, JobState::kFailed)}, 333).ok());
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    const JobRecord fa = Job(ia), fb = Job(ib);
    EXPECT_EQ(fa.spec, a.spec);  // GetJob still returns the spec
    EXPECT_EQ(fb.spec, b.spec);
    ExpectHeaderOf(Header(ia), fa);
    ExpectHeaderOf(Header(ib), fb);
    // Spot-check the header against what was written, not only against GetJob.
    const JobRecord hb = Header(ib);
    EXPECT_EQ(hb.id, ib);
    EXPECT_EQ(hb.name, "encode");
    EXPECT_EQ(hb.sched.job, ib);
    EXPECT_EQ(hb.sched.task_count, 5u);
    EXPECT_EQ(hb.sched.resources, (core::Resources{8, 0, 4096}));
    EXPECT_EQ(hb.sched.max_attempts, 1u);
    EXPECT_EQ(hb.sched.timeout, core::Millis(1500));
    EXPECT_EQ(hb.state, JobState::kFailed);
    EXPECT_EQ(hb.submitted_ms, 222);
    EXPECT_EQ(hb.finished_ms, 333);
    EXPECT_EQ(Header(ia).state, JobState::kRunning);
    EXPECT_EQ(Header(ia).finished_ms, 0);
    REOPEN();
  }
}

TEST_P(StoreConformance, ListJobsReturnsHeadersWithoutSpecs) {
  const NewJob a = HeaderJobA(), b = HeaderJobB();
  const core::JobId ia = Insert(a, 111), ib = Insert(b, 222);
  ASSERT_TRUE(store().Apply({JobTo(ib, JobState::kSucceeded)}, 444).ok());
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    absl::StatusOr<std::vector<JobRecord>> jobs = store().ListJobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 2u);
    ExpectHeaderOf((*jobs)[0], Job(ia));
    ExpectHeaderOf((*jobs)[1], Job(ib));
    EXPECT_EQ((*jobs)[0].id, ia);
    EXPECT_EQ((*jobs)[0].name, "render");
    EXPECT_EQ((*jobs)[0].sched.task_count, 3u);
    EXPECT_EQ((*jobs)[0].sched.resources, (core::Resources{2, 1, 512}));
    EXPECT_EQ((*jobs)[0].submitted_ms, 111);
    EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
    EXPECT_EQ((*jobs)[1].id, ib);
    EXPECT_EQ((*jobs)[1].name, "encode");
    EXPECT_EQ((*jobs)[1].sched.timeout, core::Millis(1500));
    EXPECT_EQ((*jobs)[1].state, JobState::kSucceeded);
    EXPECT_EQ((*jobs)[1].finished_ms, 444);
    REOPEN();
  }
}

TEST_P(StoreConformance, OnlyMessagesIsANoOp) {
  const core::JobId id = Insert(MakeJob("a", 1));
  ASSERT_TRUE(store()
                  .Apply({core::AssignAttempt{"w1", 1, 1, {id, 0}},
                          core::KillAttempt{"w1", 1, 9, core::KillReason::kStale},
                          core::AckReport{"w1", 1, 9, false, "stale"},
                          core::RefuseSession{"w1", 2, "name in use"}, core::WorkerLost{"w1"}},
                         100)
                  .ok());
  ASSERT_TRUE(store().Apply({}, 100).ok());
  REOPEN();
  EXPECT_THAT(Attempts(id), IsEmpty());
  EXPECT_EQ(MustLoad().next_attempt_id, 1u);
}

TEST_P(StoreConformance, LargeJobInsertsEveryTask) {
  constexpr uint32_t kTasks = 100000;
  const core::JobId id = Insert(MakeJob("big", kTasks));
  REOPEN();
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.tasks.size(), kTasks);
  EXPECT_EQ(s.tasks.front().task, (TaskKey{id, 0}));
  EXPECT_EQ(s.tasks.back().task, (TaskKey{id, kTasks - 1}));
  for (uint32_t i = 0; i < kTasks; ++i) {
    ASSERT_EQ(s.tasks[i].task.index, i);
    ASSERT_EQ(s.tasks[i].state, TaskState::kPending);
  }
}

TEST_P(StoreConformance, ConcurrentReadersSeeWholeBatches) {
  constexpr uint32_t kTasks = 60;
  const core::JobId id = Insert(MakeJob("a", kTasks));
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        auto attempts = store().ListAttempts(id);
        auto tasks = store().ListTasks(id);
        auto state = store().Load();
        if (!attempts.ok() || !tasks.ok() || !state.ok()) ++errors;
        // Each batch creates and ends one attempt and commits its task: a reader sees both or
        // neither.
        if (state.ok()) {
          uint64_t running = state->running.size();
          if (running != 0) ++errors;
        }
      }
    });
  }
  for (uint32_t i = 0; i < kTasks; ++i) {
    const TaskKey t{id, i};
    absl::Status st = store().Apply({Created(i + 1, t, "w"), TaskTo(t, TaskState::kRunning),
                                     Ended(i + 1, t, "w", AttemptOutcome::kSucceeded),
                                     TaskTo(t, TaskState::kSucceeded, 0, i + 1)},
                                    i);
    if (!st.ok()) ++errors;
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(Attempts(id).size(), kTasks);
}

TEST_P(StoreConformance, JobPredictionsAreKeptReplacedAndRefusedForUnknownJobs) {
  const core::JobId id = Insert(MakeJob("render", 2));
  const core::JobId other = Insert(MakeJob("other", 1));
  auto none = store().GetJobPrediction(id);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, "");
  const std::string bytes("\x0a\x00pred\xff", 7);  // opaque: NUL and non-UTF-8 bytes survive
  ASSERT_TRUE(store().PutJobPrediction(id, bytes).ok());
  REOPEN();
  EXPECT_EQ(*store().GetJobPrediction(id), bytes);
  EXPECT_EQ(*store().GetJobPrediction(other), "");
  ASSERT_TRUE(store().PutJobPrediction(id, "second").ok());
  EXPECT_EQ(*store().GetJobPrediction(id), "second");
  EXPECT_EQ(store().PutJobPrediction(99, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().GetJobPrediction(99).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreConformance, ProfileKeyAndInputSizeAreKeptWithTheJob) {
  NewJob j = MakeJob("render", 2);
  j.profile_key = std::string(64, 'a');
  j.input_bytes = uint64_t{5} << 40;
  j.input_files = 7;
  const core::JobId id = Insert(j);
  const core::JobId plain = Insert(MakeJob("plain", 1));
  REOPEN();
  for (const JobRecord& r : {Job(id), Header(id)}) {
    EXPECT_EQ(r.profile_key, j.profile_key);
    EXPECT_EQ(r.input_bytes, j.input_bytes);
    EXPECT_EQ(r.input_files, 7u);
  }
  EXPECT_EQ(Header(plain).profile_key, "");
  auto all = store().ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).profile_key, j.profile_key);
  EXPECT_EQ(all->at(0).input_bytes, j.input_bytes);
}

TEST_P(StoreConformance, AttemptTimingIsKeptPerAttempt) {
  const core::JobId a = Insert(MakeJob("a", 3));
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w2"),
                          Created(3, {a, 2}, "w2")},
                         100)
                  .ok());
  core::AttemptEnded ok{1, {a, 0}, "w1", AttemptOutcome::kSucceeded, 0, ""};
  ok.timing = {1200, 34567, 890, true};
  core::AttemptEnded pre{2, {a, 1}, "w2", AttemptOutcome::kPreempted, 0, "vacated"};
  pre.timing = {5, 6, uint64_t{1} << 40, false};
  ASSERT_TRUE(store().Apply({ok, pre}, 200).ok());
  REOPEN();
  std::vector<AttemptRecord> at = Attempts(a);
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0].timing, ok.timing);
  EXPECT_EQ(at[1].timing, pre.timing);
  EXPECT_EQ(at[2].timing, core::AttemptTiming{});  // still running
}

TEST_P(StoreConformance, SucceededAttemptsByProfileKeyAreNewestFirst) {
  const std::string k1(64, '1'), k2(64, '2');
  NewJob j1 = MakeJob("first", 4), j2 = MakeJob("again", 2), j3 = MakeJob("other", 2);
  j1.profile_key = k1;
  j2.profile_key = k1;
  j3.profile_key = k2;
  const core::JobId a = Insert(j1), b = Insert(j2), c = Insert(j3);
  ASSERT_TRUE(store()
                  .Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w2"),
                          Created(3, {a, 2}, "w1"), Created(4, {a, 3}, "w2"),
                          Created(5, {b, 0}, "w1"), Created(6, {b, 1}, "w2"),
                          Created(7, {c, 0}, "w1"), Created(8, {c, 1}, "w1")},
                         100)
                  .ok());
  auto ok = [](core::AttemptId id, TaskKey t, std::string w, uint64_t run_ms) {
    core::AttemptEnded e{id, t, std::move(w), AttemptOutcome::kSucceeded, 0, ""};
    e.timing.run_ms = run_ms;
    return e;
  };
  // Ended at 300: attempts 1 (succeeded) and 2 (failed); at 400: 5 and 7 (other key) and 3;
  // at 500: 6. Attempt 4 is lost, then succeeds late at 600. Attempt 8 still runs.
  ASSERT_TRUE(store()
                  .Apply({ok(1, {a, 0}, "w1", 11),
                          Ended(2, {a, 1}, "w2", AttemptOutcome::kFailed, 1, "exit code 1")},
                         300)
                  .ok());
  ASSERT_TRUE(store()
                  .Apply({ok(5, {b, 0}, "w1", 15), ok(7, {c, 0}, "w1", 17), ok(3, {a, 2}, "w1", 13),
                          Ended(4, {a, 3}, "w2", AttemptOutcome::kLost, 0, "worker lost")},
                         400)
                  .ok());
  ASSERT_TRUE(store().Apply({ok(6, {b, 1}, "w2", 16)}, 500).ok());
  core::AttemptEnded late = ok(4, {a, 3}, "w2", 14);
  late.late = true;
  ASSERT_TRUE(store().Apply({late}, 600).ok());
  REOPEN();
  auto ids = [](const absl::StatusOr<std::vector<AttemptRecord>>& r) {
    std::vector<core::AttemptId> out;
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      for (const AttemptRecord& x : *r) out.push_back(x.attempt);
    }
    return out;
  };
  // Only successes, of both jobs with the key, newest first (ties: the larger id first).
  EXPECT_THAT(ids(store().ListSucceededAttempts({k1, 0, 100})), ElementsAre(4, 6, 5, 3, 1));
  EXPECT_THAT(ids(store().ListSucceededAttempts({k1, 0, 3})), ElementsAre(4, 6, 5));
  EXPECT_THAT(ids(store().ListSucceededAttempts({k1, 0, 0})), IsEmpty());
  EXPECT_THAT(ids(store().ListSucceededAttempts({k2, 0, 100})), ElementsAre(7));
  EXPECT_THAT(ids(store().ListSucceededAttempts({std::string(64, '9'), 0, 100})), IsEmpty());
  // One job alone.
  EXPECT_THAT(ids(store().ListSucceededAttempts({"", a, 100})), ElementsAre(4, 3, 1));
  EXPECT_THAT(ids(store().ListSucceededAttempts({"", b, 1})), ElementsAre(6));
  // The records are whole.
  auto one = store().ListSucceededAttempts({"", b, 1});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->at(0), Attempt(6, {b, 1}, "w2", AttemptOutcome::kSucceeded, 0, "", 100, 500));
  EXPECT_EQ(one->at(0).timing.run_ms, 16u);
  // Errors.
  EXPECT_EQ(store().ListSucceededAttempts({"", 0, 10}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().ListSucceededAttempts({"", 99, 10}).status().code(),
            absl::StatusCode::kNotFound);
}

// Worker rows (issue 6: link, speed, availability).
WorkerRecord MeasuredWorker(std::string name, int64_t seed) {
  WorkerRecord w;
  w.worker = std::move(name);
  w.hostname = "host-" + w.worker;
  w.link_measured_ms = 1700000000000 + seed;
  w.rtt_us = 450 + seed;
  w.down_bytes_per_s = 112000000 + seed;
  w.up_bytes_per_s = 98000000 + seed;
  w.probe_bytes = 16 << 20;
  w.cpu_score = 1234.5 + static_cast<double>(seed) / 8;
  w.cores = 8;
  w.first_seen_ms = 1690000000000 + seed;
  w.up_ms = 7800000 + seed;
  w.down_ms = 540000 + seed;
  w.up_periods = 3;
  w.down_periods = 2;
  w.updated_ms = 1700000001000 + seed;
  return w;
}

TEST_P(StoreConformance, WorkerRowsRoundTripByNameAndSurviveReopen) {
  auto empty = store().ListWorkers();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(*empty, IsEmpty());
  WorkerRecord b = MeasuredWorker("b", 1), a = MeasuredWorker("a", 2);
  WorkerRecord bare;  // nothing measured yet: zeros stay zeros
  bare.worker = "c";
  ASSERT_TRUE(store().PutWorkers({b, a, bare}).ok());
  REOPEN();
  auto got = store().ListWorkers();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(a, b, bare));
  auto one = store().GetWorker("b");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ(**one, b);
  auto none = store().GetWorker("nobody");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
}

TEST_P(StoreConformance, PutWorkersReplacesTheRowOfTheSameName) {
  ASSERT_TRUE(store().PutWorkers({MeasuredWorker("a", 1), MeasuredWorker("b", 1)}).ok());
  WorkerRecord again = MeasuredWorker("a", 7);
  again.up_periods = 9;
  again.hostname = "moved";
  ASSERT_TRUE(store().PutWorkers({again}).ok());
  REOPEN();
  auto got = store().ListWorkers();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(again, MeasuredWorker("b", 1)));
}

TEST_P(StoreConformance, BadWorkerRowsAreRejectedAndNothingOfTheBatchIsWritten) {
  WorkerRecord nameless = MeasuredWorker("", 1);
  WorkerRecord negative = MeasuredWorker("n", 1);
  negative.down_ms = -5;
  WorkerRecord nan = MeasuredWorker("x", 1);
  nan.cpu_score = std::numeric_limits<double>::quiet_NaN();
  for (const WorkerRecord& bad : {nameless, negative, nan}) {
    absl::Status st = store().PutWorkers({MeasuredWorker("ok", 1), bad});
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  }
  REOPEN();
  EXPECT_THAT(*store().ListWorkers(), IsEmpty());
  // Worker rows are apart from jobs: Load and jobs are untouched, and vice versa.
  ASSERT_TRUE(store().PutWorkers({MeasuredWorker("ok", 1)}).ok());
  EXPECT_THAT(MustLoad().jobs, IsEmpty());
}

TEST_P(StoreConformance, LogTailIsKeptWithTheEndedAttemptButNotInProfileSamples) {
  const core::JobId a = Insert(MakeJob("a", 2));
  ASSERT_TRUE(store().Apply({Created(1, {a, 0}, "w1"), Created(2, {a, 1}, "w2")}, 100).ok());
  core::AttemptEnded failed{1, {a, 0}, "w1", AttemptOutcome::kFailed, 3, "exit code 3"};
  failed.log_tail = "line 1\nerror: \xc3\xa9" "chec\n";
  core::AttemptEnded ok{2, {a, 1}, "w2", AttemptOutcome::kSucceeded, 0, ""};
  ok.log_tail = "done";
  ASSERT_TRUE(store().Apply({failed, ok}, 200).ok());
  ASSERT_TRUE(store().Apply({Created(3, {a, 0}, "w2")}, 300).ok());
  REOPEN();
  std::vector<AttemptRecord> at = Attempts(a);
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[0].log_tail, failed.log_tail);
  EXPECT_EQ(at[1].log_tail, "done");
  EXPECT_EQ(at[2].log_tail, "");  // still running
  auto samples = store().ListSucceededAttempts({"", a, 10});
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ(samples->at(0).log_tail, "");
}

WorkerEvent Event(std::string worker, int64_t at_ms, std::string kind, std::string state = "",
                  std::string cause = "") {
  std::string reason = state.empty() ? "" : "because";
  return WorkerEvent{std::move(worker), at_ms,           std::move(kind),
                     std::move(state),  std::move(cause), std::move(reason)};
}

TEST_P(StoreConformance, WorkerEventsAreListedByTimeForTheWorkersAskedAndSurviveReopen) {
  auto none = store().ListWorkerEvents({{"w1"}, 0, INT64_MAX, 100});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
  const WorkerEvent c1 = Event("w1", 100, "connected");
  const WorkerEvent s1 = Event("w1", 150, "owner", "suspend", "owner_input");
  const WorkerEvent c2 = Event("w2", 120, "connected");
  const WorkerEvent v1 = Event("w1", 150, "owner", "vacate", "lid");  // same time: in order
  const WorkerEvent x3 = Event("w3", 130, "lost");
  ASSERT_TRUE(store().AppendWorkerEvents({c1, s1, c2}).ok());
  ASSERT_TRUE(store().AppendWorkerEvents({v1, x3}).ok());
  ASSERT_TRUE(store().AppendWorkerEvents({}).ok());
  REOPEN();
  auto all = store().ListWorkerEvents({{"w2", "w1"}, 0, INT64_MAX, 100});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, ElementsAre(c1, c2, s1, v1));
  // The range is inclusive at both ends; an empty worker list matches nothing.
  EXPECT_THAT(*store().ListWorkerEvents({{"w1", "w2", "w3"}, 120, 130, 100}),
              ElementsAre(c2, x3));
  EXPECT_THAT(*store().ListWorkerEvents({{}, 0, INT64_MAX, 100}), IsEmpty());
  // A limit keeps the newest.
  EXPECT_THAT(*store().ListWorkerEvents({{"w1", "w2"}, 0, INT64_MAX, 2}), ElementsAre(s1, v1));
}

TEST_P(StoreConformance, BadWorkerEventsAreRejectedAndNothingOfTheBatchIsWritten) {
  for (const WorkerEvent& bad : {Event("", 1, "lost"), Event("w", 1, ""),
                                 Event(std::string(257, 'w'), 1, "lost")}) {
    absl::Status st = store().AppendWorkerEvents({Event("w", 1, "connected"), bad});
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  }
  REOPEN();
  EXPECT_THAT(*store().ListWorkerEvents({{"w"}, 0, INT64_MAX, 100}), IsEmpty());
}

TEST_P(StoreConformance, TrimWorkerEventsDropsTheOldAndBoundsTheRows) {
  std::vector<WorkerEvent> events;
  for (int i = 0; i < 10; ++i) events.push_back(Event(i % 2 ? "a" : "b", 1000 + i, "owner"));
  ASSERT_TRUE(store().AppendWorkerEvents(events).ok());
  ASSERT_TRUE(store().TrimWorkerEvents(1003, 1000).ok());  // by time: 1000..1002 go
  auto left = store().ListWorkerEvents({{"a", "b"}, 0, INT64_MAX, 100});
  ASSERT_TRUE(left.ok()) << left.status();
  ASSERT_EQ(left->size(), 7u);
  EXPECT_EQ(left->front().at_ms, 1003);
  ASSERT_TRUE(store().TrimWorkerEvents(0, 4).ok());  // by rows: the 4 newest stay
  REOPEN();
  left = store().ListWorkerEvents({{"a", "b"}, 0, INT64_MAX, 100});
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_THAT(*left, ElementsAre(events[6], events[7], events[8], events[9]));
  ASSERT_TRUE(store().TrimWorkerEvents(0, 100).ok());  // fewer rows than the bound: no-op
  EXPECT_EQ(store().ListWorkerEvents({{"a", "b"}, 0, INT64_MAX, 100})->size(), 4u);
}

// A failed task with its last attempt: ListFailedTasks pages by index from a cursor.
INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, Backends(), BackendName);

// ---------------------------------------------------------------------------------------------
// SQLite only

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }

  // Runs `sql` on the file through a separate plain sqlite connection.
  static void RawExec(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  // Makes a current file a version 3 file, as idlepool wrote it before attempt timing, profile
  // keys and the workers table.
  // Makes a current file a version 6 file, as idlepool wrote it before log tails and events.
  // Makes a current file a version 13 file, as idlepool wrote it before shares and usage.
  static void DowngradeToV13(const std::string& path) {
    for (const char* t : {"users", "user_usage", "usage_days"}) {
      RawExec(path, std::string("DROP TABLE ") + t);
    }
    RawExec(path, "PRAGMA user_version = 13");
  }
  // Makes a current file a version 12 file, as idlepool wrote it before users.
  static void DowngradeToV12(const std::string& path) {
    DowngradeToV13(path);
    RawExec(path, "DROP TABLE job_owner");
    RawExec(path, "PRAGMA user_version = 12");
  }
  // Makes a current file a version 11 file, as idlepool wrote it before pipelines.
  static void DowngradeToV11(const std::string& path) {
    DowngradeToV12(path);
    RawExec(path, "DROP TABLE job_after");
    RawExec(path, "PRAGMA user_version = 11");
  }
  // Makes a current file a version 10 file, as idlepool wrote it before per-task inputs.
  static void DowngradeToV10(const std::string& path) {
    DowngradeToV11(path);
    RawExec(path, "DROP TABLE task_inputs");
    RawExec(path, "DROP TABLE job_task_inputs");
    RawExec(path, "PRAGMA user_version = 10");
  }
  // Makes a current file a version 9 file, as idlepool wrote it before services.
  static void DowngradeToV9(const std::string& path) {
    DowngradeToV10(path);
    RawExec(path, "DROP TABLE job_service");
    RawExec(path, "PRAGMA user_version = 9");
  }
  // Makes a current file a version 8 file, as idlepool wrote it before sandbox needs.
  static void DowngradeToV8(const std::string& path) {
    DowngradeToV9(path);
    RawExec(path, "DROP TABLE job_sandbox");
    RawExec(path, "PRAGMA user_version = 8");
  }
  // Makes a current file a version 7 file, as idlepool wrote it before GPUs.
  static void DowngradeToV7(const std::string& path) {
    DowngradeToV8(path);
    RawExec(path, "DROP TABLE job_gpus");
    RawExec(path, "ALTER TABLE attempts DROP COLUMN gpus");
    RawExec(path, "PRAGMA user_version = 7");
  }
  static void DowngradeToV6(const std::string& path) {
    DowngradeToV7(path);
    RawExec(path, "DROP TABLE worker_events");
    RawExec(path, "ALTER TABLE attempts DROP COLUMN log_tail");
    RawExec(path, "PRAGMA user_version = 6");
  }
  static void DowngradeToV3(const std::string& path) {
    DowngradeToV6(path);
    RawExec(path, "DROP TABLE workers");
    RawExec(path, "DROP TABLE job_predictions");
    RawExec(path, "DROP INDEX job_profiles_by_key");
    RawExec(path, "DROP TABLE job_profiles");
    for (const char* c : {"stage_ms", "run_ms", "upload_ms", "resumed"}) {
      RawExec(path, absl::StrCat("ALTER TABLE attempts DROP COLUMN ", c));
    }
    RawExec(path, "PRAGMA user_version = 3");
  }
  // Makes a current file a version 2 file, as idlepool wrote it before transfer counters.
  static void DowngradeToV2(const std::string& path) {
    DowngradeToV3(path);
    for (const char* c : {"input_bytes", "cached_bytes", "coordinator_bytes", "peer_bytes",
                          "output_bytes", "cache_hits", "cache_misses"}) {
      RawExec(path, absl::StrCat("ALTER TABLE attempts DROP COLUMN ", c));
    }
    RawExec(path, "PRAGMA user_version = 2");
  }

  static std::string RawQuery(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
          sqlite3_step(s) == SQLITE_ROW) {
        out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
      }
      sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return out;
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  TempDir dir_;
};

TEST_F(SqliteStoreTest, GarbageFileIsAnErrorNamingThePath) {
  const std::string path = Path("garbage.db");
  std::string garbage;
  for (int i = 0; i < 400; ++i) garbage += "this is not a database, just some text. ";
  {
    std::ofstream(path, std::ios::binary) << garbage;
  }
  absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_EQ(ReadFile(path), garbage);  // left untouched
}

TEST_F(SqliteStoreTest, ShortGarbageFileIsAnErrorNamingThePath) {
  const std::string path = Path("short.db");
  {
    std::ofstream(path, std::ios::binary) << "SQLite format 2\n";
  }
  absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr(path));
}

TEST_F(SqliteStoreTest, UnopenablePathIsAnErrorNamingThePath) {
  const std::string path = Path("no/such/dir/state.db");
  absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(path));

  absl::StatusOr<std::unique_ptr<Store>> d = OpenSqliteStore(dir_.path());  // a directory
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr(dir_.path()));
}

TEST_F(SqliteStoreTest, OtherSqliteDatabaseIsRefused) {
  const std::string path = Path("other.db");
  RawExec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)");
  absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master"), "1");  // not modified
}

TEST_F(SqliteStoreTest, WalModeIsActive) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("a", 1), 1).ok());
    // While open, the write went to the WAL file.
    EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
    EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");  // persistent in the file
}

TEST_F(SqliteStoreTest, NewerSchemaVersionIsRefused) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("a", 1), 1).ok());
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  RawExec(path, "PRAGMA user_version = 15");
  absl::StatusOr<std::unique_ptr<Store>> s = OpenSqliteStore(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("schema version 15"));
  // Back to the known version, it opens again with the data intact.
  RawExec(path, "PRAGMA user_version = 14");
  auto again = OpenSqliteStore(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ListJobs()->size(), 1u);
}

TEST_F(SqliteStoreTest, SchemaVersionOneIsMigratedInPlace) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("a", 1), 1).ok());
    ASSERT_TRUE((*s)->Apply({Created(1, {1, 0}, "w1")}, 2).ok());
  }
  // Make it a version 1 file, as idlepool 0.1 wrote it.
  DowngradeToV2(path);
  RawExec(path, "DROP TABLE checkpoints");
  RawExec(path, "ALTER TABLE attempts DROP COLUMN suspensions");
  RawExec(path, "ALTER TABLE attempts DROP COLUMN lost_ms");
  RawExec(path, "PRAGMA user_version = 1");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  ASSERT_TRUE((*s)->Apply({core::AttemptSuspended{1, {1, 0}},
                           core::TaskCheckpointed{{1, 0}, 1, {File("x", 'a', 1)}}},
                          3)
                  .ok());
  auto loaded = (*s)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->jobs.at(0).counters.suspensions, 1u);
  EXPECT_EQ(loaded->running.size(), 1u);
}

TEST_F(SqliteStoreTest, SchemaVersionTwoIsMigratedInPlace) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("a", 1), 1).ok());
    ASSERT_TRUE((*s)->Apply({Created(1, {1, 0}, "w1")}, 2).ok());
  }
  DowngradeToV2(path);
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  core::AttemptEnded ended{1, {1, 0}, "w1", core::AttemptOutcome::kFailed, 1, "x"};
  ended.transfer.input_bytes = 10;
  ended.transfer.cache_hits = 1;
  ASSERT_TRUE((*s)->Apply({ended}, 3).ok());
  auto loaded = (*s)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->jobs.at(0).counters.transfer, ended.transfer);
}

TEST_F(SqliteStoreTest, SchemaVersionThreeGainsTimingAndProfiles) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 1), 1).ok());
    core::AttemptEnded ok{1, {1, 0}, "w1", core::AttemptOutcome::kSucceeded, 0, ""};
    ok.transfer.output_bytes = 5;
    ASSERT_TRUE((*s)->Apply({Created(1, {1, 0}, "w1"), ok}, 2).ok());
  }
  DowngradeToV3(path);
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "3");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // The old job and attempt read with an empty key and zero timing; nothing else lost.
  auto old = (*s)->GetJobHeader(1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->profile_key, "");
  EXPECT_EQ(old->input_bytes, 0u);
  auto attempts = (*s)->ListAttempts(1);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ(attempts->at(0).timing, core::AttemptTiming{});
  EXPECT_EQ(attempts->at(0).transfer.output_bytes, 5u);
  // New jobs get keys and timing; the old job is still found by its id.
  NewJob j = MakeJob("new", 1);
  j.profile_key = std::string(64, 'c');
  ASSERT_TRUE((*s)->InsertJob(j, 3).ok());
  core::AttemptEnded ok{2, {2, 0}, "w1", core::AttemptOutcome::kSucceeded, 0, ""};
  ok.timing = {10, 20, 30, false};
  ASSERT_TRUE((*s)->Apply({Created(2, {2, 0}, "w1"), ok}, 4).ok());
  auto by_key = (*s)->ListSucceededAttempts({std::string(64, 'c'), 0, 10});
  ASSERT_TRUE(by_key.ok()) << by_key.status();
  ASSERT_EQ(by_key->size(), 1u);
  EXPECT_EQ(by_key->at(0).attempt, 2u);
  EXPECT_EQ(by_key->at(0).timing, ok.timing);
  auto by_job = (*s)->ListSucceededAttempts({"", 1, 10});
  ASSERT_TRUE(by_job.ok()) << by_job.status();
  ASSERT_EQ(by_job->size(), 1u);
  EXPECT_EQ(by_job->at(0).attempt, 1u);
}

TEST_F(SqliteStoreTest, DeletedJobIdIsNeverReused) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ(*(*s)->InsertJob(MakeJob("a", 1), 1), 1u);
    ASSERT_EQ(*(*s)->InsertJob(MakeJob("b", 1), 1), 2u);
  }
  // Some future maintenance deletes the newest job: its id must still never come back.
  RawExec(path, "DELETE FROM tasks WHERE job_id = 2; DELETE FROM jobs WHERE id = 2;");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*(*s)->InsertJob(MakeJob("c", 1), 1), 3u);
}

TEST_F(SqliteStoreTest, CommittedWritesSurviveAProcessCrash) {
  const std::string path = Path("state.db");
  // The child commits, then dies without closing anything (no checkpoint, WAL left behind).
  EXPECT_EXIT(
      {
        auto s = OpenSqliteStore(path);
        if (!s.ok()) _exit(2);
        auto id = (*s)->InsertJob(MakeJob("a", 2), 1);
        if (!id.ok()) _exit(3);
        if (!(*s)->Apply({Created(1, {*id, 0}, "w1"), TaskTo({*id, 0}, TaskState::kRunning)}, 5)
                 .ok()) {
          _exit(4);
        }
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  auto state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_THAT(state->running, ElementsAre(core::RestoredAttempt{1, {1, 0}, "w1"}));
  EXPECT_EQ(state->next_attempt_id, 2u);
}


TEST_F(SqliteStoreTest, SchemaVersionThreeGainsTheWorkersTable) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("a", 1), 1).ok());
  }
  DowngradeToV3(path);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master WHERE name = 'workers'"), "0");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  EXPECT_EQ((*s)->ListJobs()->size(), 1u);
  auto none = (*s)->ListWorkers();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  WorkerRecord w;
  w.worker = "w1";
  w.cpu_score = 512.5;
  ASSERT_TRUE((*s)->PutWorkers({w}).ok());
  EXPECT_EQ((*s)->ListWorkers()->at(0).cpu_score, 512.5);
}

TEST_F(SqliteStoreTest, SchemaVersionSixGainsLogTailsAndWorkerEventsAndKeepsEverything) {
  const std::string path = Path("state.db");
  core::AttemptEnded failed{1, {1, 0}, "w1", AttemptOutcome::kFailed, 2, "exit code 2"};
  failed.transfer.input_bytes = 7;
  failed.timing = {1, 2, 3, false};
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 2), 1).ok());
    ASSERT_TRUE((*s)->Apply({Created(1, {1, 0}, "w1"), Created(2, {1, 1}, "w2"), failed}, 2).ok());
    ASSERT_TRUE((*s)->PutJobPrediction(1, "p").ok());
    WorkerRecord w;
    w.worker = "w1";
    w.cores = 8;
    ASSERT_TRUE((*s)->PutWorkers({w}).ok());
  }
  DowngradeToV6(path);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master WHERE name = 'worker_events'"),
            "0");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // Everything of version 6 is still there; the old attempt has no log tail.
  auto attempts = (*s)->ListAttempts(1);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ(attempts->at(0).outcome, AttemptOutcome::kFailed);
  EXPECT_EQ(attempts->at(0).message, "exit code 2");
  EXPECT_EQ(attempts->at(0).transfer, failed.transfer);
  EXPECT_EQ(attempts->at(0).timing, failed.timing);
  EXPECT_EQ(attempts->at(0).log_tail, "");
  EXPECT_EQ(*(*s)->GetJobPrediction(1), "p");
  EXPECT_EQ((*s)->ListWorkers()->at(0).cores, 8u);
  auto state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->jobs.at(0).counters.failures, 1u);
  EXPECT_EQ(state->running.size(), 1u);
  // New ends keep their tails; events can be written and read.
  core::AttemptEnded ok{2, {1, 1}, "w2", AttemptOutcome::kSucceeded, 0, ""};
  ok.log_tail = "tail";
  ASSERT_TRUE((*s)->Apply({ok}, 3).ok());
  EXPECT_EQ((*s)->ListAttempts(1)->at(1).log_tail, "tail");
  ASSERT_TRUE((*s)->AppendWorkerEvents({WorkerEvent{"w1", 5, "connected", "", "", ""}}).ok());
  EXPECT_EQ((*s)->ListWorkerEvents({{"w1"}, 0, 10, 10})->size(), 1u);
}

TEST_F(SqliteStoreTest, SchemaVersionSevenGainsGpusAndKeepsEverything) {
  const std::string path = Path("state.db");
  core::AttemptEnded failed{1, {1, 0}, "w1", AttemptOutcome::kFailed, 2, "exit code 2"};
  failed.log_tail = "boom";
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 2), 1).ok());
    ASSERT_TRUE((*s)->Apply({Created(1, {1, 0}, "w1"), Created(2, {1, 1}, "w2"), failed}, 2).ok());
    ASSERT_TRUE((*s)->AppendWorkerEvents({WorkerEvent{"w1", 5, "connected", "", "", ""}}).ok());
  }
  DowngradeToV7(path);
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // Everything of version 7 is still there; old attempts and jobs have no GPUs.
  auto attempts = (*s)->ListAttempts(1);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ(attempts->at(0).log_tail, "boom");
  EXPECT_TRUE(attempts->at(1).gpus.empty());
  EXPECT_EQ((*s)->ListWorkerEvents({{"w1"}, 0, 10, 10})->size(), 1u);
  auto state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->running.size(), 1u);
  EXPECT_TRUE(state->running[0].gpus.empty());
  EXPECT_EQ(state->jobs.at(0).spec.resources, (core::Resources{2, 1, 512, 0, ""}));
  // New attempts and jobs keep theirs.
  NewJob gj = MakeJob("gpu", 1);
  gj.sched.resources.gpu_api = "opencl";
  auto id = (*s)->InsertJob(gj, 3);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE((*s)->Apply({core::AttemptCreated{3, {*id, 0}, "w1", false, {5}}}, 4).ok());
  EXPECT_EQ((*s)->ListAttempts(*id)->at(0).gpus, (std::vector<uint32_t>{5}));
  EXPECT_EQ((*s)->GetJobHeader(*id)->sched.resources.gpu_api, "opencl");
}

TEST_F(SqliteStoreTest, SchemaVersionEightGainsSandboxNeedsAndKeepsEverything) {
  const std::string path = Path("state.db");
  NewJob gpu = MakeJob("gpu", 1);
  gpu.sched.resources.gpu_api = "cuda";
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 2), 1).ok());
    ASSERT_TRUE((*s)->InsertJob(gpu, 1).ok());
  }
  DowngradeToV8(path);
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // A job of version 8 has no sandbox row: the default (no host network); the rest is kept.
  auto state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_FALSE(state->jobs[0].spec.resources.host_network);
  EXPECT_EQ(state->jobs[1].spec.resources.gpu_api, "cuda");
  // A new job keeps its own, in a row of the new table.
  NewJob host = MakeJob("host", 1);
  host.sched.resources.host_network = true;
  auto id = (*s)->InsertJob(host, 3);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE((*s)->GetJobHeader(*id)->sched.resources.host_network);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM job_sandbox"), "1");
  state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE(state->jobs.at(2).spec.resources.host_network);
}

TEST_F(SqliteStoreTest, SchemaVersionNineGainsServicesAndKeepsEverything) {
  const std::string path = Path("state.db");
  NewJob host = MakeJob("host", 1);
  host.sched.resources.host_network = true;
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 2), 1).ok());
    ASSERT_TRUE((*s)->InsertJob(host, 1).ok());
  }
  DowngradeToV9(path);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM sqlite_master WHERE name = 'job_service'"), "0");
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // A job of version 9 has no service row: a batch job; the rest is kept.
  auto jobs = (*s)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_FALSE(jobs->at(0).service.has_value());
  EXPECT_FALSE(jobs->at(1).service.has_value());
  EXPECT_TRUE(jobs->at(1).sched.resources.host_network);
  auto state = (*s)->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_EQ(state->tasks.size(), 3u);
  // A new service keeps its table, in a row of the new table, across a reopen.
  NewJob svc = MakeJob("svc", 3);
  svc.service = spec::ServiceSpec{};
  svc.service->max_replicas = 3;
  svc.service->drain_seconds = 5;
  auto id = (*s)->InsertJob(svc, 3);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM job_service"), "1");
  s->reset();
  s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->GetJobHeader(*id)->service, svc.service);
  EXPECT_FALSE((*s)->GetJobHeader(1)->service.has_value());
}

TEST_F(SqliteStoreTest, SchemaVersionTwelveGainsOwnersAndKeepsEverything) {
  const std::string path = Path("state.db");
  {
    auto s = OpenSqliteStore(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->InsertJob(MakeJob("old", 2), 1).ok());
  }
  DowngradeToV12(path);
  auto s = OpenSqliteStore(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), "14");
  // A job of version 12 has no owner row: nobody's, priority 0; the rest is kept.
  auto old = (*s)->GetJobHeader(1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->sched.user, "");
  EXPECT_EQ(old->sched.task_count, 2u);
  NewJob mine = MakeJob("mine", 1);
  mine.sched.user = "alice";
  auto id = (*s)->InsertJob(mine, 2);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(RawQuery(path, "SELECT user FROM job_owner"), "alice");
  DowngradeToV13(path);  // and on to 14: users and usage start empty
  auto again = OpenSqliteStore(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)->LoadUsers()->users.empty());
  EXPECT_TRUE((*again)->PutUser(UserRow{"alice", 2.0}).ok());
}

}  // namespace
}  // namespace idlepool::store
