// Deny by default: every RPC of every service in the proto is mapped to the roles that may call
// it (coordinator/method_roles.h), and the table names no method the proto lacks.
#include "coordinator/method_roles.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "idlepool.pb.h"

namespace idlepool::coordinator {
namespace {

using trust::Role;

// Every service of idlepool.proto and of the files it imports (serve.proto, trust.proto).
std::set<std::string> ProtoMethods() {
  std::set<std::string> out;
  const auto* main = v1::Hello::descriptor()->file();
  std::vector<const google::protobuf::FileDescriptor*> files = {main};
  for (int i = 0; i < main->dependency_count(); ++i) files.push_back(main->dependency(i));
  for (const auto* file : files) {
    for (int s = 0; s < file->service_count(); ++s) {
      const auto* service = file->service(s);
      for (int m = 0; m < service->method_count(); ++m) {
        out.insert("/" + service->full_name() + "/" + service->method(m)->name());
      }
    }
  }
  return out;
}

TEST(MethodRoles, EveryMethodOfEveryServiceIsMapped) {
  const auto methods = ProtoMethods();
  ASSERT_GT(methods.size(), 20u);
  for (const auto& m : methods) {
    const MethodRule* rule = FindMethodRule(m);
    ASSERT_NE(rule, nullptr) << m << " is not mapped to any role (method_roles.cc)";
    EXPECT_TRUE(rule->public_call || !rule->roles.empty()) << m << " maps to no role";
  }
}

TEST(MethodRoles, TheTableNamesOnlyRealMethods) {
  const auto methods = ProtoMethods();
  for (auto* e = MethodRulesBegin(); e != MethodRulesEnd(); ++e) {
    EXPECT_TRUE(methods.count(std::string(e->method))) << e->method << " is not in the proto";
  }
}

TEST(MethodRoles, UnknownMethodsAreDenied) {
  EXPECT_EQ(FindMethodRule("/idlepool.v1.Jobs/DropTables"), nullptr);
  EXPECT_EQ(FindMethodRule(""), nullptr);
}

TEST(MethodRoles, RolesAreSeparated) {
  auto may = [](const char* m, Role r) { return FindMethodRule(m)->roles.Has(r); };
  // Submitting and cancelling: submit only.
  EXPECT_TRUE(may("/idlepool.v1.Jobs/SubmitJob", Role::kSubmit));
  EXPECT_FALSE(may("/idlepool.v1.Jobs/SubmitJob", Role::kRead));
  EXPECT_FALSE(may("/idlepool.v1.Jobs/SubmitJob", Role::kWorker));
  EXPECT_FALSE(may("/idlepool.v1.Jobs/CancelJob", Role::kRead));
  EXPECT_FALSE(may("/idlepool.v1.Jobs/CancelJob", Role::kWorker));
  // Running tasks: the worker only.
  EXPECT_TRUE(may("/idlepool.v1.WorkerSession/Session", Role::kWorker));
  EXPECT_FALSE(may("/idlepool.v1.WorkerSession/Session", Role::kSubmit));
  EXPECT_FALSE(may("/idlepool.v1.Blobs/FetchChunk", Role::kSubmit));
  EXPECT_FALSE(may("/idlepool.v1.Peer/GetChunk", Role::kSubmit));
  // Reading: read and submit.
  EXPECT_TRUE(may("/idlepool.v1.Jobs/GetJob", Role::kRead));
  EXPECT_FALSE(may("/idlepool.v1.Jobs/GetJob", Role::kWorker));
  // Administration: never over the network roles.
  for (auto r : {Role::kWorker, Role::kSubmit, Role::kOperator, Role::kRead}) {
    EXPECT_FALSE(may("/idlepool.v1.Admin/CreateToken", r));
    EXPECT_FALSE(may("/idlepool.v1.Admin/RevokeWorker", r));
  }
  EXPECT_TRUE(FindMethodRule("/idlepool.v1.Join/JoinPool")->public_call);
}

// An operator may call whatever a submitter may (the services then let it act on every user's
// jobs, job_owner.h), and nothing of a worker's or the admin's.
TEST(MethodRoles, AnOperatorMayDoWhatASubmitterMay) {
  for (auto* e = MethodRulesBegin(); e != MethodRulesEnd(); ++e) {
    if (e->rule.public_call) continue;
    EXPECT_EQ(e->rule.roles.Has(Role::kSubmit), e->rule.roles.Has(Role::kOperator)) << e->method;
  }
  EXPECT_FALSE(FindMethodRule("/idlepool.v1.WorkerSession/Session")->roles.Has(Role::kOperator));
  EXPECT_FALSE(FindMethodRule("/idlepool.v1.Jobs/CollectGarbage")->roles.Has(Role::kOperator));
}

}  // namespace
}  // namespace idlepool::coordinator
