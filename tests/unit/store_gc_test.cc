// The store's collection calls on every backend (issue 18 point 6): the blobs it references
// (ReferencedBlobs: inputs through the spec, outputs, checkpoints) and the removal of a finished
// job (DeleteJob). Fixture: store_fixture.h.
#include "store_fixture.h"

namespace idlepool::store {
namespace {

std::string Sha(char hex) { return std::string(64, hex); }

// The fixture's specs are opaque bytes; this decoder reads "inputs:<hex chars>" as one input
// blob per char, as the coordinator decodes a v1::JobSpec.
std::vector<std::string> Inputs(const std::string& spec) {
  std::vector<std::string> out;
  if (spec.rfind("inputs:", 0) != 0) return out;
  for (char c : spec.substr(7)) out.push_back(Sha(c));
  return out;
}

class StoreGc : public StoreConformance {
 protected:
  // A job with input blobs `inputs`, one task that succeeded with output `out` and checkpoint
  // `ckpt` (0: none), finished when `finish`.
  core::JobId AddJob(const std::string& inputs, char out, char ckpt, bool finish);
};

core::JobId StoreGc::AddJob(const std::string& inputs, char out, char ckpt, bool finish) {
  NewJob j = MakeJob("job", 1);
  j.spec = "inputs:" + inputs;
  const core::JobId id = Insert(j, 10);
  const TaskKey k{id, 0};
  const core::AttemptId a = id * 10;
  std::vector<Decision> batch{Created(a, k, "w1")};
  if (ckpt != 0) batch.push_back(core::TaskCheckpointed{k, a, {File("ckpt", ckpt, 5)}});
  if (finish) {
    batch.push_back(Ended(a, k, "w1", AttemptOutcome::kSucceeded));
    batch.push_back(TaskTo(k, TaskState::kSucceeded, 0, a, {File("out.txt", out, 7)}));
    batch.push_back(JobTo(id, JobState::kSucceeded));
  }
  EXPECT_TRUE(store().Apply(batch, 20).ok());
  return id;
}

TEST_P(StoreGc, ReferencedBlobsAreInputsOutputsAndCheckpoints) {
  AddJob("ab", 'c', 'd', true);
  AddJob("b", 'e', 0, false);
  REOPEN();
  auto refs = store().ReferencedBlobs(Inputs);
  ASSERT_TRUE(refs.ok()) << refs.status();
  EXPECT_THAT(*refs, ElementsAre(Sha('a'), Sha('b'), Sha('c'), Sha('d')));
}

TEST_P(StoreGc, DeleteRemovesEveryRowAndReturnsWhatTheJobNamed) {
  const core::JobId gone = AddJob("ab", 'c', 'd', true);
  const core::JobId kept = AddJob("b", 'e', 0, true);
  ASSERT_TRUE(store().PutJobPrediction(gone, "prediction").ok());
  auto named = store().DeleteJob(gone, Inputs);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_THAT(*named, ElementsAre(Sha('a'), Sha('b'), Sha('c'), Sha('d')));
  REOPEN();
  EXPECT_EQ(store().GetJob(gone).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().ListTasks(gone).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store().GetJobPrediction(gone).status().code(), absl::StatusCode::kNotFound);
  auto jobs = store().ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, kept);
  core::RestoredState s = MustLoad();
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.tasks.size(), 1u);
  // What the other job still names stays referenced; the deleted job's own blobs do not.
  auto refs = store().ReferencedBlobs(Inputs);
  ASSERT_TRUE(refs.ok());
  EXPECT_THAT(*refs, ElementsAre(Sha('b'), Sha('e')));
  // Ids are never reused.
  EXPECT_EQ(Insert(MakeJob("next", 1)), kept + 1);
}

TEST_P(StoreGc, DeleteRefusesARunningJobAndAnUnknownOne) {
  const core::JobId running = AddJob("a", 0, 'd', false);
  auto refused = store().DeleteJob(running, Inputs);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_EQ(store().DeleteJob(99, Inputs).status().code(), absl::StatusCode::kNotFound);
  REOPEN();
  EXPECT_TRUE(store().GetJob(running).ok());
  auto refs = store().ReferencedBlobs(Inputs);
  ASSERT_TRUE(refs.ok());
  EXPECT_THAT(*refs, ElementsAre(Sha('a'), Sha('d')));
}

// Per-task inputs name blobs too: referenced while their job is stored, gone with it.
TEST_P(StoreGc, TaskInputsAreReferencedUntilTheirJobIsDeleted) {
  NewJob j = MakeJob("per-task", 2);
  j.spec = "inputs:a";
  j.task_inputs = {{0, "segs/0.mp4", Sha('f'), 9, 0644}, {1, "segs/1.mp4", Sha('9'), 9, 0644}};
  const core::JobId id = Insert(j, 10);
  std::vector<Decision> batch{JobTo(id, JobState::kCancelled)};
  ASSERT_TRUE(store().Apply(batch, 20).ok());
  REOPEN();
  auto refs = store().ReferencedBlobs(Inputs);
  ASSERT_TRUE(refs.ok()) << refs.status();
  EXPECT_THAT(*refs, ElementsAre(Sha('9'), Sha('a'), Sha('f')));
  auto named = store().DeleteJob(id, Inputs);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_THAT(*named, ElementsAre(Sha('9'), Sha('a'), Sha('f')));
  REOPEN();
  refs = store().ReferencedBlobs(Inputs);
  ASSERT_TRUE(refs.ok());
  EXPECT_TRUE(refs->empty());
  EXPECT_EQ(store().ListTaskInputs(id, std::nullopt).status().code(),
            absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreGc, Backends(), BackendName);

}  // namespace
}  // namespace idlepool::store
