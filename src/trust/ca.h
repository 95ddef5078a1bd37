// The pool's certificate authority: an ECDSA P-256 key and a self-signed certificate made on the
// coordinator's first start and kept in its data dir (ca.key 0600, ca.pem), and the certificates
// it issues: the coordinator's server certificate, one certificate per worker, and the client
// certificate of a serving gateway (it opens worker tunnels).
//
// Pins: a pin is the lowercase hex SHA-256 of a key's DER SubjectPublicKeyInfo (what k3s and
// kubeadm put in join tokens), so a joining machine can check the coordinator's chain before it
// sends a secret. Certificates carry the role in the subject's OU and the name in its CN.
//
// Times are Unix seconds passed in (no clock here). Errors: kInternal for OpenSSL failures (the
// message carries OpenSSL's reason), kInvalidArgument for malformed PEM input, kDataLoss for a CA
// file that is unreadable or does not match its key, with the path.
//
// Thread-safety: a CertificateAuthority is immutable after LoadOrCreate and safe to share; the
// free functions are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trust/role.h"

namespace idlepool::trust {

// Validity of what the CA issues. Worker certificates: 30 days, renewed at two thirds of their
// life (issue 16). The CA itself: 10 years (rotation is out of scope). Server: one year, remade
// at every coordinator start.
inline constexpr int64_t kCaValiditySeconds = 10LL * 365 * 86400;
inline constexpr int64_t kServerValiditySeconds = 365LL * 86400;
inline constexpr int64_t kWorkerValiditySeconds = 30LL * 86400;
// Every worker certificate names this DNS SAN too, so peers verify each other by it (a peer's
// address is not in its certificate): the peer client sets it as the TLS target name.
inline constexpr const char* kWorkerSanName = "worker.idlepool";

// A fresh ECDSA P-256 private key, PKCS#8 PEM.
absl::StatusOr<std::string> NewPrivateKeyPem();
// The public key of a private key PEM, as a SubjectPublicKeyInfo PEM.
absl::StatusOr<std::string> PublicKeyPemOf(const std::string& private_key_pem);
// The pin of a public key PEM, of the key in a certificate PEM (CertPin), or of a private key.
absl::StatusOr<std::string> PublicKeyPin(const std::string& public_key_pem);
absl::StatusOr<std::string> CertPin(const std::string& cert_pem);

// A gateway certificate issued to an access token's holder (Jobs.WatchGateway) names the token in
// a URI SAN, kTokenUriPrefix + its id: revoking the token revokes the certificate
// (trust/revocations.h), wherever it is presented.
inline constexpr const char* kTokenUriPrefix = "urn:idlepool:token:";
// CertInfo::token_id of a certificate that names more than one token (refused everywhere).
inline constexpr const char* kSeveralTokens = "(several)";

// What a certificate says, for checks and listings.
struct CertInfo {
  // The subject's one CN and one OU, exactly as written ("" when it has none or several: a role
  // is compared whole, never searched for in the subject's text).
  std::string common_name;
  std::string role;  // the subject's OU: "worker", "coordinator", "gateway", "ca"
  std::string serial_hex;
  int64_t not_before = 0;
  int64_t not_after = 0;
  std::string issuer_pin;  // empty: not checked here
  std::string token_id;    // the token binding's id ("" none; kSeveralTokens)
};
absl::StatusOr<CertInfo> InspectCertificate(const std::string& cert_pem);

// A certificate just issued.
struct Issued {
  std::string cert_pem;
  std::string serial_hex;
  int64_t not_before = 0;
  int64_t not_after = 0;
};

class CertificateAuthority {
 public:
  // Loads DIR/ca.key and DIR/ca.pem, or creates both when neither exists (`*created` = true);
  // one without the other is kDataLoss. The key file is written 0600, atomically.
  static absl::StatusOr<std::unique_ptr<CertificateAuthority>> LoadOrCreate(const std::string& dir,
                                                                            int64_t now,
                                                                            bool* created);
  ~CertificateAuthority();

  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& pin() const { return pin_; }

  // The coordinator's certificate for `public_key_pem`: CN "idlepool coordinator", OU
  // "coordinator", one SAN per entry of `names` (an IP literal becomes an IP SAN, anything else
  // a DNS SAN), serverAuth.
  absl::StatusOr<Issued> IssueServer(const std::string& public_key_pem,
                                     const std::vector<std::string>& names, int64_t now) const;
  // A worker's certificate: CN `name`, OU "worker", SAN DNS kWorkerSanName, clientAuth and
  // serverAuth (its peer port serves with it), valid [now - 5 min, now + validity).
  absl::StatusOr<Issued> IssueWorker(const std::string& public_key_pem, const std::string& name,
                                     int64_t now, int64_t validity = kWorkerValiditySeconds) const;
  // A serving gateway's client certificate (it opens worker tunnels, docs/guide/serving.md): CN
  // `name`, OU "gateway", clientAuth only (it cannot serve as a worker or the coordinator),
  // valid [now - 5 min, now + validity); bound to access token `token_id` when given (a URI SAN,
  // kTokenUriPrefix). kInvalidArgument for a bad name, validity or token id.
  absl::StatusOr<Issued> IssueGateway(const std::string& public_key_pem, const std::string& name,
                                      int64_t now, int64_t validity = kServerValiditySeconds,
                                      const std::string& token_id = "") const;
  // OK when `cert_pem` was signed by this CA and is within its validity at `now`.
  absl::Status Verify(const std::string& cert_pem, int64_t now) const;

 private:
  struct Key;
  CertificateAuthority(std::unique_ptr<Key> key, std::string cert_pem, std::string pin);
  std::unique_ptr<Key> key_;
  std::string cert_pem_;
  std::string pin_;
};

}  // namespace idlepool::trust
