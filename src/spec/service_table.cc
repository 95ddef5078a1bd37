// [service] of a job file: the job is a service, its tasks are replicas
// (spec/service_internal.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spec/service.h"
#include "spec/service_internal.h"
#include "spec/toml_util.h"

namespace idlepool::spec::internal {
namespace {

using toml_util::Describe;

// The top-level keys a service file may have (an empty [retry] among them: its keys are refused
// on their own); the others of a job file split a batch job into tasks or name its outputs.
constexpr std::string_view kServiceTopKeys[] = {"name",    "command", "inputs", "resources",
                                                "sandbox", "service", "retry"};

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

absl::Status KeyError(const std::string& file, const toml::source_region& where,
                      std::string_view key, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(toml_util::Where(file, where), ": key '", A(key), "': ", A(message)));
}

// Why a service file may not have top-level key `key` (not in kServiceTopKeys).
std::string NotInAService(std::string_view key) {
  if (key == "outputs" || key == "allow_empty_outputs") {
    return "a service has no outputs: it produces responses, not files";
  }
  if (key == "retry") {
    return "a service has no [retry]: its replicas run until it is stopped (no timeout_s), and "
           "one that exits is restarted with backoff for as long as it runs (no max_attempts)";
  }
  return absl::StrCat("a service has no '", A(key),
                      "': its tasks are its replicas (set [service] replicas, or min_replicas "
                      "and max_replicas)");
}

// Reads an optional integer key of [service] in [min, max] into `out`.
absl::Status ReadCount(const std::string& file, const toml::table& t, std::string_view key,
                       int64_t min, int64_t max, uint32_t& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  const std::string full = absl::StrCat("service.", A(key));
  const std::optional<int64_t> v = n->is_integer() ? n->value<int64_t>() : std::nullopt;
  if (!v.has_value() || *v < min || *v > max) {
    return KeyError(
        file, n->source(), full,
        absl::StrCat("must be an integer from ", min, " to ", max, ", got ", Describe(*n)));
  }
  out = static_cast<uint32_t>(*v);
  return absl::OkStatus();
}

absl::Status ReadText(const std::string& file, const toml::table& t, std::string_view key,
                      std::string& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  if (!n->is_string()) {
    return KeyError(file, n->source(), absl::StrCat("service.", A(key)),
                    absl::StrCat("must be a string, got ", Describe(*n)));
  }
  out = n->as_string()->get();
  return absl::OkStatus();
}

// `replicas = N`, or `min_replicas` and `max_replicas`, or neither (one replica).
absl::Status ReadReplicas(const std::string& file, const toml::table& t, ServiceSpec& s) {
  const toml::node* fixed = t.get("replicas");
  const toml::node* min = t.get("min_replicas");
  const toml::node* max = t.get("max_replicas");
  if (fixed != nullptr && (min != nullptr || max != nullptr)) {
    const toml::node* other = min != nullptr ? min : max;
    return KeyError(file, other->source(),
                    min != nullptr ? "service.min_replicas" : "service.max_replicas",
                    absl::StrCat("give either replicas = N (a fixed count) or min_replicas and "
                                 "max_replicas (autoscaled between them), not both; replicas is "
                                 "given at line ",
                                 fixed->source().begin.line));
  }
  if (min != nullptr && max == nullptr) {
    return KeyError(file, min->source(), "service.min_replicas",
                    "needs max_replicas (the most replicas autoscaling may run)");
  }
  if (absl::Status st = ReadCount(file, t, "replicas", 1, kMaxReplicas, s.max_replicas); !st.ok()) {
    return st;
  }
  s.min_replicas = s.max_replicas;
  if (absl::Status st = ReadCount(file, t, "max_replicas", 1, kMaxReplicas, s.max_replicas);
      !st.ok()) {
    return st;
  }
  return ReadCount(file, t, "min_replicas", 0, kMaxReplicas, s.min_replicas);
}

absl::Status ReadKeys(const std::string& file, const toml::table& t, ServiceSpec& s) {
  if (absl::Status st = ReadReplicas(file, t, s); !st.ok()) return st;
  if (absl::Status st = ReadText(file, t, "protocol", s.protocol); !st.ok()) return st;
  if (absl::Status st = ReadText(file, t, "model", s.model); !st.ok()) return st;
  if (s.OpenAi() && t.get("model") == nullptr) {
    return KeyError(file, t.get("protocol")->source(), "service.protocol",
                    "\"openai\" needs model = \"...\" under [service]: the name OpenAI clients "
                    "send, e.g. \"org/model:tag\"");
  }
  if (absl::Status st = ReadText(file, t, "health", s.health); !st.ok()) return st;
  if (absl::Status st = ReadCount(file, t, "max_concurrent", 1, kMaxConcurrent, s.max_concurrent);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ReadCount(file, t, "drain_seconds", 0, kMaxDrainSeconds, s.drain_seconds);
      !st.ok()) {
    return st;
  }
  return ReadCount(file, t, "replicas_per_machine", 1, kMaxReplicasPerMachine,
                   s.replicas_per_machine);
}

}  // namespace

absl::Status ReadServiceTable(
    const std::string& file, const toml::table& root,
    const std::function<std::string(std::string_view name)>& misplaced_hint, JobSpec& spec) {
  const toml::node* node = root.get("service");
  if (node == nullptr) return absl::OkStatus();
  const toml::table* t = node->as_table();
  if (t == nullptr) {
    return KeyError(file, node->source(), "service",
                    absl::StrCat("must be a table ([service]), got ", Describe(*node)));
  }
  if (absl::Status s = toml_util::CheckKeys(file, *t, "service.", kServiceKeys, misplaced_hint);
      !s.ok()) {
    return s;
  }
  // [retry]'s keys, then the first top-level key in file order that a service may not have (an
  // empty [retry] asks for nothing).
  const toml::node* retry = root.get("retry");
  if (retry != nullptr && retry->is_table()) {
    if (const toml::key* k = toml_util::FirstUnknownKey(*retry->as_table(), {})) {
      return KeyError(file, k->source(), absl::StrCat("retry.", A(k->str())),
                      NotInAService("retry"));
    }
  }
  if (const toml::key* k = toml_util::FirstUnknownKey(root, kServiceTopKeys)) {
    return KeyError(file, k->source(), k->str(), NotInAService(k->str()));
  }
  ServiceSpec service;
  if (absl::Status s = ReadKeys(file, *t, service); !s.ok()) return s;
  spec.service = std::move(service);
  return absl::OkStatus();
}

}  // namespace idlepool::spec::internal
