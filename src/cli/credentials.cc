#include "cli/credentials.h"

#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/client_error.h"
#include "nlohmann/json.hpp"
#include "platform/write_file.h"
#include "trust/ca.h"
#include "trust/pinned_fetch.h"
#include "trust/token.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;
constexpr auto kFetchTimeout = std::chrono::seconds(10);

fs::path LoginFile() { return fs::path(ConfigDir()) / "login.json"; }

}  // namespace

std::string ConfigDir() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "idlepool").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/") / ".config" / "idlepool").string();
}

absl::StatusOr<std::optional<SavedLogin>> LoadLogin() {
  const fs::path path = LoginFile();
  std::ifstream in(path);
  if (!in) return std::optional<SavedLogin>();
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["coordinator"].is_string() || !j["token"].is_string() ||
      !j["ca_pem"].is_string()) {
    return absl::DataLossError(
        absl::StrCat(path.string(), " is damaged; run `idlepool login HOST:PORT` again"));
  }
  return std::optional<SavedLogin>(SavedLogin{j["coordinator"], j["token"], j["ca_pem"]});
}

absl::Status SaveLogin(const SavedLogin& login) {
  const fs::path dir = ConfigDir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir.string()));
  ::chmod(dir.c_str(), 0700);
  nlohmann::json j = {
      {"coordinator", login.coordinator}, {"token", login.token}, {"ca_pem", login.ca_pem}};
  return platform::WriteFileAtomically(LoginFile().string(), j.dump(2) + "\n", 0600);
}

absl::StatusOr<ClientCredentials> ResolveCredentials(const std::string& coordinator,
                                                     const std::string& token) {
  auto saved = LoadLogin();
  if (!saved.ok()) return saved.status();
  ClientCredentials c{coordinator, token, ""};
  if (c.token.empty()) {
    if (!saved->has_value()) {
      return absl::InvalidArgumentError(
          "no credential: run `idlepool login HOST:PORT` once (with an access token from "
          "`idlepool token create --role submit` on the coordinator), or set IDLEPOOL_TOKEN");
    }
    c.token = (*saved)->token;
  }
  // A login's address is used whenever none is given, whichever token goes with it.
  if (c.coordinator.empty() && saved->has_value()) c.coordinator = (*saved)->coordinator;
  if (c.coordinator.empty()) c.coordinator = kDefaultCoordinator;
  auto parts = trust::ParseToken(c.token);
  if (!parts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDLEPOOL_TOKEN/--token: ", parts.status().message(),
                     " (a pool token from before TLS pools? see the README's upgrading section)"));
  }
  if (parts->kind != trust::TokenKind::kAccess) {
    return absl::InvalidArgumentError(
        "a join token is for `idlepool worker --join`; commands take an access token (ipt1_)");
  }
  if (saved->has_value()) {
    auto pin = trust::CertPin((*saved)->ca_pem);
    if (pin.ok() && *pin == parts->pin) c.ca_pem = (*saved)->ca_pem;
  }
  if (c.ca_pem.empty()) {
    auto ca = trust::FetchPinnedCa(c.coordinator, parts->pin, kFetchTimeout);
    if (!ca.ok()) return ExplainConnect(ca.status(), c.coordinator);
    c.ca_pem = *ca;
  }
  return c;
}

absl::StatusOr<std::string> PromptSecret(const char* prompt) {
  std::fprintf(stderr, "%s", prompt);
  std::fflush(stderr);
  termios old{};
  const bool tty = ::tcgetattr(STDIN_FILENO, &old) == 0;
  if (tty) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
    std::fprintf(stderr, "\n");
  }
  if (line.empty()) return absl::InvalidArgumentError("no token given");
  return line;
}

}  // namespace idlepool::cli
