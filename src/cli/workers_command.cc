// `idlepool workers`: the pool's workers as a table, or JSON.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/json.h"
#include "cli/command.h"
#include "text/names.h"

namespace idlepool::cli {
namespace {

// "42s", "9m", "2h10m", "3d4h".
std::string ShortDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) {
    return s % 3600 >= 60 ? absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m")
                          : absl::StrCat(s / 3600, "h");
  }
  return absl::StrCat(s / 86400, "d", (s % 86400) / 3600, "h");
}

// "1.2MB/s", "112MB/s", "850kB/s" (10^3 multiples, as network rates are quoted).
std::string ShortRate(uint64_t bytes_per_s) {
  const double b = static_cast<double>(bytes_per_s);
  char buf[32];
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3gGB/s", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3gMB/s", b / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3gkB/s", b / 1e3);
  return buf;
}

// The table's LINK column: "0.4ms 112MB/s↓ 98MB/s↑", "-" when never measured.
std::string LinkText(const v1::WorkerInfo& w) {
  if (!w.has_link()) return "-";
  char rtt[32];
  std::snprintf(rtt, sizeof rtt, "%.3gms", w.link().rtt_ms());
  return absl::StrCat(rtt, " ", ShortRate(w.link().down_bytes_per_s()), "↓ ",
                      ShortRate(w.link().up_bytes_per_s()), "↑");
}

// The GPUS column: how many devices it offers and each one's memory ("2: 40G,8G"), "-" for none.
std::string GpusText(const v1::WorkerInfo& w) {
  if (w.gpus_size() == 0) return "-";
  std::string out = std::to_string(w.gpus_size()) + ":";
  for (int i = 0; i < w.gpus_size(); ++i) {
    const uint64_t mb = w.gpus(i).memory_mb();
    char one[32];
    if (mb >= 1024) {
      std::snprintf(one, sizeof one, "%.0fG", static_cast<double>(mb) / 1024.0);
    } else {
      std::snprintf(one, sizeof one, "%lluM", static_cast<unsigned long long>(mb));
    }
    out += (i == 0 ? " " : ",") + std::string(one);
  }
  return out;
}

// The table's UP column: "93% up 2h10m/down 9m": the up fraction, then the mean up and down
// periods ("(no end seen)" when none of them ended: the time so far, a lower bound).
std::string UpText(const v1::WorkerInfo& w) {
  const auto& a = w.availability();
  if (a.observed_s() <= 0) return "-";
  auto mean = [](double mean_s, uint32_t ended, double total_s) -> std::string {
    if (total_s <= 0) return "-";
    return ended > 0 ? ShortDuration(mean_s) : ShortDuration(mean_s) + " (no end seen)";
  };
  const double up_s = a.up_fraction() * a.observed_s(), down_s = a.observed_s() - up_s;
  return absl::StrCat(static_cast<int>(a.up_fraction() * 100 + 0.5), "% up ",
                      mean(a.mean_up_s(), a.up_periods(), up_s), "/down ",
                      mean(a.mean_down_s(), a.down_periods(), down_s));
}

// `s` padded with spaces to `width` columns (UTF-8: one column per code point).
std::string Pad(const std::string& s, size_t width) {
  size_t cols = 0;
  for (unsigned char c : s) cols += (c & 0xC0) != 0x80;
  return cols >= width ? s : s + std::string(width - cols, ' ');
}

int ListWorkers(Common& common, bool json) {
  if (int rc = NeedCredentials(common); rc != 0) return rc;
  PoolClient client = MakeClient(common);
  auto w = client.ListWorkers();
  if (!w.ok()) return Fail(w.status());
  if (json) {
    std::printf("%s\n", api::WorkersJson(*w).dump().c_str());
    return 0;
  }
  std::printf("%-20s %-20s %-13s %-14s %6s %6s %-16s %-7s %10s  %s %6s  %s  %s\n", "WORKER", "HOST",
              "STATE", "ACTIVITY", "SLOTS", "BUSY", "GPUS", "SANDBOX", "SEEN",
              Pad("LINK", 26).c_str(), "CPU", Pad("UP", 32).c_str(), "OWNER");
  for (const auto& x : w->workers()) {
    // Only a worker that is there has an owner policy to show.
    const bool here = x.state() == "connected" || x.state() == "disconnected";
    std::string owner = !here || x.owner_state().empty() ? "-" : x.owner_state();
    if (here && !x.owner_reason().empty()) owner += " (" + x.owner_reason() + ")";
    char seen[32] = "-";
    if (x.last_seen_ms_ago() >= 0) {
      std::snprintf(seen, sizeof seen, "%.1fs", static_cast<double>(x.last_seen_ms_ago()) / 1000.0);
    }
    const std::string cpu =
        x.cpu_score() > 0 ? std::to_string(static_cast<int64_t>(x.cpu_score() + 0.5)) : "-";
    // Shown escaped: a row stored before names were checked, or a host name, may hold
    // what would not show (text/names.h).
    // SANDBOX: its tier as its last Hello said ("-": not known, e.g. an older worker).
    const std::string sandbox = x.sandbox().empty() ? "-" : text::VisibleText(x.sandbox());
    // STATE: unhealthy while it is out for its failures (see below the table).
    const std::string state = !x.unhealthy().empty() && here ? "unhealthy" : x.state();
    std::printf("%-20s %-20s %-13s %-14s %6u %6u %-16s %-7s %10s  %s %6s  %s  %s\n",
                text::VisibleText(x.worker()).c_str(), text::VisibleText(x.hostname()).c_str(),
                state.c_str(), x.activity().empty() ? "-" : x.activity().c_str(),
                x.capacity().cpus(), x.slots_busy(), GpusText(x).c_str(), sandbox.c_str(), seen,
                Pad(LinkText(x), 26).c_str(), cpu.c_str(), Pad(UpText(x), 32).c_str(),
                owner.c_str());
  }
  for (const auto& x : w->workers()) {
    if (x.unhealthy().empty()) continue;
    std::printf(
        "%s is unhealthy for %llds more (no new work; `idlepool workers reset %s` clears "
        "it): %s\n",
        text::VisibleText(x.worker()).c_str(),
        static_cast<long long>((x.unhealthy_ms_left() + 999) / 1000),
        text::VisibleText(x.worker()).c_str(), text::VisibleText(x.unhealthy()).c_str());
  }
  return 0;
}

}  // namespace

Command AddWorkersCommand(CLI::App& app, Common& common) {
  auto json = std::make_shared<bool>(false);
  auto* workers = app.add_subcommand("workers", "list the pool's workers (or revoke or reset one)");
  AddClientOptions(workers, common);
  workers->add_flag("--json", *json, "print JSON");
  struct Revoke {
    std::string name, data_dir;
  };
  auto r = std::make_shared<Revoke>();
  auto* revoke = workers->add_subcommand(
      "revoke", "cut a worker's session at once and refuse its certificate from now on");
  revoke->add_option("name", r->name, "the worker's name")->required();
  AddDataDirOption(revoke, r->data_dir);
  auto* reset = workers->add_subcommand(
      "reset", "clear a worker's failures: no longer unhealthy, held off no job (admin socket)");
  reset->add_option("name", r->name, "the worker's name")->required();
  AddDataDirOption(reset, r->data_dir);
  return {workers, [json, r, revoke, reset, &common] {
            if (*revoke) return RevokeWorker(r->data_dir, r->name);
            if (*reset) return ResetWorker(r->data_dir, r->name);
            return ListWorkers(common, *json);
          }};
}

}  // namespace idlepool::cli
