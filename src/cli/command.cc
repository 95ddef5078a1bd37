#include "cli/command.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cli/credentials.h"
#include "platform/fd_limit.h"
#include "spdlog/spdlog.h"

namespace idlepool::cli {

void AddClientOptions(CLI::App* sub, Common& common) {
  sub->add_option("--coordinator", common.coordinator,
                  "coordinator address host:port (env IDLEPOOL_COORDINATOR; default: the one "
                  "`idlepool login` saved, else 127.0.0.1:7878)");
  sub->add_option("--token", common.token,
                  "access token (env IDLEPOOL_TOKEN; visible to other users in `ps`, prefer "
                  "`idlepool login`, the environment or --token-file)");
  sub->add_option("--token-file", common.token_file, "read the access token from this file")
      ->check(CLI::ExistingFile);
}

int NeedCredentials(Common& common) {
  auto c = ResolveCredentials(common.coordinator, common.token);
  if (!c.ok()) {
    std::fprintf(stderr, "idlepool: %s\n", std::string(c.status().message()).c_str());
    return absl::IsUnavailable(c.status()) || absl::IsDeadlineExceeded(c.status()) ? 1 : 2;
  }
  common.coordinator = c->coordinator;
  common.token = c->token;
  common.ca_pem = c->ca_pem;
  return 0;
}

PoolClient MakeClient(const Common& common) {
  return PoolClient(common.coordinator, common.token, common.ca_pem);
}

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int BadSpec(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return 2;
}

uint64_t RaiseDescriptorLimit(const char* who) {
  const platform::FdLimit l = platform::RaiseFdLimit();
  if (l.soft > l.soft_before) {
    spdlog::info("{}: file descriptor limit raised from {} to {}", who, l.soft_before, l.soft);
  }
  if (l.soft < 4096) {
    spdlog::warn(
        "{}: file descriptor limit is {} (hard limit {}): few connections can be served at "
        "once; raise it (LimitNOFILE= in a systemd unit, ulimit -Hn)",
        who, l.soft, l.hard);
  }
  return l.soft_before;
}

std::string Plural(uint64_t n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace idlepool::cli
