// The bound on one assignment (coordinator/assignment_cap.h): what is refused, and the reason.
#include "coordinator/assignment_cap.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace idlepool::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(AssignmentCap, UnderTheCapIsSent) {
  EXPECT_FALSE(RefuseAssignment({{1, 0}, 1000, 3, 0, 0, 0}, 1000).has_value());
}

TEST(AssignmentCap, AfterOutputsOverTheCapRefuseTheWholeJob) {
  // 2 job inputs and 1,000,000 outputs of the upstream: 150 MB.
  auto r =
      RefuseAssignment({{7, 3}, 150u << 20, 1000002, 1000000, 149u << 20, 0}, kMaxAssignmentBytes);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->whole_job);
  EXPECT_THAT(r->reason, HasSubstr("the assignment of task 3 would be 150.0 MiB"));
  EXPECT_THAT(r->reason, HasSubstr("1000000 of them outputs of the jobs it runs after"));
  EXPECT_THAT(r->reason, HasSubstr("the most one assignment carries is 64.0 MiB"));
}

TEST(AssignmentCap, ATasksOwnInputsRefuseThatTaskOnly) {
  // 10 job inputs and 990 of the task's own, 100 bytes each: only the task's make it too big.
  auto r = RefuseAssignment({{7, 5}, 100000, 1000, 0, 0, 990}, 50000);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->whole_job);
  EXPECT_THAT(r->reason, HasSubstr("990 of them the task's own"));
}

}  // namespace
}  // namespace idlepool::coordinator
