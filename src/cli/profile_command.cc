#include "cli/profile_command.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "spec/spec.h"

namespace idlepool::cli {
namespace {

// The median of `v` (the mean of the two middle values for an even count); 0 when empty.
double Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2])
               : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

struct WorkerSummary {
  std::vector<uint64_t> stage, run, upload, wall;
  uint64_t input_bytes = 0, output_bytes = 0;
};

nlohmann::json TransferJson(const v1::Transfer& t) {
  return {{"input_bytes", t.input_bytes()},         {"cached_bytes", t.cached_bytes()},
          {"coordinator_bytes", t.coordinator_bytes()}, {"peer_bytes", t.peer_bytes()},
          {"output_bytes", t.output_bytes()},       {"cache_hits", t.cache_hits()},
          {"cache_misses", t.cache_misses()}};
}

}  // namespace

int RunProfile(PoolClient& client, const ProfileOptions& o) {
  const int given = (o.job ? 1 : 0) + (o.key.empty() ? 0 : 1) + (o.spec_file.empty() ? 0 : 1);
  if (given != 1) {
    std::fprintf(stderr, "idlepool: profile: give exactly one of JOB, --key or --spec\n");
    return 2;
  }
  std::string key = o.key;
  if (!o.spec_file.empty()) {
    auto spec = spec::ParseJobFile(o.spec_file);
    if (!spec.ok()) {
      std::fprintf(stderr, "idlepool: %s\n", std::string(spec.status().message()).c_str());
      return 2;
    }
    auto k = ProfileKeyOf(*spec);
    if (!k.ok()) {
      std::fprintf(stderr, "idlepool: %s\n", std::string(k.status().message()).c_str());
      return 1;
    }
    key = *k;
  }
  auto reply = client.GetProfile(key, o.job.value_or(0), o.max_samples);
  if (!reply.ok()) {
    std::fprintf(stderr, "idlepool: %s\n", std::string(reply.status().message()).c_str());
    return reply.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }

  std::map<std::string, WorkerSummary> workers;
  for (const auto& s : reply->samples()) {
    WorkerSummary& w = workers[s.worker()];
    w.stage.push_back(s.stage_ms());
    w.run.push_back(s.run_ms());
    w.upload.push_back(s.upload_ms());
    w.wall.push_back(s.wall_ms());
    w.input_bytes += s.transfer().input_bytes();
    w.output_bytes += s.transfer().output_bytes();
  }

  if (o.json) {
    nlohmann::json j;
    j["profile_key"] = reply->profile_key();
    j["jobs"] = nlohmann::json::array();
    for (const auto& b : reply->jobs()) {
      j["jobs"].push_back({{"job", b.job()},
                           {"name", b.name()},
                           {"state", b.state()},
                           {"tasks", b.tasks()},
                           {"input_bytes", b.input_bytes()},
                           {"input_files", b.input_files()},
                           {"profile_key", b.profile_key()}});
    }
    j["samples"] = nlohmann::json::array();
    for (const auto& s : reply->samples()) {
      j["samples"].push_back({{"worker", s.worker()},
                              {"job", s.job()},
                              {"task", s.task()},
                              {"attempt", s.attempt()},
                              {"stage_ms", s.stage_ms()},
                              {"run_ms", s.run_ms()},
                              {"upload_ms", s.upload_ms()},
                              {"wall_ms", s.wall_ms()},
                              {"resumed", s.resumed()},
                              {"ended_ms", s.ended_ms()},
                              {"transfer", TransferJson(s.transfer())}});
    }
    j["workers"] = nlohmann::json::array();
    for (const auto& [name, w] : workers) {
      j["workers"].push_back({{"worker", name},
                              {"tasks", w.run.size()},
                              {"median_stage_s", Median(w.stage) / 1000},
                              {"median_run_s", Median(w.run) / 1000},
                              {"median_upload_s", Median(w.upload) / 1000},
                              {"median_wall_s", Median(w.wall) / 1000},
                              {"input_bytes", w.input_bytes},
                              {"output_bytes", w.output_bytes}});
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  std::printf("profile %s: %d succeeded attempts\n",
              reply->profile_key().empty() ? "(none)" : reply->profile_key().c_str(),
              reply->samples_size());
  if (!workers.empty()) {
    std::printf("%-20s %6s %10s %10s %10s %10s %14s %14s\n", "WORKER", "TASKS", "STAGE s",
                "RUN s", "UPLOAD s", "WALL s", "STAGED B", "UPLOADED B");
    for (const auto& [name, w] : workers) {
      std::printf("%-20s %6zu %10.3f %10.3f %10.3f %10.3f %14llu %14llu\n", name.c_str(),
                  w.run.size(), Median(w.stage) / 1000, Median(w.run) / 1000,
                  Median(w.upload) / 1000, Median(w.wall) / 1000,
                  static_cast<unsigned long long>(w.input_bytes),
                  static_cast<unsigned long long>(w.output_bytes));
    }
    std::printf("(medians per attempt; bytes summed over the worker's attempts)\n");
  }
  for (const auto& b : reply->jobs()) {
    std::printf("job %llu  %s  %s: %u tasks, inputs %u files, %llu bytes\n",
                static_cast<unsigned long long>(b.job()), b.name().c_str(), b.state().c_str(),
                b.tasks(), b.input_files(), static_cast<unsigned long long>(b.input_bytes()));
  }
  return 0;
}

}  // namespace idlepool::cli
