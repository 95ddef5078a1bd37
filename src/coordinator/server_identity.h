// The coordinator's TLS identity, made at every start: the pool CA (DATA_DIR/ca.key, ca.pem;
// created on the first start) signs a fresh server key for the names workers and people will
// use (--advertise, else this machine's host name, its addresses and loopback). The chain and
// key are also written to DATA_DIR/tls/ (key 0600) for the HTTPS dashboard, in place of the
// last start's (removed first, so that a start on a full disk has the room they held).
//
// Thread-compatible; called once at start. Errors from trust/ca.h, and kFailedPrecondition when
// a file cannot be written (with its path).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trust/ca.h"
#include "trust/grpc_tls.h"

namespace idlepool::coordinator {

struct ServerIdentity {
  std::unique_ptr<trust::CertificateAuthority> ca;
  bool ca_created = false;
  trust::TlsIdentity tls;          // key, certificate, CA
  std::vector<std::string> names;  // the certificate's SANs
  std::string chain_file;          // DATA_DIR/tls/server.pem: certificate then CA
  std::string key_file;            // DATA_DIR/tls/server.key (0600)
};

// This machine's names: host name, "localhost", its non-loopback interface addresses,
// 127.0.0.1 and ::1.
std::vector<std::string> DefaultServerNames();

// The host to name in a URL or a command for a server listening on `listen_host`: that host when
// it is a specific address; for a wildcard ("", 0.0.0.0, ::), which no client can connect to, the
// first of `names` (the certificate's: the first --advertise name, else this machine's host
// name). Pure.
std::string AdvertisedHost(const std::vector<std::string>& names, const std::string& listen_host);

// `advertise` empty: DefaultServerNames(); else those (loopback is always added, so local
// tools work). `listen_host` is added when it is a specific address.
absl::StatusOr<ServerIdentity> MakeServerIdentity(const std::string& data_dir,
                                                  const std::vector<std::string>& advertise,
                                                  const std::string& listen_host, int64_t now);

}  // namespace idlepool::coordinator
