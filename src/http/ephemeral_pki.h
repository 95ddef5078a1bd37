// A throwaway certificate authority and a server certificate it signed, made in memory: what the
// coordinator serves HTTPS with until the pool CA (trust/ca.h) issues its certificate, and what
// tests serve with. ECDSA P-256 keys; the server certificate has CN "idlepool coordinator", one
// SAN per name (an IP literal becomes an IP SAN, anything else a DNS SAN) and serverAuth.
//
// Times are Unix seconds passed in. Errors: kInternal with OpenSSL's reason; file errors
// kFailedPrecondition naming the path. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlepool::http {

struct EphemeralPki {
  std::string ca_pem;     // the CA's certificate: what clients trust
  std::string chain_pem;  // the server's certificate, then the CA's
  std::string key_pem;    // the server's private key (PKCS#8)
};

[[nodiscard]] absl::StatusOr<EphemeralPki> MakeEphemeralPki(const std::vector<std::string>& names,
                                                            int64_t now, int64_t validity_s);

struct PkiFiles {
  std::string ca_file;     // DIR/https-ca.pem
  std::string chain_file;  // DIR/https.pem
  std::string key_file;    // DIR/https.key, mode 0600
};

// Makes a fresh EphemeralPki and writes its three files into `dir` (each written whole under a
// temporary name, then renamed).
[[nodiscard]] absl::StatusOr<PkiFiles> WriteEphemeralPki(const std::string& dir,
                                                         const std::vector<std::string>& names,
                                                         int64_t now, int64_t validity_s);

}  // namespace idlepool::http
