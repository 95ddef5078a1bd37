#include "http/ephemeral_pki.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace idlepool::http {
namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free>>;

absl::Status OpenSslFailure(const char* what) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  return absl::InternalError(absl::StrCat(what, ": ", buf));
}

bool IsIpLiteral(const std::string& name) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, name.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, signed by `issuer_key` (issuer nullptr: self-signed).
absl::StatusOr<Cert> Issue(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                           int64_t now, int64_t validity_s) {
  Cert cert(X509_new());
  std::unique_ptr<BIGNUM, Deleter<BN_free>> serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) ||
      !ASN1_TIME_set(X509_getm_notBefore(cert.get()), now - 300) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert.get()), now + validity_s) ||
      X509_set_pubkey(cert.get(), key) != 1 ||
      X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer ? issuer : cert.get())) != 1) {
    return OpenSslFailure("cannot make a certificate");
  }
  return cert;
}

absl::StatusOr<std::string> Pem(X509* cert, EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  const bool ok = bio && (cert ? PEM_write_bio_X509(bio.get(), cert)
                               : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0,
                                                          nullptr, nullptr)) == 1;
  if (!ok) return OpenSslFailure("cannot write PEM");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

absl::Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("cannot create ", tmp));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EphemeralPki> MakeEphemeralPki(const std::vector<std::string>& names, int64_t now,
                                              int64_t validity_s) {
  Key ca_key(EVP_EC_gen("P-256"));
  Key key(EVP_EC_gen("P-256"));
  if (!ca_key || !key) return OpenSslFailure("cannot make a key");
  auto ca = Issue(ca_key.get(), "idlepool ephemeral CA", nullptr, nullptr, now, validity_s);
  if (!ca.ok()) return ca.status();
  auto leaf = Issue(key.get(), "idlepool coordinator", ca->get(), ca_key.get(), now, validity_s);
  if (!leaf.ok()) return leaf.status();
  std::vector<std::string> sans;
  for (const std::string& n : names)
    sans.push_back(absl::StrCat(IsIpLiteral(n) ? "IP:" : "DNS:", n));
  if (!AddExtension(ca->get(), ca->get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(ca->get(), ca->get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(ca->get(), ca->get(), NID_subject_key_identifier, "hash") ||
      !AddExtension(leaf->get(), ca->get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(leaf->get(), ca->get(), NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(leaf->get(), ca->get(), NID_ext_key_usage, "serverAuth") ||
      !AddExtension(leaf->get(), ca->get(), NID_authority_key_identifier, "keyid:always") ||
      (!sans.empty() &&
       !AddExtension(leaf->get(), ca->get(), NID_subject_alt_name, absl::StrJoin(sans, ","))) ||
      X509_sign(ca->get(), ca_key.get(), EVP_sha256()) == 0 ||
      X509_sign(leaf->get(), ca_key.get(), EVP_sha256()) == 0) {
    return OpenSslFailure("cannot sign a certificate");
  }
  auto ca_pem = Pem(ca->get(), nullptr);
  auto leaf_pem = Pem(leaf->get(), nullptr);
  auto key_pem = Pem(nullptr, key.get());
  if (!ca_pem.ok() || !leaf_pem.ok() || !key_pem.ok()) return OpenSslFailure("cannot write PEM");
  return EphemeralPki{*ca_pem, *leaf_pem + *ca_pem, *key_pem};
}

absl::StatusOr<PkiFiles> WriteEphemeralPki(const std::string& dir,
                                           const std::vector<std::string>& names, int64_t now,
                                           int64_t validity_s) {
  auto pki = MakeEphemeralPki(names, now, validity_s);
  if (!pki.ok()) return pki.status();
  const std::filesystem::path d(dir);
  PkiFiles f{(d / "https-ca.pem").string(), (d / "https.pem").string(), (d / "https.key").string()};
  for (auto [path, text, mode] : {std::tuple{&f.key_file, &pki->key_pem, 0600},
                                  std::tuple{&f.chain_file, &pki->chain_pem, 0644},
                                  std::tuple{&f.ca_file, &pki->ca_pem, 0644}}) {
    if (auto st = WriteFile(*path, *text, static_cast<mode_t>(mode)); !st.ok()) return st;
  }
  return f;
}

}  // namespace idlepool::http
