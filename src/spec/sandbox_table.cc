// [sandbox] of a job file: how its tasks are isolated on the worker (spec/sandbox_internal.h).
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "spec/sandbox_internal.h"
#include "spec/toml_util.h"

namespace idlepool::spec::internal {
namespace {

absl::Status KeyError(const std::string& file, const toml::source_region& where,
                      std::string_view key, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(
      toml_util::Where(file, where), ": key '", absl::string_view(key.data(), key.size()),
      "': ", absl::string_view(message.data(), message.size())));
}

}  // namespace

absl::Status ReadSandboxTable(
    const std::string& file, const toml::table& root,
    const std::function<std::string(std::string_view name)>& misplaced_hint, JobSpec& spec) {
  const toml::node* node = root.get("sandbox");
  if (node == nullptr) return absl::OkStatus();
  const toml::table* t = node->as_table();
  if (t == nullptr) {
    return KeyError(file, node->source(), "sandbox",
                    absl::StrCat("must be a table ([sandbox]), got ", toml_util::Describe(*node)));
  }
  if (absl::Status s = toml_util::CheckKeys(file, *t, "sandbox.", kSandboxKeys, misplaced_hint);
      !s.ok()) {
    return s;
  }
  if (const toml::node* n = t->get("network")) {
    const std::optional<std::string_view> v = n->value<std::string_view>();
    if (v == "none" || v == "host") {
      spec.resources.host_network = v == "host";
    } else {
      return KeyError(file, n->source(), "sandbox.network",
                      absl::StrCat("must be \"none\" (no network: inputs come through the pool) "
                                   "or \"host\" (the worker's network), got ",
                                   toml_util::Describe(*n)));
    }
  }
  return absl::OkStatus();
}

}  // namespace idlepool::spec::internal
