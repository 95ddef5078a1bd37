#include "trust/role.h"

namespace idlepool::trust {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kWorker:
      return "worker";
    case Role::kSubmit:
      return "submit";
    case Role::kRead:
      return "read";
    case Role::kAdmin:
      return "admin";
    case Role::kOperator:
      return "operator";
  }
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kWorker, Role::kSubmit, Role::kRead, Role::kAdmin, Role::kOperator}) {
    if (RoleName(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace idlepool::trust
