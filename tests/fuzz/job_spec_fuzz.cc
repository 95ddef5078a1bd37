// Fuzz target: the job spec reader (spec::ParseJobToml) and what the pool does with a spec it
// accepts. Input: the text of a job file, read from a scratch job dir that holds an items file
// (items.txt), a file (scene.pov) and a directory (assets/); see corpus/job_spec/.
//
// Properties, beyond not crashing: an error's message is valid UTF-8 and names the file first;
// the TOML tree is no deeper than toml_util::Prescan allows; an accepted spec passes
// spec::Validate, before and after its trip through the wire form, counts at least one task and
// expands and renders every task (a service's replicas with a port) of a small job without error
// and without a NUL.
//
// Inputs that name files outside the job dir ('/' first, or a '..' anywhere) are skipped, so
// that a run never walks the machine's file system.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fuzz_toml.h"
#include "fuzz_util.h"
#include "spec/spec.h"
#include "spec/toml_util.h"
#include "text/utf8.h"
#include "wire/wire.h"

namespace idlepool::fuzz {
namespace {

constexpr char kFile[] = "job.toml";
constexpr uint64_t kMaxExpanded = 2000;  // tasks expanded and rendered per input

std::string MakeJobDir() {
  const std::filesystem::path dir = MakeScratchDir("job_spec_fuzz");
  std::ofstream(dir / "items.txt") << "a\nb\r\n\nc d\n";
  std::ofstream(dir / "scene.pov") << "camera {}\n";
  std::filesystem::create_directories(dir / "assets" / "sub");
  std::ofstream(dir / "assets" / "a.png") << "png";
  std::ofstream(dir / "assets" / "sub" / "b.png") << "png";
  return dir.string();
}

bool Escapes(std::string_view path) {
  return path.starts_with('/') || path.find("..") != std::string_view::npos;
}

// Whether `root` names a file outside the job dir (items_file, inputs).
bool LeavesJobDir(const toml::table& root) {
  if (auto f = root["items_file"].value<std::string_view>(); f && Escapes(*f)) return true;
  if (const toml::array* inputs = root["inputs"].as_array()) {
    for (const toml::node& n : *inputs) {
      if (auto p = n.value<std::string_view>(); p && Escapes(*p)) return true;
    }
  }
  return false;
}

void CheckAccepted(const spec::JobSpec& spec) {
  absl::Status valid = spec::Validate(spec);
  FUZZ_CHECK(valid.ok(), valid.ToString());
  valid = spec::Validate(wire::FromProto(wire::ToProto(spec)));
  FUZZ_CHECK(valid.ok(), valid.ToString());
  absl::StatusOr<uint64_t> n = spec::TaskCount(spec);
  FUZZ_CHECK(n.ok() && *n >= 1, n.status().ToString());
  if (*n > kMaxExpanded) return;
  absl::StatusOr<std::vector<spec::TaskParams>> tasks = spec::ExpandTasks(spec);
  FUZZ_CHECK(tasks.ok() && tasks->size() == *n, tasks.status().ToString());
  // A service's replica gets the port the worker picked ({port}).
  std::optional<spec::ReplicaParams> replica;
  if (spec.service.has_value()) replica = spec::ReplicaParams{65535};
  for (const spec::TaskParams& t : *tasks) {
    absl::StatusOr<std::vector<std::string>> argv =
        spec::RenderCommand(spec.command, t, "/task", "/checkpoint", replica);
    FUZZ_CHECK(argv.ok(), argv.status().ToString());
    FUZZ_CHECK(argv->size() == spec.command.size(), spec.command[0]);
    for (const std::string& arg : *argv) {
      FUZZ_CHECK(arg.find('\0') == std::string::npos, arg);
    }
  }
}

}  // namespace
}  // namespace idlepool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idlepool;
  static const std::string dir = fuzz::MakeJobDir();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<toml::table> root = spec::toml_util::Parse(text, fuzz::kFile);
  if (root.ok()) {
    FUZZ_CHECK(fuzz::TomlDepth(*root) <= spec::toml_util::kMaxTomlDepth, text);
    if (fuzz::LeavesJobDir(*root)) return 0;
  }
  absl::StatusOr<spec::JobSpec> spec = spec::ParseJobToml(text, fuzz::kFile, dir);
  if (!spec.ok()) {
    const std::string_view m(spec.status().message().data(), spec.status().message().size());
    FUZZ_CHECK(text::IsValidUtf8(m), m);
    FUZZ_CHECK(m.starts_with(fuzz::kFile), m);
    return 0;
  }
  fuzz::CheckAccepted(*spec);
  return 0;
}
