#include "cli/command.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace idlepool::cli {

void AddClientOptions(CLI::App* sub, Common& common) {
  sub->add_option("--coordinator", common.coordinator,
                  "coordinator address host:port (env IDLEPOOL_COORDINATOR)")
      ->capture_default_str();
  sub->add_option("--token", common.token,
                  "pool token (env IDLEPOOL_TOKEN; visible to other users in `ps`, prefer the "
                  "environment or --token-file)");
  sub->add_option("--token-file", common.token_file, "read the pool token from this file")
      ->check(CLI::ExistingFile);
}

bool NeedToken(const Common& common) {
  if (!common.token.empty()) return true;
  std::fprintf(stderr,
               "idlepool: no pool token: pass --token, --token-file FILE or set "
               "IDLEPOOL_TOKEN (the coordinator printed it at its first start; it is in "
               "DATA_DIR/pool.token)\n");
  return false;
}

PoolClient MakeClient(const Common& common) { return PoolClient(common.coordinator, common.token); }

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int BadSpec(const absl::Status& st) {
  std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
  return 2;
}

std::string Plural(uint64_t n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace idlepool::cli
