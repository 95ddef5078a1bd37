// `after` and [retry] backoff_s / max_backoff_s / hold_off_after of a job file
// (spec/pipeline_internal.h).
#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "spec/pipeline_internal.h"
#include "spec/toml_util.h"
#include "text/utf8.h"

namespace idlepool::spec::internal {
namespace {

absl::Status KeyError(const std::string& file, const toml::source_region& where,
                      std::string_view key, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(
      toml_util::Where(file, where), ": key '", absl::string_view(key.data(), key.size()),
      "': ", absl::string_view(message.data(), message.size())));
}

absl::Status ReadSeconds(const std::string& file, const toml::table& t, std::string_view key,
                         std::string_view field, double& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  if (n->is_integer()) {
    out = static_cast<double>(n->as_integer()->get());
  } else if (n->is_floating_point()) {
    out = n->as_floating_point()->get();
  } else {
    return KeyError(file, n->source(), field,
                    absl::StrCat("must be a number of seconds, got ", toml_util::Describe(*n)));
  }
  return absl::OkStatus();
}

std::string Seconds(double s) { return absl::StrCat(s); }

}  // namespace

absl::Status ReadAfterAndBackoff(const std::string& file, const toml::table& root,
                                 const toml::table* retry, JobSpec& spec) {
  if (const toml::node* n = root.get("after")) {
    const toml::array* a = n->as_array();
    if (a == nullptr) {
      return KeyError(file, n->source(), "after",
                      absl::StrCat("must be an array of job ids or names (after = [\"render\"]), "
                                   "got ",
                                   toml_util::Describe(*n)));
    }
    for (const toml::node& e : *a) {
      if (!e.is_string()) {
        return KeyError(file, e.source(), "after",
                        absl::StrCat("each element must be a job id or name (a string), got ",
                                     toml_util::Describe(e)));
      }
      spec.after.push_back(e.as_string()->get());
    }
  }
  if (retry == nullptr) return absl::OkStatus();
  if (const toml::node* n = retry->get("hold_off_after")) {
    const int64_t v = n->is_integer() ? n->as_integer()->get() : 0;
    if (!n->is_integer() || v < 1) {
      return KeyError(file, n->source(), "retry.hold_off_after",
                      absl::StrCat("must be a positive integer, got ",
                                   n->is_integer() ? absl::StrCat(v) : toml_util::Describe(*n)));
    }
    if (v > kMaxHoldOffAfter) {
      return KeyError(file, n->source(), "retry.hold_off_after",
                      absl::StrCat("must be at most ", kMaxHoldOffAfter, ", got ", v));
    }
    spec.hold_off_after = static_cast<uint32_t>(v);
  }
  if (absl::Status s = ReadSeconds(file, *retry, "backoff_s", "retry.backoff_s", spec.backoff_s);
      !s.ok()) {
    return s;
  }
  return ReadSeconds(file, *retry, "max_backoff_s", "retry.max_backoff_s", spec.max_backoff_s);
}

std::optional<PipelineProblem> CheckPipeline(const JobSpec& spec) {
  for (const auto& [field, v] : {std::pair<const char*, double>{"retry.backoff_s", spec.backoff_s},
                                 {"retry.max_backoff_s", spec.max_backoff_s}}) {
    if (!std::isfinite(v) || v < 0 || v > kMaxBackoffS) {
      return PipelineProblem{field, absl::StrCat("must be between 0 and ", Seconds(kMaxBackoffS),
                                                 " seconds, got ", Seconds(v))};
    }
  }
  if (spec.backoff_s > spec.max_backoff_s) {
    return PipelineProblem{
        "retry.backoff_s",
        absl::StrCat(Seconds(spec.backoff_s), " is over retry.max_backoff_s (",
                     Seconds(spec.max_backoff_s), "; its default is ", Seconds(kDefaultMaxBackoffS),
                     "): raise max_backoff_s too")};
  }
  if (spec.hold_off_after == 0 || spec.hold_off_after > kMaxHoldOffAfter) {
    return PipelineProblem{
        "retry.hold_off_after",
        absl::StrCat("must be between 1 and ", kMaxHoldOffAfter, ", got ", spec.hold_off_after)};
  }
  if (spec.after.size() > kMaxAfter) {
    return PipelineProblem{"after",
                           absl::StrCat(spec.after.size(), " jobs, over the limit of ", kMaxAfter)};
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < spec.after.size(); ++i) {
    const std::string& a = spec.after[i];
    const int at = static_cast<int>(i);
    if (a.empty()) return PipelineProblem{"after", "an empty job id or name", at};
    if (a.size() > kMaxAfterBytes || !text::IsValidUtf8(a)) {
      return PipelineProblem{"after",
                             absl::StrCat("\"", text::TruncateUtf8(a, 64),
                                          "\" is not a job id or "
                                          "name (at most ",
                                          kMaxAfterBytes, " bytes of UTF-8)"),
                             at};
    }
    if (!seen.insert(a).second) {
      return PipelineProblem{"after", absl::StrCat("\"", a, "\" is listed twice"), at};
    }
  }
  return std::nullopt;
}

}  // namespace idlepool::spec::internal
