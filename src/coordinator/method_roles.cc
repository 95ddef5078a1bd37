#include "coordinator/method_roles.h"

#include <iterator>

namespace idlepool::coordinator {
namespace {

using trust::Role;
constexpr trust::RoleSet kWorker = Role::kWorker;
// An operator does all a submitter does, on every user's jobs (the services check ownership).
constexpr trust::RoleSet kSubmit = trust::RoleSet(Role::kSubmit) | Role::kOperator;
constexpr trust::RoleSet kAdmin = Role::kAdmin;
constexpr trust::RoleSet kReaders = kSubmit | Role::kRead;
constexpr trust::RoleSet kAnyMember = kReaders | Role::kWorker;

// Reading a job's outputs (GetBlob, GetManifest) is reading; uploading inputs (PutBlob, HasBlobs)
// is submitting. Everything a worker does to run tasks is the worker's alone.
constexpr MethodRuleEntry kRules[] = {
    {"/idlepool.v1.WorkerSession/Session", {kWorker}},
    {"/idlepool.v1.Blobs/PutBlob", {kWorker | Role::kSubmit | Role::kOperator}},
    {"/idlepool.v1.Blobs/GetBlob", {kAnyMember}},
    {"/idlepool.v1.Blobs/HasBlobs", {kWorker | Role::kSubmit | Role::kOperator}},
    {"/idlepool.v1.Blobs/GetManifest", {kAnyMember}},
    {"/idlepool.v1.Blobs/LocateBlob", {kWorker}},
    {"/idlepool.v1.Blobs/FetchChunk", {kWorker}},
    {"/idlepool.v1.Probes/Probe", {kWorker}},
    {"/idlepool.v1.Probes/ProbeDown", {kWorker}},
    {"/idlepool.v1.Probes/ProbeUp", {kWorker}},
    {"/idlepool.v1.Jobs/SubmitJob", {kSubmit}},
    {"/idlepool.v1.Jobs/CancelJob", {kSubmit}},
    {"/idlepool.v1.Jobs/ScaleService", {kSubmit}},
    {"/idlepool.v1.Jobs/WatchGateway", {kSubmit}},
    {"/idlepool.v1.Jobs/GetJob", {kReaders}},
    {"/idlepool.v1.Jobs/ListJobs", {kReaders}},
    {"/idlepool.v1.Jobs/ListServices", {kReaders}},
    {"/idlepool.v1.Jobs/ListOutputs", {kReaders}},
    {"/idlepool.v1.Jobs/ListWorkers", {kReaders}},
    {"/idlepool.v1.Jobs/GetProfile", {kReaders}},
    {"/idlepool.v1.Jobs/PlanJob", {kReaders}},
    {"/idlepool.v1.Jobs/GetJobTimeline", {kReaders}},
    {"/idlepool.v1.Jobs/ListFailedTasks", {kReaders}},
    {"/idlepool.v1.Jobs/GetTaskLog", {kReaders}},
    {"/idlepool.v1.Jobs/TaskLogs", {kReaders}},
    {"/idlepool.v1.Jobs/DeleteJob", {kSubmit}},
    {"/idlepool.v1.Jobs/SetPriority", {kSubmit}},
    {"/idlepool.v1.Jobs/ListUsers", {kReaders}},
    {"/idlepool.v1.Jobs/GetUsage", {kReaders}},
    {"/idlepool.v1.Jobs/CollectGarbage", {kAdmin}},
    {"/idlepool.v1.Peer/GetChunk", {kWorker}},
    {"/idlepool.v1.Peer/HaveChunks", {kWorker}},
    {"/idlepool.v1.Join/JoinPool", {trust::RoleSet(), /*public_call=*/true}},
    {"/idlepool.v1.Join/RenewCertificate", {kWorker}},
    {"/idlepool.v1.Join/WhoAmI", {kAnyMember}},
    {"/idlepool.v1.Admin/CreateToken", {kAdmin}},
    {"/idlepool.v1.Admin/ListTokens", {kAdmin}},
    {"/idlepool.v1.Admin/RevokeToken", {kAdmin}},
    {"/idlepool.v1.Admin/RevokeWorker", {kAdmin}},
    {"/idlepool.v1.Admin/ResetWorker", {kAdmin}},
    {"/idlepool.v1.Admin/SetUser", {kAdmin}},
};

}  // namespace

const MethodRule* FindMethodRule(std::string_view full_method) {
  for (const auto& e : kRules) {
    if (e.method == full_method) return &e.rule;
  }
  return nullptr;
}

const MethodRuleEntry* MethodRulesBegin() { return std::begin(kRules); }
const MethodRuleEntry* MethodRulesEnd() { return std::end(kRules); }

}  // namespace idlepool::coordinator
