#include "platform/linux_sensors.h"
#include "platform/read_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace idlepool::platform {
namespace {

constexpr size_t kMaxFileBytes = 4096;
constexpr double kMinTemperatureC = -50;
constexpr double kMaxTemperatureC = 150;

constexpr const char* kLogindService = "org.freedesktop.login1";
constexpr const char* kLogindPath = "/org/freedesktop/login1";
constexpr const char* kManagerInterface = "org.freedesktop.login1.Manager";
// Bounds the constructor's wait for logind's first answer.
constexpr uint64_t kFirstCallTimeoutUs = 1'000'000;
constexpr uint64_t kAsyncCallTimeoutUs = 5'000'000;

std::optional<std::string> ReadTrimmed(const std::string& path) {
  return ReadTrimmedFile(path, kMaxFileBytes);
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> ReadInt(const std::string& path) {
  std::optional<std::string> s = ReadTrimmed(path);
  if (!s) return std::nullopt;
  return ParseInt(*s);
}

// The names in `dir` that start with `prefix`, sorted; nullopt when `dir` cannot be opened.
std::optional<std::vector<std::string>> ListDir(const std::string& dir, std::string_view prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.starts_with(prefix)) names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Names(const std::string& dir, std::string_view prefix) {
  return ListDir(dir, prefix).value_or(std::vector<std::string>());
}

double RealtimeSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ToSeconds(const timespec& ts) {
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool IsAdapterType(std::string_view type) {
  return type == "Mains" || type.starts_with("USB") || type == "BrickID" ||
         type == "Wireless";
}

struct Power {
  std::optional<bool> on_ac_power;
  std::optional<double> battery_percent;
};

Power ReadPower(const std::string& sys_root) {
  std::string dir = absl::StrCat(sys_root, "/class/power_supply");
  std::optional<std::vector<std::string>> names = ListDir(dir, "");
  if (!names) return {};
  int batteries = 0;
  int percent_count = 0;
  double percent_sum = 0;
  bool any_online_read = false;
  bool any_online = false;
  bool any_status_read = false;
  bool any_discharging = false;
  for (const std::string& name : *names) {
    std::string base = absl::StrCat(dir, "/", name, "/");
    std::optional<std::string> type = ReadTrimmed(base + "type");
    if (!type) continue;
    if (ReadTrimmed(base + "scope").value_or("") == "Device") continue;
    if (*type == "Battery") {
      ++batteries;
      std::optional<std::string> status = ReadTrimmed(base + "status");
      if (status && !status->empty()) {
        any_status_read = true;
        if (*status == "Discharging") any_discharging = true;
      }
      std::optional<double> percent;
      if (std::optional<int64_t> c = ReadInt(base + "capacity"); c && *c >= 0 && *c <= 100) {
        percent = static_cast<double>(*c);
      } else {
        for (const char* kind : {"energy", "charge"}) {
          std::optional<int64_t> now = ReadInt(absl::StrCat(base, kind, "_now"));
          std::optional<int64_t> full = ReadInt(absl::StrCat(base, kind, "_full"));
          if (now && full && *now >= 0 && *full > 0) {
            // A worn battery can report now slightly above full.
            percent = std::min(100.0, 100.0 * static_cast<double>(*now) /
                                          static_cast<double>(*full));
            break;
          }
        }
      }
      if (percent) {
        percent_sum += *percent;
        ++percent_count;
      }
    } else if (IsAdapterType(*type)) {
      std::optional<int64_t> online = ReadInt(base + "online");
      if (online) {
        any_online_read = true;
        if (*online == 1) any_online = true;
      }
    }
  }
  Power p;
  if (batteries == 0) {
    p.on_ac_power = true;  // no battery: a desktop, never on battery
  } else if (any_online_read) {
    p.on_ac_power = any_online;
  } else if (any_status_read) {
    p.on_ac_power = !any_discharging;
  }
  if (percent_count > 0) p.battery_percent = percent_sum / percent_count;
  return p;
}

void ConsiderMillidegrees(const std::string& path, std::optional<double>& hottest) {
  std::optional<int64_t> milli = ReadInt(path);
  if (!milli) return;
  double c = static_cast<double>(*milli) / 1000.0;
  if (c < kMinTemperatureC || c > kMaxTemperatureC) return;
  if (!hottest || c > *hottest) hottest = c;
}

std::optional<double> ReadTemperature(const std::string& sys_root) {
  std::optional<double> hottest;
  std::string thermal = absl::StrCat(sys_root, "/class/thermal");
  for (const std::string& zone : Names(thermal, "thermal_zone")) {
    ConsiderMillidegrees(absl::StrCat(thermal, "/", zone, "/temp"), hottest);
  }
  std::string hwmon = absl::StrCat(sys_root, "/class/hwmon");
  for (const std::string& chip : Names(hwmon, "hwmon")) {
    std::string chip_dir = absl::StrCat(hwmon, "/", chip);
    for (const std::string& file : Names(chip_dir, "temp")) {
      if (!file.ends_with("_input")) continue;
      ConsiderMillidegrees(absl::StrCat(chip_dir, "/", file), hottest);
    }
  }
  return hottest;
}

std::optional<bool> ReadLid(const std::string& proc_root) {
  std::string dir = absl::StrCat(proc_root, "/acpi/button/lid");
  std::optional<bool> closed;
  for (const std::string& lid : Names(dir, "")) {
    std::optional<std::string> s = ReadTrimmed(absl::StrCat(dir, "/", lid, "/state"));
    if (!s) continue;
    std::string_view v = *s;
    if (v.starts_with("state:")) v.remove_prefix(6);
    v.remove_prefix(std::min(v.find_first_not_of(" \t"), v.size()));
    if (v == "closed") return true;
    if (v == "open") closed = false;
  }
  return closed;
}

// Total and busy jiffies of the first `cpu` line of /proc/stat: busy excludes idle and iowait;
// guest time is already included in user and nice.
std::optional<std::pair<uint64_t, uint64_t>> ReadCpuJiffies(const std::string& proc_root) {
  std::optional<std::string> s = ReadTrimmed(absl::StrCat(proc_root, "/stat"));
  if (!s) return std::nullopt;
  std::string_view line = *s;
  line = line.substr(0, line.find('\n'));
  if (!line.starts_with("cpu ")) return std::nullopt;
  line.remove_prefix(4);
  uint64_t fields[8] = {};
  int n = 0;
  while (n < 8) {
    size_t b = line.find_first_not_of(' ');
    if (b == std::string_view::npos) break;
    line.remove_prefix(b);
    size_t e = std::min(line.find(' '), line.size());
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + e, fields[n]);
    if (ec != std::errc() || ptr != line.data() + e) return std::nullopt;
    line.remove_prefix(e);
    ++n;
  }
  if (n < 4) return std::nullopt;  // user nice system idle [iowait irq softirq steal]
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += fields[i];
  uint64_t busy = total - fields[3] - fields[4];
  return std::make_pair(total, busy);
}

std::optional<double> ReadInputIdle(const std::string& dev_root) {
  std::string dir = absl::StrCat(dev_root, "/input");
  std::optional<double> newest;
  for (const std::string& name : Names(dir, "event")) {
    struct stat st;
    if (::stat(absl::StrCat(dir, "/", name).c_str(), &st) != 0) continue;
    double t = std::max(ToSeconds(st.st_atim), ToSeconds(st.st_mtim));
    if (!newest || t > *newest) newest = t;
  }
  if (!newest) return std::nullopt;
  return std::max(0.0, RealtimeSeconds() - *newest);
}

// Milliseconds from now until `deadline`, 0 when past, at most INT_MAX.
int MillisUntil(std::chrono::steady_clock::time_point deadline) {
  // Rounded up, so a wait never ends just before the deadline and spins.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline -
                                                           std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

std::string ErrorText(const sd_bus_error* e, int r) {
  if (e != nullptr && sd_bus_error_is_set(e)) {
    return absl::StrCat(e->name, ": ", e->message ? e->message : "");
  }
  return std::strerror(r < 0 ? -r : r);
}

// A Properties.Get call for one logind Manager property.
sd_bus_message* NewGetProperty(sd_bus* bus, const char* property) {
  sd_bus_message* m = nullptr;
  if (sd_bus_message_new_method_call(bus, &m, kLogindService, kLogindPath,
                                     "org.freedesktop.DBus.Properties", "Get") < 0) {
    return nullptr;
  }
  if (sd_bus_message_append(m, "ss", kManagerInterface, property) < 0) {
    sd_bus_message_unref(m);
    return nullptr;
  }
  return m;
}

// Reads the variant of a Properties.Get reply; `type` is "b" or "t".
template <typename T>
std::optional<T> ReadVariant(sd_bus_message* reply, const char* type) {
  if (sd_bus_message_is_method_error(reply, nullptr)) return std::nullopt;
  if (sd_bus_message_enter_container(reply, 'v', type) < 0) return std::nullopt;
  T v{};
  if (sd_bus_message_read_basic(reply, type[0], &v) < 0) return std::nullopt;
  return v;
}

}  // namespace

// The logind connection: idle properties, the PrepareForSleep signal and the delay lock.
class LinuxSensors::Logind {
 public:
  // Null, with `why` set, when the bus cannot be opened or logind does not answer.
  static std::unique_ptr<Logind> Open(std::function<void(const std::string&)> log,
                                      std::string* why) {
    std::unique_ptr<Logind> l(new Logind(std::move(log)));
    int r = sd_bus_open_system_with_description(&l->bus_, "idlepool-sensors");
    if (r < 0) {
      l->bus_ = nullptr;
      *why = absl::StrCat("cannot open the system bus: ", std::strerror(-r));
      return nullptr;
    }
    r = sd_bus_match_signal_async(l->bus_, &l->sleep_match_, kLogindService, kLogindPath,
                                  kManagerInterface, "PrepareForSleep", &Logind::OnPrepareForSleep,
                                  nullptr, l.get());
    if (r < 0) {
      *why = absl::StrCat("cannot watch PrepareForSleep: ", std::strerror(-r));
      return nullptr;
    }
    // Synchronous round trips tell whether logind is there, and give the first Read() the
    // owner's idle state.
    for (const char* property : {"IdleHint", "IdleSinceHint"}) {
      sd_bus_message* m = NewGetProperty(l->bus_, property);
      if (m == nullptr) {
        *why = "cannot build a D-Bus call";
        return nullptr;
      }
      sd_bus_error error = SD_BUS_ERROR_NULL;
      sd_bus_message* reply = nullptr;
      r = sd_bus_call(l->bus_, m, kFirstCallTimeoutUs, &error, &reply);
      sd_bus_message_unref(m);
      if (r == -ETIMEDOUT) {
        // Slow (a busy boot), not absent: idle stays unknown until a later answer.
        sd_bus_error_free(&error);
        break;
      }
      if (r < 0) {
        *why = absl::StrCat("logind does not answer: ", ErrorText(&error, r));
        sd_bus_error_free(&error);
        return nullptr;
      }
      l->StoreProperty(property, reply);
      sd_bus_message_unref(reply);
    }
    l->TakeSleepDelay();
    return l;
  }

  ~Logind() {
    CloseInhibitor();
    for (sd_bus_slot** s : {&inhibit_call_, &idle_hint_call_, &idle_since_call_, &sleep_match_}) {
      *s = sd_bus_slot_unref(*s);
    }
    if (bus_ != nullptr) sd_bus_flush_close_unref(bus_);
  }

  // Handles every queued message without blocking; false once the connection is lost.
  bool Process() {
    for (int i = 0; i < 10000; ++i) {
      int r = sd_bus_process(bus_, nullptr);
      if (r < 0) return false;
      if (r == 0) break;
    }
    return sd_bus_is_open(bus_) > 0;
  }

  // Asks for fresh idle properties; the answers are used once they arrive.
  void RefreshIdle() {
    if (idle_hint_call_ == nullptr) {
      CallAsync(NewGetProperty(bus_, "IdleHint"), &idle_hint_call_, &Logind::OnIdleHint);
    }
    if (idle_since_call_ == nullptr) {
      CallAsync(NewGetProperty(bus_, "IdleSinceHint"), &idle_since_call_, &Logind::OnIdleSince);
    }
  }

  std::optional<double> IdleSeconds() const {
    if (!idle_hint_ || !idle_since_us_ || *idle_since_us_ == 0) return std::nullopt;
    if (!*idle_hint_) return 0.0;
    return std::max(0.0, RealtimeSeconds() - static_cast<double>(*idle_since_us_) * 1e-6);
  }

  bool sleep_imminent() const { return sleep_imminent_; }

  // Whether a PrepareForSleep signal arrived since the previous call.
  bool TakeSleepSignal() { return std::exchange(sleep_signal_, false); }

  // Waits until the bus has something to do, or `timeout_ms` passes.
  void Wait(int timeout_ms) {
    int fd = sd_bus_get_fd(bus_);
    int events = sd_bus_get_events(bus_);
    if (fd < 0 || events < 0) {
      ::poll(nullptr, 0, timeout_ms);
      return;
    }
    uint64_t until_us = 0;
    if (sd_bus_get_timeout(bus_, &until_us) >= 0 && until_us != UINT64_MAX) {
      timespec ts{};
      ::clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t now_us = static_cast<uint64_t>(ts.tv_sec) * 1'000'000 +
                        static_cast<uint64_t>(ts.tv_nsec) / 1000;
      uint64_t bus_ms = until_us > now_us ? (until_us - now_us + 999) / 1000 : 0;
      timeout_ms = static_cast<int>(std::min<uint64_t>(bus_ms, static_cast<uint64_t>(timeout_ms)));
    }
    pollfd pfd{fd, static_cast<short>(events), 0};
    ::poll(&pfd, 1, timeout_ms);
  }

  void ReleaseSleepDelay() {
    // A lock still being granted would be held once its answer arrives: drop the call (the
    // lock's descriptor is closed with the unread answer).
    inhibit_call_ = sd_bus_slot_unref(inhibit_call_);
    CloseInhibitor();
  }

  bool SleepDelayHeld() const { return inhibit_fd_ >= 0; }

 private:
  explicit Logind(std::function<void(const std::string&)> log) : log_(std::move(log)) {}

  void CallAsync(sd_bus_message* m, sd_bus_slot** slot, sd_bus_message_handler_t callback) {
    if (m == nullptr) return;
    if (sd_bus_call_async(bus_, slot, m, callback, this, kAsyncCallTimeoutUs) < 0) {
      *slot = nullptr;
    }
    sd_bus_message_unref(m);
  }

  void StoreProperty(std::string_view property, sd_bus_message* reply) {
    if (property == "IdleHint") {
      std::optional<int> v = ReadVariant<int>(reply, "b");
      idle_hint_.reset();
      if (v) idle_hint_ = *v != 0;
    } else {
      idle_since_us_ = ReadVariant<uint64_t>(reply, "t");
    }
  }

  void TakeSleepDelay() {
    if (inhibit_fd_ >= 0 || inhibit_call_ != nullptr) return;
    sd_bus_message* m = nullptr;
    if (sd_bus_message_new_method_call(bus_, &m, kLogindService, kLogindPath, kManagerInterface,
                                       "Inhibit") < 0) {
      return;
    }
    if (sd_bus_message_append(m, "ssss", "sleep", "idlepool", "vacating pool tasks before sleep",
                              "delay") < 0) {
      sd_bus_message_unref(m);
      return;
    }
    CallAsync(m, &inhibit_call_, &Logind::OnInhibit);
  }

  void CloseInhibitor() {
    if (inhibit_fd_ >= 0) ::close(inhibit_fd_);
    inhibit_fd_ = -1;
  }

  static int OnIdleHint(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<Logind*>(userdata);
    self->idle_hint_call_ = sd_bus_slot_unref(self->idle_hint_call_);
    self->StoreProperty("IdleHint", m);
    return 0;
  }

  static int OnIdleSince(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<Logind*>(userdata);
    self->idle_since_call_ = sd_bus_slot_unref(self->idle_since_call_);
    self->StoreProperty("IdleSinceHint", m);
    return 0;
  }

  static int OnInhibit(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<Logind*>(userdata);
    self->inhibit_call_ = sd_bus_slot_unref(self->inhibit_call_);
    if (sd_bus_message_is_method_error(m, nullptr)) {
      self->log_(absl::StrCat("logind refused the sleep delay lock (",
                              ErrorText(sd_bus_message_get_error(m), 0),
                              "); the machine may suspend before tasks are vacated"));
      return 0;
    }
    int fd = -1;
    if (sd_bus_message_read_basic(m, 'h', &fd) < 0 || fd < 0) return 0;
    // The message owns `fd`; keep a copy.
    self->CloseInhibitor();
    self->inhibit_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return 0;
  }

  static int OnPrepareForSleep(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<Logind*>(userdata);
    int start = 0;
    if (sd_bus_message_read_basic(m, 'b', &start) < 0) return 0;
    self->sleep_imminent_ = start != 0;
    self->sleep_signal_ = true;
    if (!start) self->TakeSleepDelay();  // resumed: be ready for the next sleep
    return 0;
  }

  std::function<void(const std::string&)> log_;
  sd_bus* bus_ = nullptr;
  sd_bus_slot* sleep_match_ = nullptr;
  sd_bus_slot* inhibit_call_ = nullptr;
  sd_bus_slot* idle_hint_call_ = nullptr;
  sd_bus_slot* idle_since_call_ = nullptr;
  int inhibit_fd_ = -1;
  std::optional<bool> idle_hint_;
  std::optional<uint64_t> idle_since_us_;
  bool sleep_imminent_ = false;
  bool sleep_signal_ = false;
};

LinuxSensors::LinuxSensors(LinuxSensorOptions options) : options_(std::move(options)) {
  long hz = ::sysconf(_SC_CLK_TCK);
  user_hz_ = hz > 0 ? hz : 100;
  if (options_.use_logind) {
    std::string why;
    logind_ = Logind::Open([this](const std::string& m) { LogOnce(m); }, &why);
    if (!logind_) {
      LogOnce(absl::StrCat(why, "; idle time from input devices, sleep not watched"));
    }
  }
}

LinuxSensors::~LinuxSensors() = default;

void LinuxSensors::LogOnce(const std::string& message) {
  if (std::exchange(logged_, true)) return;
  spdlog::warn("sensors: {}", message);
}

std::optional<double> LinuxSensors::OwnerCpuLoad() {
  std::optional<std::pair<uint64_t, uint64_t>> jiffies = ReadCpuJiffies(options_.proc_root);
  if (!jiffies) {
    prev_cpu_.reset();
    last_load_.reset();
    return std::nullopt;
  }
  CpuSample now{jiffies->first, jiffies->second,
                options_.pool_cpu_seconds ? options_.pool_cpu_seconds() : 0.0};
  if (!std::isfinite(now.pool_seconds)) now.pool_seconds = 0;
  if (!prev_cpu_ || now.total_jiffies < prev_cpu_->total_jiffies ||
      now.busy_jiffies < prev_cpu_->busy_jiffies) {
    prev_cpu_ = now;
    last_load_.reset();
    return std::nullopt;
  }
  // Two reads within one tick: keep the baseline and repeat the last answer.
  if (now.total_jiffies == prev_cpu_->total_jiffies) return last_load_;
  double d_total = static_cast<double>(now.total_jiffies - prev_cpu_->total_jiffies);
  double d_busy = static_cast<double>(now.busy_jiffies - prev_cpu_->busy_jiffies);
  double d_pool = std::max(0.0, now.pool_seconds - prev_cpu_->pool_seconds);
  double machine_seconds = d_total / static_cast<double>(user_hz_);
  double load = d_busy / d_total - d_pool / machine_seconds;
  prev_cpu_ = now;
  last_load_ = std::clamp(load, 0.0, 1.0);
  return last_load_;
}

owner::Readings LinuxSensors::Read() {
  owner::Readings r;
  Power power = ReadPower(options_.sys_root);
  r.on_ac_power = power.on_ac_power;
  r.battery_percent = power.battery_percent;
  r.temperature_c = ReadTemperature(options_.sys_root);
  r.lid_closed = ReadLid(options_.proc_root);
  r.owner_cpu_load = OwnerCpuLoad();
  if (logind_ && !logind_->Process()) {
    LogOnce("lost the system bus connection; idle time from input devices, sleep not watched");
    logind_.reset();
  }
  if (logind_) {
    r.idle_seconds = logind_->IdleSeconds();
    r.sleep_imminent = logind_->sleep_imminent();
    logind_->RefreshIdle();
  }
  if (!r.idle_seconds) r.idle_seconds = ReadInputIdle(options_.dev_root);
  return r;
}

bool LinuxSensors::WaitForChange(std::chrono::milliseconds timeout) {
  auto deadline =
      std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  while (true) {
    if (!logind_) {
      ::poll(nullptr, 0, MillisUntil(deadline));
      return false;
    }
    if (!logind_->Process()) {
      LogOnce("lost the system bus connection; idle time from input devices, sleep not watched");
      logind_.reset();
      return true;  // idle and sleep just became unknown
    }
    if (logind_->TakeSleepSignal()) return true;
    int left_ms = MillisUntil(deadline);
    if (left_ms <= 0) return false;
    logind_->Wait(left_ms);
  }
}

std::string LinuxSensors::OwnerInputMissing() const {
  return absl::StrCat(
      logind_ ? "logind knows no idle time of a session" : "no systemd-logind on the system bus",
      ", and no readable input device (", options_.dev_root, "/input/event*)");
}

void LinuxSensors::ReleaseSleepDelay() {
  if (logind_) logind_->ReleaseSleepDelay();
}

bool LinuxSensors::SleepDelayHeld() const { return logind_ && logind_->SleepDelayHeld(); }

std::unique_ptr<SensorSource> OpenDefaultSensors(std::function<double()> pool_cpu_seconds) {
  LinuxSensorOptions options;
  options.pool_cpu_seconds = std::move(pool_cpu_seconds);
  return std::make_unique<LinuxSensors>(std::move(options));
}

}  // namespace idlepool::platform
