// Deny by default: the roles that may call each RPC of the pool (trust/role.h), by full method
// name ("/idlepool.v1.Jobs/SubmitJob"). A method missing from the table may be called by nobody;
// tests/unit/method_roles_test.cc enumerates every method of every service in the proto and fails
// when one is missing, so a new RPC cannot ship unmapped.
//
// Where each service is served: WorkerSession, Blobs, Probes, Jobs and Join on the coordinator's
// TLS port; Admin only on DATA_DIR/admin.sock; Peer on each worker's peer port.
//
// Pure data; thread-safe (immutable).
#pragma once

#include <string_view>

#include "trust/role.h"

namespace idlepool::coordinator {

struct MethodRule {
  trust::RoleSet roles;
  // No credential on the connection: the request itself carries one (JoinPool's join token).
  bool public_call = false;
};

// The rule of `full_method`, or nullptr when it is not mapped (deny).
const MethodRule* FindMethodRule(std::string_view full_method);

// Every mapped method, for the enumeration test and the docs.
struct MethodRuleEntry {
  std::string_view method;
  MethodRule rule;
};
const MethodRuleEntry* MethodRulesBegin();
const MethodRuleEntry* MethodRulesEnd();

}  // namespace idlepool::coordinator
