#include "owner/owner_policy_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "spec/env.h"
#include "spec/toml_util.h"
#include "text/names.h"

namespace idlepool::owner {
namespace {

using spec::toml_util::Describe;
using spec::toml_util::Shorten;
using spec::toml_util::Where;
namespace toml_util = spec::toml_util;

absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

constexpr std::string_view kTopKeys[] = {"owner", "gpu", "sandbox"};
constexpr std::string_view kGpuKeys[] = {"owner_use", "max_temperature_c"};
constexpr std::string_view kSandboxKeys[] = {"allow_host_network", "memory_mb", "task_dir_mb", "path",
                                             "pass_env"};
constexpr size_t kMaxPassEnv = 64;
constexpr size_t kMaxLendUsers = 256;
constexpr size_t kMaxTaskPathBytes = 4096;
constexpr std::string_view kOwnerKeys[] = {"start_idle_minutes",
                                           "resume_idle_seconds",
                                           "vacate_after_suspend_seconds",
                                           "on_battery",
                                           "max_temperature_c",
                                           "max_owner_cpu_load",
                                           "windows",
                                           "vacate_grace_seconds",
                                           "checkpoint_interval_seconds",
                                           "accept_users",
                                           "refuse_users"};
constexpr std::string_view kWindowKeys[] = {"days", "start", "end"};
constexpr std::string_view kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr size_t kMaxFileBytes = 1 << 20;

absl::Status KeyError(const std::string& file, const toml::source_region& where,
                      std::string_view key, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(file, where), ": key '", A(key), "': ", A(message)));
}

// Refuses keys not in `allowed`, reporting the first one in file order; an owner key at the
// top level is told where it belongs.
template <size_t N>
absl::Status CheckKeys(const std::string& file, const toml::table& t, std::string_view prefix,
                       const std::string_view (&allowed)[N]) {
  return toml_util::CheckKeys(file, t, prefix, allowed, [prefix](std::string_view name) {
    const bool owner_key =
        std::find(std::begin(kOwnerKeys), std::end(kOwnerKeys), name) != std::end(kOwnerKeys);
    if (prefix.empty() && owner_key) return std::string(" (it belongs under [owner])");
    if (prefix.empty() && name == kSandboxKeys[0])
      return std::string(" (it belongs under [sandbox])");
    return std::string();
  });
}

// Reads an optional number in [min, max] (integer or float) into `out`, times `scale`.
absl::Status ReadNumber(const std::string& file, const toml::table& t, std::string_view key,
                        double min, double max, double scale, double& out,
                        std::string_view table = "owner") {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  const std::string full = absl::StrCat(A(table), ".", A(key));
  const std::string range = std::isinf(max) ? absl::StrCat("a number >= ", min)
                                            : absl::StrCat("a number between ", min, " and ", max);
  if (!n->is_number()) {
    return KeyError(file, n->source(), full,
                    absl::StrCat("must be ", range, ", got ", Describe(*n)));
  }
  const double v =
      n->is_integer() ? static_cast<double>(n->as_integer()->get()) : n->as_floating_point()->get();
  if (!std::isfinite(v) || v < min || v > max) {
    return KeyError(file, n->source(), full,
                    absl::StrCat("must be ", range, ", got ", Describe(*n)));
  }
  out = v * scale;
  return absl::OkStatus();
}

int DayIndex(std::string_view s) {
  for (size_t i = 0; i < std::size(kDayNames); ++i) {
    if (kDayNames[i] == s) return static_cast<int>(i);
  }
  return -1;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "daily", or a comma-separated list of days ("sat") and forward ranges ("mon-fri").
bool ParseDays(std::string_view s, uint8_t& out, std::string& why) {
  if (Trim(s) == "daily") {
    out = kEveryDay;
    return true;
  }
  uint8_t days = 0;
  size_t pos = 0;
  while (true) {
    const size_t comma = s.find(',', pos);
    const std::string_view part =
        Trim(s.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    const size_t dash = part.find('-');
    const std::string_view a = Trim(part.substr(0, dash));
    const std::string_view b = dash == std::string_view::npos ? a : Trim(part.substr(dash + 1));
    const int ia = DayIndex(a);
    const int ib = DayIndex(b);
    if (part.empty() || ia < 0 || ib < 0) {
      why = absl::StrCat("unknown day '", Shorten(part.empty() ? s : part), "'");
      return false;
    }
    if (ib < ia) {
      why = absl::StrCat("range '", Shorten(part), "' goes backwards (write e.g. 'fri-sun,mon')");
      return false;
    }
    for (int i = ia; i <= ib; ++i) days |= static_cast<uint8_t>(1u << i);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  out = days;
  return true;
}

// "HH:MM", two digits each, 00:00..23:59.
bool ParseClock(std::string_view s, int& minute) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.size() != 5 || s[2] != ':' || !digit(s[0]) || !digit(s[1]) || !digit(s[3]) ||
      !digit(s[4])) {
    return false;
  }
  const int h = (s[0] - '0') * 10 + (s[1] - '0');
  const int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (h > 23 || m > 59) return false;
  minute = h * 60 + m;
  return true;
}

absl::Status ReadWindow(const std::string& file, const toml::node& el, size_t index,
                        TimeWindow& out) {
  const std::string prefix = absl::StrCat("owner.windows[", index, "]");
  const toml::table* t = el.as_table();
  if (t == nullptr) {
    return KeyError(file, el.source(), prefix,
                    absl::StrCat("must be a table {days = \"mon-fri\", start = \"HH:MM\", "
                                 "end = \"HH:MM\"}, got ",
                                 Describe(el)));
  }
  if (absl::Status s = CheckKeys(file, *t, prefix + ".", kWindowKeys); !s.ok()) return s;
  for (std::string_view key : kWindowKeys) {
    const std::string full = absl::StrCat(prefix, ".", A(key));
    const toml::node* n = t->get(key);
    if (n == nullptr) {
      return KeyError(file, el.source(), full, "is required (days, start and end all are)");
    }
    if (!n->is_string()) {
      return KeyError(file, n->source(), full,
                      absl::StrCat("must be a string, got ", Describe(*n)));
    }
    const std::string_view v = *n->value<std::string_view>();
    if (key == "days") {
      std::string why;
      if (!ParseDays(v, out.days, why)) {
        return KeyError(file, n->source(), full,
                        absl::StrCat(why,
                                     "; write \"daily\", a range like \"mon-fri\" or a "
                                     "list like \"sat,sun\" (mon tue wed thu fri sat sun)"));
      }
    } else {
      int& minute = key == "start" ? out.start_minute : out.end_minute;
      if (!ParseClock(v, minute)) {
        return KeyError(file, n->source(), full,
                        absl::StrCat("must be a time \"HH:MM\" between \"00:00\" and \"23:59\", "
                                     "got \"",
                                     Shorten(v), "\""));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PolicyConfig> ReadOwner(const std::string& file, const toml::table& root) {
  PolicyConfig config;
  if (absl::Status s = CheckKeys(file, root, "", kTopKeys); !s.ok()) return s;
  const toml::node* owner_node = root.get("owner");
  if (owner_node == nullptr) return config;
  const toml::table* owner = owner_node->as_table();
  if (owner == nullptr) {
    return KeyError(file, owner_node->source(), "owner",
                    absl::StrCat("must be a table, got ", Describe(*owner_node)));
  }
  if (absl::Status s = CheckKeys(file, *owner, "owner.", kOwnerKeys); !s.ok()) return s;
  absl::Status s;
  // A week bounds every wait: larger values are typos, and minutes x 60 must stay finite.
  constexpr double kWeekS = 7 * 24 * 3600;
  if (s = ReadNumber(file, *owner, "start_idle_minutes", 0, kWeekS / 60, 60, config.start_idle_s);
      !s.ok())
    return s;
  if (s = ReadNumber(file, *owner, "resume_idle_seconds", 0, kWeekS, 1, config.resume_idle_s);
      !s.ok())
    return s;
  if (s = ReadNumber(file, *owner, "vacate_after_suspend_seconds", 0, kWeekS, 1,
                     config.vacate_after_suspend_s);
      !s.ok())
    return s;
  // Work started after start_idle of idleness is suspended while idleness < resume_idle: a
  // resume_idle above start_idle would freeze every task the moment it starts.
  if (config.start_idle_s > 0 && config.resume_idle_s > config.start_idle_s) {
    const toml::node* n = owner->get("resume_idle_seconds");
    if (n == nullptr) n = owner->get("start_idle_minutes");
    return KeyError(file, n->source(),
                    n == owner->get("resume_idle_seconds") ? "owner.resume_idle_seconds"
                                                           : "owner.start_idle_minutes",
                    absl::StrCat("resume_idle_seconds (", config.resume_idle_s,
                                 ") must not exceed start_idle_minutes x 60 (", config.start_idle_s,
                                 " s), or work would be frozen the moment it starts"));
  }
  if (s = ReadNumber(file, *owner, "max_temperature_c", 30, 150, 1, config.max_temperature_c);
      !s.ok())
    return s;
  if (s = ReadNumber(file, *owner, "max_owner_cpu_load", 0, 1, 1, config.max_owner_cpu_load);
      !s.ok())
    return s;
  if (s = ReadNumber(file, *owner, "vacate_grace_seconds", 0, 3600, 1, config.vacate_grace_s);
      !s.ok())
    return s;
  if (s = ReadNumber(file, *owner, "checkpoint_interval_seconds", 1, 86400, 1,
                     config.checkpoint_interval_s);
      !s.ok())
    return s;

  if (const toml::node* n = owner->get("on_battery")) {
    constexpr std::string_view kWant = "must be \"run\", \"suspend\" or \"vacate\", got ";
    if (!n->is_string()) {
      return KeyError(file, n->source(), "owner.on_battery", absl::StrCat(A(kWant), Describe(*n)));
    }
    const std::string_view v = *n->value<std::string_view>();
    if (v == "run") {
      config.on_battery = BatteryAction::kRun;
    } else if (v == "suspend") {
      config.on_battery = BatteryAction::kSuspend;
    } else if (v == "vacate") {
      config.on_battery = BatteryAction::kVacate;
    } else {
      return KeyError(file, n->source(), "owner.on_battery", absl::StrCat(A(kWant), Describe(*n)));
    }
  }

  if (const toml::node* n = owner->get("windows")) {
    const toml::array* arr = n->as_array();
    if (arr == nullptr) {
      return KeyError(file, n->source(), "owner.windows",
                      absl::StrCat("must be an array of tables, got ", Describe(*n)));
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      TimeWindow w;
      if (s = ReadWindow(file, (*arr)[i], i, w); !s.ok()) return s;
      config.windows.push_back(w);
    }
  }
  return config;
}

// The optional [gpu] table into config->gpu.
absl::Status ReadGpu(const std::string& file, const toml::table& root, PolicyConfig* config) {
  const toml::node* node = root.get("gpu");
  if (node == nullptr) return absl::OkStatus();
  const toml::table* gpu = node->as_table();
  if (gpu == nullptr) {
    return KeyError(file, node->source(), "gpu",
                    absl::StrCat("must be a table, got ", Describe(*node)));
  }
  if (absl::Status s = CheckKeys(file, *gpu, "gpu.", kGpuKeys); !s.ok()) return s;
  if (absl::Status s = ReadNumber(file, *gpu, "max_temperature_c", 30, 150, 1,
                                  config->gpu.max_temperature_c, "gpu");
      !s.ok())
    return s;
  if (const toml::node* n = gpu->get("owner_use")) {
    constexpr std::string_view kWant = "must be \"suspend\", \"vacate\" or \"ignore\", got ";
    const std::optional<std::string_view> v = n->value<std::string_view>();
    if (v == "suspend") {
      config->gpu.owner_use = GpuOwnerUse::kSuspend;
    } else if (v == "vacate") {
      config->gpu.owner_use = GpuOwnerUse::kVacate;
    } else if (v == "ignore") {
      config->gpu.owner_use = GpuOwnerUse::kIgnore;
    } else {
      return KeyError(file, n->source(), "gpu.owner_use", absl::StrCat(A(kWant), Describe(*n)));
    }
  }
  return absl::OkStatus();
}

// [sandbox] path: absolute dirs separated by ':', none empty (an empty entry would mean the task
// dir, where a task's inputs could shadow any program).
absl::Status ReadTaskPath(const std::string& file, const toml::table& sandbox,
                          PolicyConfig* config) {
  const toml::node* n = sandbox.get("path");
  if (n == nullptr) return absl::OkStatus();
  constexpr std::string_view kWant =
      "must be absolute dirs separated by ':' (path = \"/opt/blender:/usr/bin:/bin\"), got ";
  const std::optional<std::string_view> v = n->value<std::string_view>();
  if (!v.has_value())
    return KeyError(file, n->source(), "sandbox.path", absl::StrCat(A(kWant), Describe(*n)));
  bool ok = !v->empty() && v->size() <= kMaxTaskPathBytes &&
            v->find_first_of(std::string_view("\0\n", 2)) == std::string_view::npos;
  for (size_t pos = 0; ok && pos <= v->size();) {
    const size_t colon = std::min(v->find(':', pos), v->size());
    ok = colon > pos && (*v)[pos] == '/';
    pos = colon + 1;
  }
  if (!ok) {
    return KeyError(file, n->source(), "sandbox.path",
                    absl::StrCat(A(kWant), "\"", Shorten(*v), "\""));
  }
  config->task_path = std::string(*v);
  return absl::OkStatus();
}

// [sandbox] pass_env: names of the worker's own variables its tasks get too.
absl::Status ReadPassEnv(const std::string& file, const toml::table& sandbox,
                         PolicyConfig* config) {
  const toml::node* n = sandbox.get("pass_env");
  if (n == nullptr) return absl::OkStatus();
  const toml::array* a = n->as_array();
  if (a == nullptr || a->size() > kMaxPassEnv) {
    return KeyError(
        file, n->source(), "sandbox.pass_env",
        absl::StrCat("must be an array of at most ", kMaxPassEnv,
                     " variable names (pass_env = [\"http_proxy\"]), got ", Describe(*n)));
  }
  for (const toml::node& e : *a) {
    const std::optional<std::string_view> name = e.value<std::string_view>();
    std::optional<std::string> why;
    if (!name.has_value()) {
      why = absl::StrCat("must be a variable name, got ", Describe(e));
    } else if (*name == "PATH") {
      why = "'PATH' is not passed: set [sandbox] path instead";
    } else if (std::optional<std::string> bad = spec::EnvNameError(*name)) {
      why = absl::StrCat("'", Shorten(*name), "' ", *bad);
    }
    if (why.has_value()) return KeyError(file, e.source(), "sandbox.pass_env", *why);
    config->pass_env.emplace_back(*name);
  }
  return absl::OkStatus();
}

// [owner] accept_users and refuse_users: whose tasks this machine runs.
absl::Status ReadLendUsers(const std::string& file, const toml::table& root, PolicyConfig* config) {
  const toml::table* owner = root.get("owner") ? root.get("owner")->as_table() : nullptr;
  if (owner == nullptr) return absl::OkStatus();  // absent, or refused by ReadOwner
  for (auto [key, out] : {std::pair{"accept_users", &config->accept_users},
                          std::pair{"refuse_users", &config->refuse_users}}) {
    const toml::node* n = owner->get(key);
    if (n == nullptr) continue;
    const std::string full = absl::StrCat("owner.", key);
    const toml::array* a = n->as_array();
    if (a == nullptr || a->size() > kMaxLendUsers) {
      return KeyError(file, n->source(), full,
                      absl::StrCat("must be an array of at most ", kMaxLendUsers, " user names (",
                                   key, " = [\"alice\", \"bob\"]), got ", Describe(*n)));
    }
    for (const toml::node& e : *a) {
      const std::optional<std::string_view> name = e.value<std::string_view>();
      if (!name.has_value() || !text::IsUserName(*name)) {
        return KeyError(file, e.source(), full,
                        absl::StrCat("must hold user names (1 to 64 of letters, digits and . _ "
                                     "- @, as `idlepool token create --user` takes), got ",
                                     Describe(e)));
      }
      out->emplace_back(*name);
    }
  }
  return absl::OkStatus();
}

// The optional [sandbox] table into config->allow_host_network, task_path and pass_env.
absl::Status ReadSandbox(const std::string& file, const toml::table& root, PolicyConfig* config) {
  const toml::node* node = root.get("sandbox");
  if (node == nullptr) return absl::OkStatus();
  const toml::table* sandbox = node->as_table();
  if (sandbox == nullptr) {
    return KeyError(file, node->source(), "sandbox",
                    absl::StrCat("must be a table, got ", Describe(*node)));
  }
  if (absl::Status s = CheckKeys(file, *sandbox, "sandbox.", kSandboxKeys); !s.ok()) return s;
  if (const toml::node* n = sandbox->get("allow_host_network")) {
    if (!n->is_boolean()) {
      return KeyError(file, n->source(), "sandbox.allow_host_network",
                      absl::StrCat("must be true or false, got ", Describe(*n)));
    }
    config->allow_host_network = n->as_boolean()->get();
  }
  if (absl::Status s = ReadTaskPath(file, *sandbox, config); !s.ok()) return s;
  return ReadPassEnv(file, *sandbox, config);
}

// [sandbox] memory_mb and task_dir_mb (whole MiB, up to 2^40) into the task limits.
absl::Status ReadSandboxLimits(const std::string& file, const toml::table& root,
                               PolicyConfig* config) {
  const toml::table* sandbox = root.get("sandbox") ? root.get("sandbox")->as_table() : nullptr;
  if (sandbox == nullptr) return absl::OkStatus();  // absent, or refused by ReadSandbox
  const std::pair<std::string_view, uint64_t*> keys[] = {{"memory_mb", &config->task_memory_mb},
                                                         {"task_dir_mb", &config->task_dir_mb}};
  for (const auto& [key, out] : keys) {
    double v = static_cast<double>(*out);
    if (absl::Status s = ReadNumber(file, *sandbox, key, 0, 1099511627776.0, 1, v, "sandbox");
        !s.ok()) {
      return s;
    }
    *out = static_cast<uint64_t>(v);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PolicyConfig> ParsePolicyConfig(std::string_view toml,
                                               const std::string& file_name) {
  absl::StatusOr<toml::table> root = toml_util::Parse(toml, file_name);
  if (!root.ok()) return root.status();
  absl::StatusOr<PolicyConfig> config = ReadOwner(file_name, *root);
  if (!config.ok()) return config.status();
  if (absl::Status s = ReadGpu(file_name, *root, &*config); !s.ok()) return s;
  if (absl::Status s = ReadSandbox(file_name, *root, &*config); !s.ok()) return s;
  if (absl::Status s = ReadSandboxLimits(file_name, *root, &*config); !s.ok()) return s;
  if (absl::Status s = ReadLendUsers(file_name, *root, &*config); !s.ok()) return s;
  return config;
}

absl::StatusOr<PolicyConfig> LoadPolicyConfig(const std::string& path) {
  absl::StatusOr<std::string> text =
      toml_util::ReadSmallFile(path, kMaxFileBytes, "an owner policy config");
  if (!text.ok()) return text.status();
  return ParsePolicyConfig(*text, path);
}

}  // namespace idlepool::owner
