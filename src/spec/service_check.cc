// The rules of a service spec (spec/service_internal.h), shared by Validate and ParseJobToml.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "spec/service.h"
#include "spec/service_internal.h"
#include "spec/toml_util.h"

namespace idlepool::spec::internal {
namespace {

using Maybe = std::optional<ServiceProblem>;

Maybe Bad(std::string field, std::string message) {
  return ServiceProblem{std::move(field), std::move(message)};
}

// A value outside [min, max], or nullopt.
Maybe OutOfRange(std::string field, uint32_t v, uint32_t min, uint32_t max) {
  if (v >= min && v <= max) return std::nullopt;
  return Bad(std::move(field), absl::StrCat("must be ", min, " to ", max, ", got ", v));
}

bool ModelChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
         c == '/' || c == ':';
}

// What a service spec may not have of a batch job's fields.
Maybe CheckBatchFields(const JobSpec& spec) {
  auto no_split = [](std::string field) {
    std::string message =
        absl::StrCat("a service has no '", field,
                     "': its tasks are its replicas (set [service] replicas, or min_replicas "
                     "and max_replicas)");
    return Bad(std::move(field), std::move(message));
  };
  if (spec.kind == TaskKind::kFrames || !spec.frames.empty()) return no_split("frames");
  if (spec.kind == TaskKind::kItems || !spec.items.empty()) return no_split("items");
  if (spec.count != 0) return no_split("count");
  if (spec.chunk != 1) return no_split("chunk");
  if (!spec.outputs.empty() || spec.allow_empty_outputs) {
    return Bad(spec.outputs.empty() ? "allow_empty_outputs" : "outputs",
               "a service has no outputs: it produces responses, not files");
  }
  if (spec.timeout_s != 0) {
    return Bad("retry.timeout_s",
               "a service has no timeout: its replicas run until it is stopped or scaled down");
  }
  return std::nullopt;
}

Maybe CheckModel(const ServiceSpec& s) {
  if (!s.OpenAi()) {
    if (s.model.empty()) return std::nullopt;
    return Bad("service.model",
               absl::StrCat("is only for protocol = \"openai\" (clients of an \"", s.protocol,
                            "\" service name it by its path, /services/NAME/...)"));
  }
  if (s.model.empty()) {
    return Bad("service.model",
               "protocol = \"openai\" needs a model: the name OpenAI clients send, e.g. "
               "model = \"org/model:tag\"");
  }
  if (s.model.size() > kMaxModelBytes || !std::all_of(s.model.begin(), s.model.end(), ModelChar)) {
    return Bad("service.model", absl::StrCat("'", toml_util::Shorten(s.model),
                                             "' is not a valid model name: use 1 to ",
                                             kMaxModelBytes, " of A-Z a-z 0-9 . _ - / :"));
  }
  return std::nullopt;
}

Maybe CheckHealth(const std::string& health) {
  const std::string shown = absl::StrCat("'", toml_util::Shorten(health), "' ");
  if (health.empty() || health.front() != '/') {
    return Bad("service.health",
               absl::StrCat(shown, "must be a request path starting with '/', e.g. \"/health\""));
  }
  if (health.size() > kMaxHealthBytes) {
    return Bad("service.health",
               absl::StrCat("is ", health.size(), " bytes, over the limit of ", kMaxHealthBytes));
  }
  for (char c : health) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') {
      return Bad("service.health",
                 absl::StrCat(shown,
                              "must be printable ASCII without spaces or '#' (percent-encode "
                              "other characters)"));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ServiceProblem> CheckService(const JobSpec& spec) {
  if (!spec.service.has_value()) return std::nullopt;
  if (Maybe p = CheckBatchFields(spec)) return p;
  const ServiceSpec& s = *spec.service;
  if (Maybe p = OutOfRange("service.max_replicas", s.max_replicas, 1, kMaxReplicas)) return p;
  if (s.min_replicas > s.max_replicas) {
    return Bad("service.min_replicas",
               absl::StrCat("is ", s.min_replicas, ", more than max_replicas = ", s.max_replicas));
  }
  if (s.protocol != kProtocolHttp && s.protocol != kProtocolOpenAi) {
    return Bad("service.protocol", absl::StrCat("must be \"openai\" or \"http\", got \"",
                                                toml_util::Shorten(s.protocol), "\""));
  }
  if (Maybe p = CheckModel(s)) return p;
  if (Maybe p = CheckHealth(s.health)) return p;
  if (Maybe p = OutOfRange("service.max_concurrent", s.max_concurrent, 1, kMaxConcurrent)) {
    return p;
  }
  if (Maybe p = OutOfRange("service.drain_seconds", s.drain_seconds, 0, kMaxDrainSeconds)) {
    return p;
  }
  return OutOfRange("service.replicas_per_machine", s.replicas_per_machine, 1,
                    kMaxReplicasPerMachine);
}

}  // namespace idlepool::spec::internal
