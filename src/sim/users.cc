#include "sim/users.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "sim/workload.h"

namespace idlepool::sim {
namespace {

absl::Status Bad(const std::string& path, const toml::node& at, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      path, ":", static_cast<uint64_t>(at.source().begin.line), ": ", std::string(what)));
}

// A number (integer or float) at `key` of `t`, within [lo, hi]; `fallback` when absent.
absl::StatusOr<double> Number(const std::string& path, const toml::table& t, const char* key,
                              double lo, double hi, double fallback) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return fallback;
  std::optional<double> v = n->value<double>();
  if (!v || !(*v >= lo && *v <= hi)) {
    return Bad(path, *n, absl::StrCat("'", key, "' must be a number in [", lo, ", ", hi, "]"));
  }
  return *v;
}

absl::StatusOr<core::UserSet> ReadUser(const std::string& path, const toml::table& t) {
  core::UserSet u;
  std::optional<std::string> name = t["name"].value<std::string>();
  if (!name || name->empty() || name->size() > 64) {
    return Bad(path, t, "[[user]] needs 'name', a string of 1 to 64 bytes");
  }
  u.user = *name;
  auto share = Number(path, t, "share", 1e-6, 1e6, 1);
  if (!share.ok()) return share.status();
  if (!(*share > 0)) return Bad(path, t, "'share' must be > 0");
  u.share = *share;
  auto max_slots = Number(path, t, "max_slots", 0, 1e6, 0);
  if (!max_slots.ok()) return max_slots.status();
  u.quota.max_slots = static_cast<uint32_t>(*max_slots);
  return u;
}

absl::Status ReadJobs(const std::string& path, const toml::table& t,
                      const std::map<std::string, core::UserSet>& users, std::mt19937_64& rng,
                      std::vector<SimJob>& out) {
  std::optional<std::string> user = t["user"].value<std::string>();
  if (!user || users.count(*user) == 0) {
    return Bad(path, t, "[[job]] needs 'user', the name of one of the [[user]] tables");
  }
  auto at = Number(path, t, "at_s", 0, 1e9, 0);
  auto tasks = Number(path, t, "tasks", 1, 1e6, 1);
  auto cpus = Number(path, t, "cpus", 1, 1024, 1);
  auto priority = Number(path, t, "priority", -1000, 1000, 0);
  auto repeat = Number(path, t, "repeat", 1, 1e4, 1);
  auto every = Number(path, t, "every_s", 0, 1e9, 0);
  for (const absl::StatusOr<double>* v : {&at, &tasks, &cpus, &priority, &repeat, &every}) {
    if (!v->ok()) return v->status();
  }
  std::optional<std::string> spec = t["task_seconds"].value<std::string>();
  if (!spec) {
    if (const toml::node* n = t.get("task_seconds"); n != nullptr && n->is_number()) {
      spec = absl::StrCat(n->value<double>().value_or(0));
    }
  }
  auto seconds = ParseDistribution(spec.value_or("60"));
  if (!seconds.ok()) {
    return Bad(path, t, absl::StrCat("'task_seconds': ", seconds.status().message()));
  }
  for (int64_t r = 0; r < static_cast<int64_t>(*repeat); ++r) {
    SimJob job;
    job.user = *user;
    job.priority = static_cast<int32_t>(*priority);
    job.resources.cpus = static_cast<uint32_t>(*cpus);
    job.submit_at_s = *at + static_cast<double>(r) * *every;
    job.task_seconds.resize(static_cast<size_t>(*tasks));
    for (double& s : job.task_seconds) s = std::clamp(Draw(*seconds, rng), 0.001, 1e8);
    out.push_back(std::move(job));
  }
  return absl::OkStatus();
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

absl::StatusOr<UsersWorkload> ReadUsersFile(const std::string& path, std::mt19937_64& rng) {
  toml::table root;
  if (std::error_code ec; !std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read it (no such file, or not a regular file)"));
  }
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":",
                                                   static_cast<uint64_t>(e.source().begin.line),
                                                   ": ", std::string(e.description())));
  }
  UsersWorkload w;
  std::map<std::string, core::UserSet> users;
  const toml::array* us = root["user"].as_array();
  const toml::array* js = root["job"].as_array();
  if (us == nullptr || us->empty() || js == nullptr || js->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": needs [[user]] tables (name, share) and [[job]] tables (user, at_s, "
                     "tasks, task_seconds); see `idlepool sim --help`"));
  }
  for (const toml::node& n : *us) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return Bad(path, n, "'user' must be an array of tables: [[user]]");
    auto u = ReadUser(path, *t);
    if (!u.ok()) return u.status();
    if (!users.emplace(u->user, *u).second) {
      return Bad(path, *t, absl::StrCat("user '", u->user, "' is defined twice"));
    }
    w.users.push_back(*u);
  }
  for (const toml::node& n : *js) {
    const toml::table* t = n.as_table();
    if (t == nullptr) return Bad(path, n, "'job' must be an array of tables: [[job]]");
    if (auto s = ReadJobs(path, *t, users, rng, w.jobs); !s.ok()) return s;
    if (w.jobs.size() > 100'000) return Bad(path, *t, "more than 100,000 jobs in all");
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.submit_at_s < b.submit_at_s; });
  return w;
}

absl::StatusOr<std::vector<UserSlowdown>> CompareFairToFifo(const SimConfig& shared) {
  auto run = [](const SimConfig& c, const char* what) -> absl::StatusOr<SimResult> {
    auto r = RunSimulation(c);
    if (!r.ok()) return r.status();
    if (!r->finished) {
      return absl::FailedPreconditionError(
          absl::StrCat("the ", what, " run did not finish within the simulated time"));
    }
    return r;
  };
  auto fair = run(shared, "fair-share");
  if (!fair.ok()) return fair.status();
  SimConfig fifo_config = shared;
  fifo_config.core.planted_bug = core::Options::PlantedBug::kFifoAcrossUsers;
  auto fifo = run(fifo_config, "FIFO");
  if (!fifo.ok()) return fifo.status();

  std::vector<UserSlowdown> out;
  for (const core::UserSet& u : shared.users) {
    SimConfig alone_config = shared;
    alone_config.jobs.clear();
    std::vector<size_t> mine;
    for (size_t j = 0; j < shared.jobs.size(); ++j) {
      if (shared.jobs[j].user != u.user) continue;
      mine.push_back(j);
      alone_config.jobs.push_back(shared.jobs[j]);
    }
    UserSlowdown s;
    s.user = u.user;
    s.share = u.share;
    s.jobs = mine.size();
    if (mine.empty()) {
      out.push_back(s);
      continue;
    }
    auto alone = run(alone_config, ("'" + u.user + "' alone").c_str());
    if (!alone.ok()) return alone.status();
    std::vector<double> fair_sd, fifo_sd, alone_resp;
    for (size_t k = 0; k < mine.size(); ++k) {
      const SimJob& job = shared.jobs[mine[k]];
      s.tasks += job.task_seconds.size();
      const double base = std::max(1e-3, alone->job_response_s[k]);
      alone_resp.push_back(base);
      fair_sd.push_back(fair->job_response_s[mine[k]] / base);
      fifo_sd.push_back(fifo->job_response_s[mine[k]] / base);
    }
    s.alone_response_s = Mean(alone_resp);
    s.fair_mean = Mean(fair_sd);
    s.fifo_mean = Mean(fifo_sd);
    s.fair_max = *std::max_element(fair_sd.begin(), fair_sd.end());
    s.fifo_max = *std::max_element(fifo_sd.begin(), fifo_sd.end());
    out.push_back(s);
  }
  return out;
}

}  // namespace idlepool::sim
