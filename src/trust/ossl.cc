#include "trust/ossl.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "absl/strings/str_cat.h"

namespace idlepool::trust::ossl {
namespace {

BioPtr ReadBio(absl::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

absl::Status NotPem(absl::string_view what) {
  ERR_clear_error();
  return absl::InvalidArgumentError(absl::StrCat(what, " is not valid PEM"));
}

}  // namespace

absl::Status Error(absl::StatusCode code, absl::string_view what) {
  std::string reasons;
  // The first errors are the root cause; a few are enough.
  for (int i = 0; i < 4; ++i) {
    unsigned long e = ERR_get_error();
    if (e == 0) break;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    absl::StrAppend(&reasons, reasons.empty() ? "" : "; ", buf);
  }
  ERR_clear_error();
  if (reasons.empty()) reasons = "no reason given by OpenSSL";
  return absl::Status(code, absl::StrCat(what, ": ", reasons));
}

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return out;
}

absl::StatusOr<std::string> PinOf(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(key, &der);
  if (len <= 0) return Internal("encode public key");
  std::unique_ptr<unsigned char, OpensslFree> owned(der);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(len), digest);
  return Hex(digest, sizeof digest);
}

absl::StatusOr<X509Ptr> ReadCert(absl::string_view pem, absl::string_view what) {
  if (pem.empty()) return NotPem(absl::StrCat(what, " (a certificate)"));
  BioPtr bio = ReadBio(pem);
  if (bio == nullptr) return Internal("memory BIO");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return NotPem(absl::StrCat(what, " (a certificate)"));
  return cert;
}

absl::StatusOr<PkeyPtr> ReadPrivateKey(absl::string_view pem, absl::string_view what) {
  if (pem.empty()) return NotPem(absl::StrCat(what, " (a private key)"));
  BioPtr bio = ReadBio(pem);
  if (bio == nullptr) return Internal("memory BIO");
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return NotPem(absl::StrCat(what, " (a private key)"));
  return key;
}

absl::StatusOr<PkeyPtr> ReadPublicKey(absl::string_view pem, absl::string_view what) {
  if (pem.empty()) return NotPem(absl::StrCat(what, " (a public key)"));
  BioPtr bio = ReadBio(pem);
  if (bio == nullptr) return Internal("memory BIO");
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return NotPem(absl::StrCat(what, " (a public key)"));
  return key;
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return Internal("write certificate PEM");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

absl::Status VerifyAgainst(X509* leaf, X509* ca, std::optional<int64_t> unix_time) {
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) != 1) {
    return Internal("set up certificate verification");
  }
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_ANY);
  if (unix_time) X509_STORE_CTX_set_time(ctx.get(), 0, static_cast<time_t>(*unix_time));
  if (X509_verify_cert(ctx.get()) == 1) return absl::OkStatus();
  const int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return absl::PermissionDeniedError(
      absl::StrCat("certificate verification failed: ", X509_verify_cert_error_string(err)));
}

}  // namespace idlepool::trust::ossl
