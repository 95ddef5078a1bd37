#include "worker/replica_tunnel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "serve/tunnel_server.h"
#include "text/host_port.h"

namespace idlepool::worker {

namespace {

// A TCP connect to 127.0.0.1:port on the worker's own loopback (--no-sandbox, or a replica
// sharing the host network).
absl::StatusOr<platform::UniqueFd> ConnectHostLoopback(uint16_t port) {
  platform::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("connect 127.0.0.1:", port, ": ", std::strerror(errno)));
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

absl::StatusOr<platform::UniqueFd> OpenReplica(Attempt& a, SandboxSlots* slots) {
  uint16_t port;
  int slot;
  bool host_network;
  {
    std::lock_guard lock(a.mu);
    if (!a.assignment.has_service() || a.port == 0 || a.killed || a.finished) {
      return absl::NotFoundError(absl::StrCat("attempt ", a.id, " is not a running replica"));
    }
    if (!a.process) return absl::UnavailableError("the replica has not started yet");
    port = a.port;
    slot = a.slot;
    host_network = a.assignment.host_network();
  }
  if (slots != nullptr && slot >= 0 && !host_network) return slots->ConnectLoopback(slot, port);
  return ConnectHostLoopback(port);
}

absl::StatusOr<std::unique_ptr<ReplicaTunnel>> ReplicaTunnel::Start(Config config) {
  auto hp = text::SplitHostPort(config.listen);
  if (!hp.ok())
    return absl::FailedPreconditionError(absl::StrCat("--tunnel-listen: ", hp.status().message()));
  serve::TunnelServerOptions o;
  o.listen = config.listen;
  o.tls = serve::TunnelTls{config.cert_pem, config.key_pem, config.ca_pem};
  o.open = [find = config.find,
            slots = config.slots](uint64_t attempt) -> absl::StatusOr<platform::UniqueFd> {
    std::shared_ptr<Attempt> a = find(attempt);
    if (!a) return absl::NotFoundError(absl::StrCat("attempt ", attempt, " is not held here"));
    return OpenReplica(*a, slots);
  };
  o.check_client = std::move(config.check_gateway);
  auto server = serve::TunnelServer::Start(std::move(o));
  if (!server.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tunnel-listen ", config.listen, ": ", server.status().message()));
  }
  std::unique_ptr<ReplicaTunnel> t(new ReplicaTunnel());
  t->server_ = std::move(*server);
  t->host_ = hp->host;
  return t;
}

ReplicaTunnel::~ReplicaTunnel() { Stop(); }

std::string ReplicaTunnel::address() const {
  return server_ ? text::JoinHostPort(host_, server_->port()) : "";
}

void ReplicaTunnel::SetCertificate(const std::string& cert_pem, const std::string& key_pem) {
  if (server_) server_->SetCertificate(cert_pem, key_pem);
}

void ReplicaTunnel::Stop() {
  if (server_) server_->Stop();
}

}  // namespace idlepool::worker
