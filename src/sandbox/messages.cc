#include "sandbox/messages.h"

#include "sandbox/channel.h"

namespace idlepool::sandbox {
namespace {

// Reads one field into `out`, or returns its error from the enclosing function.
#define SANDBOX_READ(out, expr)       \
  do {                                \
    auto v_ = (expr);                 \
    if (!v_.ok()) return v_.status(); \
    out = std::move(*v_);             \
  } while (0)

absl::Status Expect(Reader& r, Msg type) {
  auto t = r.U64();
  if (!t.ok()) return t.status();
  if (*t != static_cast<uint64_t>(type)) {
    return absl::InvalidArgumentError("unexpected sandbox message");
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeSetup(const Config& c) {
  Writer w;
  w.U64(static_cast<uint64_t>(Msg::kSetup)).U64(c.uid).U64(c.gid).U64(c.drop_groups);
  w.U64(c.host_network).Str(c.slot_dir).Strs(c.hide).Strs(c.scratch).Strs(c.devices);
  w.Strs(c.ro_binds).U64(c.pids_max).U64(c.landlock).Str(c.device_root).Strs(c.writable);
  w.Strs(c.show).U64(c.scratch_bytes).U64(c.task_dir_bytes);
  return w.body();
}

absl::StatusOr<Config> DecodeSetup(std::string_view body) {
  Reader r(body);
  if (absl::Status st = Expect(r, Msg::kSetup); !st.ok()) return st;
  Config c;
  uint64_t flag = 0;
  SANDBOX_READ(c.uid, r.U64());
  SANDBOX_READ(c.gid, r.U64());
  SANDBOX_READ(flag, r.U64());
  c.drop_groups = flag != 0;
  SANDBOX_READ(flag, r.U64());
  c.host_network = flag != 0;
  SANDBOX_READ(c.slot_dir, r.Str());
  SANDBOX_READ(c.hide, r.Strs());
  SANDBOX_READ(c.scratch, r.Strs());
  SANDBOX_READ(c.devices, r.Strs());
  SANDBOX_READ(c.ro_binds, r.Strs());
  SANDBOX_READ(c.pids_max, r.U64());
  SANDBOX_READ(flag, r.U64());
  c.landlock = flag != 0;
  SANDBOX_READ(c.device_root, r.Str());
  SANDBOX_READ(c.writable, r.Strs());
  SANDBOX_READ(c.show, r.Strs());
  SANDBOX_READ(c.scratch_bytes, r.U64());
  SANDBOX_READ(c.task_dir_bytes, r.U64());
  return c;
}

std::string EncodeLaunch(const LaunchRequest& q) {
  Writer w;
  w.U64(static_cast<uint64_t>(Msg::kLaunch)).Strs(q.argv).Strs(q.env).Str(q.cwd).Str(q.path);
  w.U64(q.nofile_soft).U64(q.low_priority).U64(q.has_cgroup).U64(q.memory_bytes);
  return w.body();
}

absl::StatusOr<LaunchRequest> DecodeLaunch(std::string_view body) {
  Reader r(body);
  if (absl::Status st = Expect(r, Msg::kLaunch); !st.ok()) return st;
  LaunchRequest q;
  uint64_t flag = 0;
  SANDBOX_READ(q.argv, r.Strs());
  SANDBOX_READ(q.env, r.Strs());
  SANDBOX_READ(q.cwd, r.Str());
  SANDBOX_READ(q.path, r.Str());
  SANDBOX_READ(q.nofile_soft, r.U64());
  SANDBOX_READ(flag, r.U64());
  q.low_priority = flag != 0;
  SANDBOX_READ(flag, r.U64());
  q.has_cgroup = flag != 0;
  SANDBOX_READ(q.memory_bytes, r.U64());
  if (q.argv.empty() || q.argv[0].empty()) return absl::InvalidArgumentError("empty command");
  return q;
}

std::string EncodeExited(const ExitReport& e) {
  Writer w;
  w.U64(static_cast<uint64_t>(Msg::kExited)).U64(static_cast<uint32_t>(e.wait_status));
  w.U64(e.pids_limit).U64(e.memory_limit).U64(e.disk_limit);
  return w.body();
}

absl::StatusOr<ExitReport> DecodeExited(std::string_view body) {
  Reader r(body);
  if (absl::Status st = Expect(r, Msg::kExited); !st.ok()) return st;
  ExitReport e;
  uint64_t v = 0;
  SANDBOX_READ(v, r.U64());
  e.wait_status = static_cast<int>(static_cast<uint32_t>(v));
  SANDBOX_READ(v, r.U64());
  e.pids_limit = v != 0;
  SANDBOX_READ(v, r.U64());
  e.memory_limit = v != 0;
  SANDBOX_READ(e.disk_limit, r.U64());
  return e;
}

std::string EncodeSimple(Msg type, uint64_t value, std::string_view text) {
  Writer w;
  w.U64(static_cast<uint64_t>(type)).U64(value).Str(text);
  return w.body();
}

absl::StatusOr<Simple> DecodeSimple(std::string_view body) {
  Reader r(body);
  Simple s{};
  uint64_t type = 0;
  SANDBOX_READ(type, r.U64());
  s.type = static_cast<Msg>(type);
  SANDBOX_READ(s.value, r.U64());
  SANDBOX_READ(s.text, r.Str());
  return s;
}

absl::StatusOr<Msg> TypeOf(std::string_view body) {
  Reader r(body);
  auto t = r.U64();
  if (!t.ok()) return t.status();
  return static_cast<Msg>(*t);
}

#undef SANDBOX_READ

}  // namespace idlepool::sandbox
