#include "coordinator/server_identity.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "platform/write_file.h"
#include "text/host_port.h"

namespace idlepool::coordinator {
namespace {

namespace fs = std::filesystem;

void AddUnique(std::vector<std::string>* names, std::string name) {
  if (name.empty()) return;
  if (std::find(names->begin(), names->end(), name) == names->end()) {
    names->push_back(std::move(name));
  }
}

// Interface addresses, loopback and link-local IPv6 left out.
void AddInterfaceAddresses(std::vector<std::string>* names) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char host[NI_MAXHOST];
    const socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (::getnameinfo(a->ifa_addr, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) {
      continue;
    }
    std::string h = host;
    if (h.find('%') != std::string::npos) continue;  // link-local with a scope
    if (h == "127.0.0.1" || h == "::1") continue;
    AddUnique(names, h);
  }
  ::freeifaddrs(list);
}

}  // namespace

std::vector<std::string> DefaultServerNames() {
  std::vector<std::string> names;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) AddUnique(&names, host);
  AddUnique(&names, "localhost");
  AddInterfaceAddresses(&names);
  return names;
}

std::string AdvertisedHost(const std::vector<std::string>& names, const std::string& listen_host) {
  if (!text::IsWildcardHost(listen_host)) return listen_host;
  return names.empty() ? std::string("127.0.0.1") : names.front();
}

absl::StatusOr<ServerIdentity> MakeServerIdentity(const std::string& data_dir,
                                                  const std::vector<std::string>& advertise,
                                                  const std::string& listen_host, int64_t now) {
  ServerIdentity id;
  auto ca = trust::CertificateAuthority::LoadOrCreate(data_dir, now, &id.ca_created);
  if (!ca.ok()) return ca.status();
  id.ca = std::move(*ca);
  id.names = advertise.empty() ? DefaultServerNames() : advertise;
  AddUnique(&id.names, "127.0.0.1");
  AddUnique(&id.names, "::1");
  if (!text::IsWildcardHost(listen_host)) AddUnique(&id.names, listen_host);
  auto key = trust::NewPrivateKeyPem();
  if (!key.ok()) return key.status();
  auto pub = trust::PublicKeyPemOf(*key);
  if (!pub.ok()) return pub.status();
  auto cert = id.ca->IssueServer(*pub, id.names, now);
  if (!cert.ok()) return cert.status();
  id.tls = trust::TlsIdentity{*key, cert->cert_pem, id.ca->cert_pem()};
  const fs::path dir = fs::path(data_dir) / "tls";
  std::error_code ec;
  fs::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);
  id.chain_file = (dir / "server.pem").string();
  id.key_file = (dir / "server.key").string();
  // The last start's files go first: on a full disk the new ones take the room they held.
  ::unlink(id.key_file.c_str());
  ::unlink(id.chain_file.c_str());
  if (auto st = platform::WriteFileAtomically(id.key_file, *key, 0600); !st.ok()) return st;
  if (auto st =
          platform::WriteFileAtomically(id.chain_file, cert->cert_pem + id.ca->cert_pem(), 0644);
      !st.ok()) {
    return st;
  }
  return id;
}

}  // namespace idlepool::coordinator
