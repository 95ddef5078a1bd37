// Internal to src/trust: owning pointers for OpenSSL objects, OpenSSL errors as absl::Status,
// and the few conversions the trust files share (PEM in and out, pins, hex). Not a contract for
// other modules. Thread-safe (OpenSSL's error queue is per thread).
#pragma once

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace idlepool::trust::ossl {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<&EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<&X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<&BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<&BN_free>>;
using Asn1IntPtr = std::unique_ptr<ASN1_INTEGER, Deleter<&ASN1_INTEGER_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<&X509_EXTENSION_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<&GENERAL_NAMES_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, Deleter<&GENERAL_NAME_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<&X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<&X509_STORE_CTX_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, Deleter<&SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Deleter<&SSL_free>>;
struct OpensslFree {
  void operator()(void* p) const { OPENSSL_free(p); }
};

// A status of `code` saying `what` failed, with OpenSSL's reasons from this thread's error
// queue (which it empties).
absl::Status Error(absl::StatusCode code, absl::string_view what);
inline absl::Status Internal(absl::string_view what) {
  return Error(absl::StatusCode::kInternal, what);
}

// Lowercase hex of `n` bytes.
std::string Hex(const unsigned char* data, size_t n);
// Lowercase hex SHA-256 of the DER SubjectPublicKeyInfo of `key`.
absl::StatusOr<std::string> PinOf(EVP_PKEY* key);

// PEM parsers: kInvalidArgument naming `what` when the text holds no such object.
absl::StatusOr<X509Ptr> ReadCert(absl::string_view pem, absl::string_view what);
absl::StatusOr<PkeyPtr> ReadPrivateKey(absl::string_view pem, absl::string_view what);
absl::StatusOr<PkeyPtr> ReadPublicKey(absl::string_view pem, absl::string_view what);
absl::StatusOr<std::string> CertPem(X509* cert);

// An X509_STORE trusting `ca` alone; `leaf` checked against it at `unix_time` (nullopt: the
// current time), for any purpose. kPermissionDenied with OpenSSL's verify error when it fails.
absl::Status VerifyAgainst(X509* leaf, X509* ca, std::optional<int64_t> unix_time);

}  // namespace idlepool::trust::ossl
