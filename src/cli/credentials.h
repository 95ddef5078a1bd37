// Where a client command's credentials come from, and `idlepool login`'s saved login.
//
// An access token (ipt1_...) from --token, --token-file or IDLEPOOL_TOKEN wins; otherwise the
// saved login (~/.config/idlepool/login.json, or $XDG_CONFIG_HOME/idlepool; the directory 0700,
// files 0600) gives the coordinator's address, the token and the pool CA. The CA is trusted only
// after it matched the token's pin: a saved CA with the same pin, else one fetched from the
// coordinator and checked (trust/pinned_fetch.h) before the token is ever sent.
//
// Single-threaded (the CLI's main thread). Errors: kInvalidArgument (a malformed or wrong kind
// of token; no token at all, with what to run), kPermissionDenied (the coordinator is not the
// pool the token pins), kUnavailable (cannot reach it), kDataLoss (a damaged login file).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace idlepool::cli {

inline constexpr const char* kDefaultCoordinator = "127.0.0.1:7878";

struct SavedLogin {
  std::string coordinator;
  std::string token;
  std::string ca_pem;
};

// $XDG_CONFIG_HOME/idlepool, else $HOME/.config/idlepool.
std::string ConfigDir();
absl::StatusOr<std::optional<SavedLogin>> LoadLogin();
absl::Status SaveLogin(const SavedLogin& login);

// What a client connects with.
struct ClientCredentials {
  std::string coordinator;
  std::string token;
  std::string ca_pem;
};

// `coordinator` and `token` as given (either may be empty: then the saved login's; the saved
// login's address whenever no address is given, even with a token given; else the default).
absl::StatusOr<ClientCredentials> ResolveCredentials(const std::string& coordinator,
                                                     const std::string& token);

// Reads one line from the terminal without echoing it (the token prompt of `login`).
absl::StatusOr<std::string> PromptSecret(const char* prompt);

}  // namespace idlepool::cli
