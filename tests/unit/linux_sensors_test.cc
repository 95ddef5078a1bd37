#include "platform/linux_sensors.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace idlepool::platform {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

double NowRealtimeSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class LinuxSensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "linux_sensors_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  // Writes base_/rel, creating its directories.
  void Write(const std::string& rel, const std::string& content) {
    fs::path p = base_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  }
  // A fake input node whose atime and mtime lie `atime_ago` / `mtime_ago` seconds back.
  void InputNode(const std::string& name, double atime_ago, double mtime_ago) {
    std::string rel = "dev/input/" + name;
    Write(rel, "");
    auto at = [](double ago) {
      double t = NowRealtimeSeconds() - ago;
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(std::floor(t));
      ts.tv_nsec = static_cast<long>((t - std::floor(t)) * 1e9);
      return ts;
    };
    timespec times[2] = {at(atime_ago), at(mtime_ago)};
    ASSERT_EQ(::utimensat(AT_FDCWD, (base_ / rel).c_str(), times, 0), 0);
  }
  LinuxSensorOptions Options() {
    LinuxSensorOptions o;
    o.sys_root = (base_ / "sys").string();
    o.proc_root = (base_ / "proc").string();
    o.dev_root = (base_ / "dev").string();
    o.use_logind = false;
    return o;
  }

  fs::path base_;
};

TEST_F(LinuxSensorsTest, DesktopWithMainsAndNoBatteryIsOnAc) {
  Write("sys/class/power_supply/AC/type", "Mains\n");
  Write("sys/class/power_supply/AC/online", "1\n");
  LinuxSensors s(Options());
  owner::Readings r = s.Read();
  EXPECT_EQ(r.on_ac_power, true);
  EXPECT_EQ(r.battery_percent, std::nullopt);

  // A desktop is never on battery, whatever its supply says.
  Write("sys/class/power_supply/AC/online", "0\n");
  EXPECT_EQ(s.Read().on_ac_power, true);
}

TEST_F(LinuxSensorsTest, LaptopDischargingIsOnBatteryWithMeanPercent) {
  Write("sys/class/power_supply/AC/type", "Mains\n");
  Write("sys/class/power_supply/AC/online", "0\n");
  Write("sys/class/power_supply/ucsi-source-psy-USBC000:001/type", "USB\n");
  Write("sys/class/power_supply/ucsi-source-psy-USBC000:001/online", "0\n");
  Write("sys/class/power_supply/BAT0/type", "Battery\n");
  Write("sys/class/power_supply/BAT0/status", "Discharging\n");
  Write("sys/class/power_supply/BAT0/capacity", "40\n");
  Write("sys/class/power_supply/BAT1/type", "Battery\n");
  Write("sys/class/power_supply/BAT1/status", "Unknown\n");
  Write("sys/class/power_supply/BAT1/energy_now", "45000000\n");  // no capacity: energy ratio
  Write("sys/class/power_supply/BAT1/energy_full", "50000000\n");
  LinuxSensors s(Options());
  owner::Readings r = s.Read();
  EXPECT_EQ(r.on_ac_power, false);
  ASSERT_TRUE(r.battery_percent.has_value());
  EXPECT_DOUBLE_EQ(*r.battery_percent, (40.0 + 90.0) / 2);

  // Any online adapter (here a USB-C one) means on AC, whatever the battery says.
  Write("sys/class/power_supply/ucsi-source-psy-USBC000:001/online", "1\n");
  EXPECT_EQ(s.Read().on_ac_power, true);
}

TEST_F(LinuxSensorsTest, WithoutAdaptersTheBatteryStatusDecides) {
  Write("sys/class/power_supply/BAT0/type", "Battery\n");
  Write("sys/class/power_supply/BAT0/status", "Discharging\n");
  Write("sys/class/power_supply/BAT0/capacity", "75\n");
  LinuxSensors s(Options());
  owner::Readings r = s.Read();
  EXPECT_EQ(r.on_ac_power, false);
  EXPECT_EQ(r.battery_percent, 75.0);

  Write("sys/class/power_supply/BAT0/status", "Charging\n");
  EXPECT_EQ(s.Read().on_ac_power, true);
  Write("sys/class/power_supply/BAT0/status", "Full\n");
  EXPECT_EQ(s.Read().on_ac_power, true);
}

TEST_F(LinuxSensorsTest, DeviceScopeBatteryIsIgnored) {
  Write("sys/class/power_supply/AC/type", "Mains\n");
  Write("sys/class/power_supply/AC/online", "1\n");
  Write("sys/class/power_supply/hid-mouse-battery/type", "Battery\n");
  Write("sys/class/power_supply/hid-mouse-battery/scope", "Device\n");
  Write("sys/class/power_supply/hid-mouse-battery/status", "Discharging\n");
  Write("sys/class/power_supply/hid-mouse-battery/capacity", "10\n");
  LinuxSensors s(Options());
  owner::Readings r = s.Read();
  EXPECT_EQ(r.on_ac_power, true);
  EXPECT_EQ(r.battery_percent, std::nullopt);

  // Without the mains entry, a discharging mouse still does not put a desktop on battery.
  fs::remove_all(base_ / "sys/class/power_supply/AC");
  r = s.Read();
  EXPECT_EQ(r.on_ac_power, true);
  EXPECT_EQ(r.battery_percent, std::nullopt);
}

TEST_F(LinuxSensorsTest, EmptyTreeReadsAllUnknown) {
  LinuxSensors s(Options());
  for (int i = 0; i < 2; ++i) {
    owner::Readings r = s.Read();
    EXPECT_EQ(r.idle_seconds, std::nullopt);
    EXPECT_EQ(r.on_ac_power, std::nullopt);
    EXPECT_EQ(r.battery_percent, std::nullopt);
    EXPECT_EQ(r.temperature_c, std::nullopt);
    EXPECT_EQ(r.lid_closed, std::nullopt);
    EXPECT_EQ(r.owner_cpu_load, std::nullopt);
    EXPECT_EQ(r.sleep_imminent, std::nullopt);
  }
  EXPECT_FALSE(s.WaitForChange(milliseconds(0)));
  EXPECT_FALSE(s.SleepDelayHeld());
  s.ReleaseSleepDelay();  // no-op
}

TEST_F(LinuxSensorsTest, GarbageFilesReadUnknown) {
  Write("sys/class/power_supply/BAT0/type", "Battery\n");
  Write("sys/class/power_supply/BAT0/capacity", "lots\n");
  Write("sys/class/thermal/thermal_zone0/temp", "hot\n");
  Write("proc/acpi/button/lid/LID0/state", "state:      ajar\n");
  Write("proc/stat", "intr 1 2 3\n");
  LinuxSensors s(Options());
  for (int i = 0; i < 2; ++i) {
    owner::Readings r = s.Read();
    EXPECT_EQ(r.on_ac_power, std::nullopt);  // a battery, but no status and no adapter
    EXPECT_EQ(r.battery_percent, std::nullopt);
    EXPECT_EQ(r.temperature_c, std::nullopt);
    EXPECT_EQ(r.lid_closed, std::nullopt);
    EXPECT_EQ(r.owner_cpu_load, std::nullopt);
  }
}

TEST_F(LinuxSensorsTest, TemperatureIsTheHottestInRangeSensor) {
  Write("sys/class/thermal/thermal_zone0/temp", "45000\n");
  Write("sys/class/thermal/thermal_zone1/temp", "200000\n");  // out of range: ignored
  Write("sys/class/hwmon/hwmon0/temp1_input", "71500\n");
  Write("sys/class/hwmon/hwmon0/temp1_crit", "105000\n");  // a limit, not a reading
  Write("sys/class/hwmon/hwmon1/temp2_input", "-60000\n");  // out of range: ignored
  LinuxSensors s(Options());
  EXPECT_EQ(s.Read().temperature_c, 71.5);

  Write("sys/class/thermal/thermal_zone2/temp", "88000\n");
  EXPECT_EQ(s.Read().temperature_c, 88.0);

  fs::remove_all(base_ / "sys/class/hwmon/hwmon0");
  fs::remove_all(base_ / "sys/class/thermal/thermal_zone0");
  fs::remove_all(base_ / "sys/class/thermal/thermal_zone2");
  EXPECT_EQ(s.Read().temperature_c, std::nullopt);
}

TEST_F(LinuxSensorsTest, LidState) {
  Write("proc/acpi/button/lid/LID0/state", "state:      closed\n");
  LinuxSensors s(Options());
  EXPECT_EQ(s.Read().lid_closed, true);
  Write("proc/acpi/button/lid/LID0/state", "state:      open\n");
  EXPECT_EQ(s.Read().lid_closed, false);
}

TEST_F(LinuxSensorsTest, OwnerLoadIsTheStatDeltaMinusThePoolShare) {
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double pool_seconds = 5;
  LinuxSensorOptions o = Options();
  o.pool_cpu_seconds = [&] { return pool_seconds; };
  LinuxSensors s(o);

  // user nice system idle iowait irq softirq steal guest guest_nice
  Write("proc/stat", "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\nintr 5\n");
  EXPECT_EQ(s.Read().owner_cpu_load, std::nullopt);  // no previous sample

  // 1000 jiffies pass, 400 busy (iowait does not count); the pool used 15% of them.
  Write("proc/stat", "cpu  350 50 200 1200 200 0 0 0 0 0\ncpu0 1 2 3 4\nintr 5\n");
  pool_seconds += 0.15 * 1000 / hz;
  std::optional<double> load = s.Read().owner_cpu_load;
  ASSERT_TRUE(load.has_value());
  EXPECT_NEAR(*load, 0.40 - 0.15, 1e-9);

  // No time passed: the last answer stands.
  EXPECT_EQ(s.Read().owner_cpu_load, load);

  // All busy time was the pool's (and then some): clamped to 0.
  Write("proc/stat", "cpu  850 50 200 1700 200 0 0 0 0 0\n");
  pool_seconds += 2 * 1000 / hz;
  EXPECT_EQ(s.Read().owner_cpu_load, 0.0);

  // Fully busy, no pool work: 1 (irq, softirq and steal count as busy).
  Write("proc/stat", "cpu  1350 50 200 1700 200 200 200 100 0 0\n");
  EXPECT_EQ(s.Read().owner_cpu_load, 1.0);
}

TEST_F(LinuxSensorsTest, OwnerLoadWithoutPoolCallback) {
  LinuxSensors s(Options());
  Write("proc/stat", "cpu  0 0 0 100 0 0 0 0 0 0\n");
  EXPECT_EQ(s.Read().owner_cpu_load, std::nullopt);
  Write("proc/stat", "cpu  30 0 20 150 0 0 0 0 0 0\n");
  EXPECT_EQ(s.Read().owner_cpu_load, 0.5);
}

TEST_F(LinuxSensorsTest, IdleSecondsFromTheNewestInputEvent) {
  InputNode("event0", 120, 300);
  InputNode("event1", 400, 30);
  InputNode("mouse0", 1, 1);  // not an event node: ignored
  LinuxSensors s(Options());
  std::optional<double> idle = s.Read().idle_seconds;
  ASSERT_TRUE(idle.has_value());
  EXPECT_GE(*idle, 30.0 - 0.001);
  EXPECT_LT(*idle, 40.0);
}

TEST_F(LinuxSensorsTest, LogindWithoutBusIsUnknownNotAnError) {
  ScopedEnv env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=" + (base_ / "no-such-bus").string());
  LinuxSensorOptions o = Options();
  o.use_logind = true;
  LinuxSensors s(o);
  owner::Readings r = s.Read();
  EXPECT_EQ(r.idle_seconds, std::nullopt);
  EXPECT_EQ(r.sleep_imminent, std::nullopt);
  EXPECT_FALSE(s.SleepDelayHeld());
  EXPECT_FALSE(s.WaitForChange(milliseconds(0)));
  s.ReleaseSleepDelay();

  // Idle time still comes from input devices.
  InputNode("event0", 50, 50);
  std::optional<double> idle = s.Read().idle_seconds;
  ASSERT_TRUE(idle.has_value());
  EXPECT_NEAR(*idle, 50.0, 10.0);
}

TEST_F(LinuxSensorsTest, DefaultSensorsReadTheRealMachine) {
  ScopedEnv env("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=" + (base_ / "no-such-bus").string());
  std::unique_ptr<SensorSource> s = OpenDefaultSensors([] { return 0.0; });
  ASSERT_NE(s, nullptr);
  owner::Readings r = s->Read();
  EXPECT_EQ(r.owner_cpu_load, std::nullopt);  // first sample
  EXPECT_EQ(r.sleep_imminent, std::nullopt);  // no bus
  if (r.temperature_c) {
    EXPECT_GE(*r.temperature_c, -50.0);
    EXPECT_LE(*r.temperature_c, 150.0);
  }
  s->ReleaseSleepDelay();
}

// ---- logind over a private dbus-daemon ------------------------------------------------------

// A dbus-daemon on a socket in `dir`, stopped on destruction.
class DbusDaemon {
 public:
  // False when dbus-daemon is not installed or does not start.
  bool Start(const fs::path& dir) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    std::string listen = "--address=unix:path=" + (dir / "bus").string();
    std::vector<std::string> args = {"dbus-daemon", "--session",   "--nofork",
                                     "--nopidfile", "--print-address=3", listen};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 3);
    int r = ::posix_spawnp(&pid_, "dbus-daemon", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[1]);
    if (r != 0) {
      pid_ = -1;
      ::close(p[0]);
      return false;
    }
    char c;
    while (::read(p[0], &c, 1) == 1 && c != '\n') address_ += c;
    ::close(p[0]);
    return !address_.empty();
  }
  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  ~DbusDaemon() { Stop(); }
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  std::string address_;
};

// A stand-in for systemd-logind: the Manager's idle properties, Inhibit and PrepareForSleep.
// Serves on its own thread; the other methods may be called from the test thread.
class FakeLogind {
 public:
  bool Start(const std::string& address) {
    if (sd_bus_new(&bus_) < 0 || sd_bus_set_address(bus_, address.c_str()) < 0 ||
        sd_bus_set_bus_client(bus_, 1) < 0 || sd_bus_negotiate_fds(bus_, 1) < 0 ||
        sd_bus_start(bus_) < 0) {
      return false;
    }
    if (sd_bus_add_object_vtable(bus_, nullptr, "/org/freedesktop/login1",
                                 "org.freedesktop.login1.Manager", kVtable, this) < 0 ||
        sd_bus_request_name(bus_, "org.freedesktop.login1", 0) < 0) {
      return false;
    }
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    thread_ = std::thread([this] { Serve(); });
    return true;
  }
  ~FakeLogind() {
    if (thread_.joinable()) {
      stop_ = true;
      Wake();
      thread_.join();
    }
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (keep_fd_ >= 0) ::close(keep_fd_);
    if (bus_ != nullptr) sd_bus_flush_close_unref(bus_);
  }

  void SetIdle(bool hint, uint64_t since_us) {
    idle_hint_ = hint;
    idle_since_us_ = since_us;
  }
  void RefuseInhibit() { refuse_inhibit_ = true; }
  void EmitPrepareForSleep(bool start) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      emits_.push_back(start);
    }
    Wake();
  }
  int inhibit_calls() const { return inhibit_calls_; }
  std::string inhibit_args() const {
    std::lock_guard<std::mutex> lock(mu_);
    return inhibit_args_;
  }
  // Whether the client still holds the last lock granted (our pipe end still has a reader).
  bool LockHeld() const {
    int fd = keep_fd_;
    if (fd < 0) return false;
    pollfd pfd{fd, 0, 0};
    ::poll(&pfd, 1, 0);
    return (pfd.revents & POLLERR) == 0;
  }

 private:
  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
  void Serve() {
    while (!stop_) {
      while (sd_bus_process(bus_, nullptr) > 0) {
      }
      if (sd_bus_is_open(bus_) <= 0) return;
      std::vector<bool> emits;
      {
        std::lock_guard<std::mutex> lock(mu_);
        emits.swap(emits_);
      }
      for (bool start : emits) {
        sd_bus_emit_signal(bus_, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                           "PrepareForSleep", "b", static_cast<int>(start));
      }
      pollfd fds[2] = {{sd_bus_get_fd(bus_), static_cast<short>(sd_bus_get_events(bus_)), 0},
                       {wake_fd_, POLLIN, 0}};
      ::poll(fds, 2, emits.empty() ? 1000 : 0);
      uint64_t n;
      (void)!::read(wake_fd_, &n, sizeof(n));
    }
  }
  static int GetIdleHint(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                         void* userdata, sd_bus_error*) {
    return sd_bus_message_append(reply, "b",
                                 static_cast<int>(static_cast<FakeLogind*>(userdata)->idle_hint_));
  }
  static int GetIdleSince(sd_bus*, const char*, const char*, const char*, sd_bus_message* reply,
                          void* userdata, sd_bus_error*) {
    uint64_t v = static_cast<FakeLogind*>(userdata)->idle_since_us_;
    return sd_bus_message_append(reply, "t", v);
  }
  static int Inhibit(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<FakeLogind*>(userdata);
    const char *what, *who, *why, *mode;
    int r = sd_bus_message_read(m, "ssss", &what, &who, &why, &mode);
    if (r < 0) return r;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->inhibit_args_ = std::string(what) + "|" + who + "|" + why + "|" + mode;
    }
    ++self->inhibit_calls_;
    if (self->refuse_inhibit_) {
      return sd_bus_reply_method_errorf(m, "org.freedesktop.DBus.Error.AccessDenied", "denied");
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -errno;
    int old = self->keep_fd_.exchange(p[1]);
    if (old >= 0) ::close(old);
    r = sd_bus_reply_method_return(m, "h", p[0]);
    ::close(p[0]);
    return r;
  }

  static const sd_bus_vtable kVtable[];

  sd_bus* bus_ = nullptr;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> idle_hint_{false};
  std::atomic<uint64_t> idle_since_us_{0};
  std::atomic<bool> refuse_inhibit_{false};
  std::atomic<int> inhibit_calls_{0};
  std::atomic<int> keep_fd_{-1};
  mutable std::mutex mu_;
  std::vector<bool> emits_;
  std::string inhibit_args_;
};

const sd_bus_vtable FakeLogind::kVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("IdleHint", "b", FakeLogind::GetIdleHint, 0, 0),
    SD_BUS_PROPERTY("IdleSinceHint", "t", FakeLogind::GetIdleSince, 0, 0),
    SD_BUS_METHOD("Inhibit", "ssss", "h", FakeLogind::Inhibit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL("PrepareForSleep", "b", 0),
    SD_BUS_VTABLE_END};

uint64_t RealtimeUsAgo(double seconds) {
  return static_cast<uint64_t>((NowRealtimeSeconds() - seconds) * 1e6);
}

class LinuxSensorsLogindTest : public LinuxSensorsTest {
 protected:
  void SetUp() override {
    LinuxSensorsTest::SetUp();
    if (!daemon_.Start(base_)) GTEST_SKIP() << "dbus-daemon is not available";
    env_.emplace("DBUS_SYSTEM_BUS_ADDRESS", daemon_.address());
  }
  LinuxSensorOptions LogindOptions() {
    LinuxSensorOptions o = Options();
    o.use_logind = true;
    return o;
  }
  // Reads and waits on the bus until `done` holds for a reading; false after 10 s.
  static bool ReadUntil(LinuxSensors& s, const std::function<bool(const owner::Readings&)>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done(s.Read())) return true;
      s.WaitForChange(milliseconds(20));
    }
    return false;
  }

  DbusDaemon daemon_;
  std::optional<ScopedEnv> env_;
};

TEST_F(LinuxSensorsLogindTest, IdleSleepSignalAndDelayLock) {
  FakeLogind logind;
  ASSERT_TRUE(logind.Start(daemon_.address()));
  logind.SetIdle(true, RealtimeUsAgo(600));
  LinuxSensors s(LogindOptions());

  // The first Read() already has logind's idle state.
  owner::Readings r = s.Read();
  ASSERT_TRUE(r.idle_seconds.has_value());
  EXPECT_GE(*r.idle_seconds, 600.0 - 0.001);
  EXPECT_LT(*r.idle_seconds, 660.0);
  EXPECT_EQ(r.sleep_imminent, false);

  ASSERT_TRUE(ReadUntil(s, [&](const owner::Readings&) { return s.SleepDelayHeld(); }));
  EXPECT_EQ(logind.inhibit_args(), "sleep|idlepool|vacating pool tasks before sleep|delay");
  EXPECT_TRUE(logind.LockHeld());

  // The owner is active: IdleHint false.
  logind.SetIdle(false, RealtimeUsAgo(5));
  EXPECT_TRUE(ReadUntil(s, [](const owner::Readings& r) { return r.idle_seconds == 0.0; }));

  // Sleep announced: WaitForChange wakes, the lock is still held until released.
  logind.EmitPrepareForSleep(true);
  EXPECT_TRUE(s.WaitForChange(milliseconds(10'000)));
  EXPECT_EQ(s.Read().sleep_imminent, true);
  EXPECT_TRUE(s.SleepDelayHeld());
  EXPECT_TRUE(logind.LockHeld());
  SensorSource& source = s;  // the worker holds a SensorSource
  source.ReleaseSleepDelay();
  EXPECT_FALSE(s.SleepDelayHeld());
  EXPECT_FALSE(logind.LockHeld());

  // Resumed: sleep_imminent clears and the lock is taken again.
  logind.EmitPrepareForSleep(false);
  EXPECT_TRUE(s.WaitForChange(milliseconds(10'000)));
  EXPECT_EQ(s.Read().sleep_imminent, false);
  ASSERT_TRUE(ReadUntil(s, [&](const owner::Readings&) { return s.SleepDelayHeld(); }));
  EXPECT_EQ(logind.inhibit_calls(), 2);
  EXPECT_TRUE(logind.LockHeld());

  // IdleSinceHint 0: logind cannot tell, the input devices do.
  InputNode("event3", 70, 70);
  logind.SetIdle(true, 0);
  EXPECT_TRUE(ReadUntil(s, [](const owner::Readings& r) {
    return r.idle_seconds && *r.idle_seconds >= 70.0 - 0.001 && *r.idle_seconds < 80.0;
  }));

  // No signal pending: WaitForChange times out.
  EXPECT_FALSE(s.WaitForChange(milliseconds(0)));
}

TEST_F(LinuxSensorsLogindTest, RefusedLockStillWatchesSleep) {
  FakeLogind logind;
  logind.RefuseInhibit();
  ASSERT_TRUE(logind.Start(daemon_.address()));
  logind.SetIdle(true, RealtimeUsAgo(100));
  LinuxSensors s(LogindOptions());
  // Replies come in order: once a later property answer is seen, the refusal was handled.
  logind.SetIdle(false, RealtimeUsAgo(1));
  ASSERT_TRUE(ReadUntil(s, [](const owner::Readings& r) { return r.idle_seconds == 0.0; }));
  EXPECT_EQ(logind.inhibit_calls(), 1);
  EXPECT_FALSE(s.SleepDelayHeld());

  logind.EmitPrepareForSleep(true);
  EXPECT_TRUE(s.WaitForChange(milliseconds(10'000)));
  EXPECT_EQ(s.Read().sleep_imminent, true);
}

TEST_F(LinuxSensorsLogindTest, BusWithoutLogindFallsBackToInputDevices) {
  InputNode("event0", 42, 42);
  LinuxSensors s(LogindOptions());
  owner::Readings r = s.Read();
  ASSERT_TRUE(r.idle_seconds.has_value());
  EXPECT_NEAR(*r.idle_seconds, 42.0, 10.0);
  EXPECT_EQ(r.sleep_imminent, std::nullopt);
  EXPECT_FALSE(s.SleepDelayHeld());
}

TEST_F(LinuxSensorsLogindTest, LostBusMakesLogindSensorsUnknown) {
  FakeLogind logind;
  ASSERT_TRUE(logind.Start(daemon_.address()));
  logind.SetIdle(true, RealtimeUsAgo(600));
  LinuxSensors s(LogindOptions());
  ASSERT_TRUE(ReadUntil(s, [&](const owner::Readings&) { return s.SleepDelayHeld(); }));

  daemon_.Stop();
  EXPECT_TRUE(s.WaitForChange(milliseconds(10'000)));
  owner::Readings r = s.Read();
  EXPECT_EQ(r.sleep_imminent, std::nullopt);
  EXPECT_EQ(r.idle_seconds, std::nullopt);
  EXPECT_FALSE(s.SleepDelayHeld());  // a lock nobody watches would only delay sleep
  EXPECT_FALSE(logind.LockHeld());
}

}  // namespace
}  // namespace idlepool::platform
