#include "cli/client_error.h"

#include <initializer_list>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "text/host_port.h"

namespace idlepool::cli {
namespace {

enum class Why { kRefused, kNoName, kTimeout, kTls, kOther };

bool HasAny(absl::string_view text, std::initializer_list<absl::string_view> words) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (absl::string_view w : words) {
    if (absl::StrContains(lower, absl::AsciiStrToLower(w))) return true;
  }
  return false;
}

// Why a connection failed, from gRPC's or pinned_fetch's text (both name the system's error).
Why Classify(absl::string_view text, bool deadline) {
  if (HasAny(text, {"connection refused"})) return Why::kRefused;
  if (HasAny(text, {"DNS resolution failed", "C-ares", "Domain name not found", "cannot resolve",
                    "Name or service not known", "name resolution", "DNS server",
                    "No address associated"})) {
    return Why::kNoName;
  }
  if (deadline || HasAny(text, {"deadline exceeded", "no answer within", "timed out", "timeout"})) {
    return Why::kTimeout;
  }
  if (HasAny(text, {"handshake", "ssl", "certificate", "tls"})) return Why::kTls;
  return Why::kOther;
}

std::string HostOf(const std::string& address) {
  auto hp = text::SplitHostPort(address);
  return hp.ok() ? hp->host : address;
}

absl::Status Unreachable(Why why, const std::string& address, absl::string_view detail) {
  switch (why) {
    case Why::kRefused:
      return absl::UnavailableError(absl::StrCat(
          "cannot reach the coordinator at ", address,
          ": connection refused (nothing listens on that port); start `idlepool coordinator` "
          "there, or fix the address (",
          kAddressSources, ")"));
    case Why::kNoName:
      return absl::UnavailableError(absl::StrCat(
          "cannot reach the coordinator at ", address, ": the name ", HostOf(address),
          " does not resolve; check its spelling or give an IP address (", kAddressSources, ")"));
    case Why::kTimeout:
      return absl::UnavailableError(absl::StrCat(
          "the coordinator at ", address,
          " did not answer in time (a firewall dropping the port, a machine that is down, or "
          "not a coordinator); check that its port is open to this machine and the address (",
          kAddressSources, ")"));
    case Why::kTls:
      if (HasAny(detail, {"CERTIFICATE_VERIFY_FAILED", "certificate verify failed"})) {
        return absl::UnavailableError(absl::StrCat(
            "no TLS connection with ", address,
            ": its certificate is not signed by this pool's CA (another pool's coordinator?); "
            "check the address (",
            kAddressSources, "), or log in to that pool with a token of its own"));
      }
      if (HasAny(detail, {"not in peer certificate", "Peer name"})) {
        return absl::UnavailableError(
            absl::StrCat("no TLS connection with ", address,
                         ": its certificate does not cover the name ", HostOf(address),
                         "; use a name the coordinator advertises (its start banner lists them; "
                         "`idlepool coordinator --advertise` adds one)"));
      }
      return absl::UnavailableError(absl::StrCat(
          "no TLS connection with ", address,
          ": the handshake failed (is it an idlepool coordinator?); check the address (",
          kAddressSources, ")"));
    case Why::kOther:
      break;
  }
  return absl::UnavailableError(absl::StrCat("cannot reach the coordinator at ", address, " (",
                                             detail, "); check that it runs and the address (",
                                             kAddressSources, ")"));
}

}  // namespace

absl::Status ExplainCall(const grpc::Status& st, const std::string& address,
                         const std::string& what) {
  if (st.ok()) return absl::OkStatus();
  const std::string& msg = st.error_message();
  switch (st.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Unreachable(Classify(msg, st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED),
                         address, msg);
    case grpc::StatusCode::UNAUTHENTICATED:
      if (absl::StartsWith(msg, "no credential")) return absl::UnauthenticatedError(msg);
      return absl::UnauthenticatedError(absl::StrCat(
          "the coordinator at ", address, " refused the access token: ", msg,
          "; get a new one (`idlepool token create --role submit` on the coordinator) and run "
          "`idlepool login ",
          address, "` with it"));
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::UnimplementedError(absl::StrCat(
          what, ": the coordinator at ", address,
          " does not know this call: it runs another idlepool version than this client (",
          IDLEPOOL_VERSION, "); run the same version on both (`idlepool --version`)"));
    default:
      break;
  }
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      absl::StrCat(what, ": ", msg));
}

absl::Status ExplainConnect(const absl::Status& st, const std::string& address) {
  if (st.ok()) return st;
  if (absl::IsUnavailable(st) || absl::IsDeadlineExceeded(st)) {
    return Unreachable(Classify(st.message(), absl::IsDeadlineExceeded(st)), address, st.message());
  }
  if (absl::IsPermissionDenied(st)) {  // the pin: "HOST:PORT is not the pool this token ..."
    return absl::PermissionDeniedError(
        absl::StrCat(st.message(), "; nothing was sent. Check the address (", kAddressSources,
                     "), or use a token of the pool that runs there"));
  }
  return st;
}

}  // namespace idlepool::cli
