// Fuzz target: the owner policy file (owner::ParsePolicyConfig), which a worker reads at start.
// Input: the text of a policy file.
// Properties, beyond not crashing: an error's message is valid UTF-8 and starts with the file
// name; the TOML tree is no deeper than toml_util::Prescan allows; an accepted policy holds
// every value within the range owner_policy_config.h documents.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "fuzz_toml.h"
#include "fuzz_util.h"
#include "owner/owner_policy_config.h"
#include "spec/toml_util.h"
#include "text/utf8.h"

namespace idlepool::fuzz {
namespace {

constexpr char kFile[] = "policy.toml";
constexpr double kWeekS = 7 * 24 * 3600;

bool In(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

void CheckAccepted(const owner::PolicyConfig& c, std::string_view text) {
  FUZZ_CHECK(In(c.start_idle_s, 0, kWeekS), text);
  FUZZ_CHECK(In(c.resume_idle_s, 0, kWeekS), text);
  FUZZ_CHECK(c.start_idle_s == 0 || c.resume_idle_s <= c.start_idle_s, text);
  FUZZ_CHECK(In(c.vacate_after_suspend_s, 0, kWeekS), text);
  FUZZ_CHECK(In(c.max_temperature_c, 30, 150), text);
  FUZZ_CHECK(In(c.max_owner_cpu_load, 0, 1), text);
  FUZZ_CHECK(In(c.vacate_grace_s, 0, 3600), text);
  FUZZ_CHECK(In(c.checkpoint_interval_s, 1, 86400), text);
  FUZZ_CHECK(In(c.gpu.max_temperature_c, 30, 150), text);
  for (const owner::TimeWindow& w : c.windows) {
    FUZZ_CHECK(w.days != 0 && w.days <= owner::kEveryDay, text);
    FUZZ_CHECK(w.start_minute >= 0 && w.start_minute < 24 * 60, text);
    FUZZ_CHECK(w.end_minute >= 0 && w.end_minute < 24 * 60, text);
  }
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idlepool;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<toml::table> root = spec::toml_util::Parse(text, fuzz::kFile);
  if (root.ok()) FUZZ_CHECK(fuzz::TomlDepth(*root) <= spec::toml_util::kMaxTomlDepth, text);
  absl::StatusOr<owner::PolicyConfig> config = owner::ParsePolicyConfig(text, fuzz::kFile);
  if (!config.ok()) {
    const std::string_view m(config.status().message().data(), config.status().message().size());
    FUZZ_CHECK(text::IsValidUtf8(m), m);
    FUZZ_CHECK(m.starts_with(fuzz::kFile), m);
    return 0;
  }
  fuzz::CheckAccepted(*config, text);
  return 0;
}
