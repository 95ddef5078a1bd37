#include "serve/tunnel_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#include <optional>
#include <string_view>

namespace idlepool::serve {

namespace ssl = boost::asio::ssl;
using ContextPtr = std::shared_ptr<ssl::context>;

namespace {

// The value of the one `nid` entry of `name`; nullopt when there is none or more than one.
std::optional<std::string> OnlyEntry(X509_NAME* name, int nid) {
  int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0 || X509_NAME_get_index_by_NID(name, nid, i) >= 0) return std::nullopt;
  unsigned char* utf8 = nullptr;
  int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
  if (len < 0) return std::nullopt;
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return out;
}

// At the leaf (depth 0): its OU is `role` and, when `cn` is set, its CN is *cn. Other depths
// pass when OpenSSL verified them.
bool CheckLeaf(bool preverified, X509_STORE_CTX* ctx, std::string_view role,
               const std::string* cn) {
  if (!preverified) return false;
  if (X509_STORE_CTX_get_error_depth(ctx) != 0) return true;
  X509* leaf = X509_STORE_CTX_get_current_cert(ctx);
  if (leaf == nullptr) return false;
  X509_NAME* subject = X509_get_subject_name(leaf);
  std::optional<std::string> ou = OnlyEntry(subject, NID_organizationalUnitName);
  if (!ou || *ou != role) return false;
  if (cn == nullptr) return true;
  std::optional<std::string> name = OnlyEntry(subject, NID_commonName);
  return name && *name == *cn;
}

// A context of `method` with `tls`' chain and key, trusting its CA; kInvalidArgument naming
// what OpenSSL refused.
absl::StatusOr<ContextPtr> Build(ssl::context::method method, const std::string& chain,
                                 const std::string& key, const std::string* ca, int min_version) {
  auto ctx = std::make_shared<ssl::context>(method);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), min_version);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  const char* what = "the certificate chain";
  try {
    ctx->use_certificate_chain(boost::asio::buffer(chain));
    what = "the private key";
    ctx->use_private_key(boost::asio::buffer(key), ssl::context::pem);
    if (ca != nullptr) {
      what = "the pool CA";
      ctx->add_certificate_authority(boost::asio::buffer(*ca));
    }
  } catch (const boost::system::system_error& e) {
    ERR_clear_error();
    return absl::InvalidArgumentError(std::string("TLS: ") + what + ": " + e.what());
  }
  return ctx;
}

}  // namespace

absl::StatusOr<ContextPtr> TunnelServerContext(const TunnelTls& tls) {
  absl::StatusOr<ContextPtr> ctx =
      Build(ssl::context::tls_server, tls.cert_chain_pem, tls.key_pem, &tls.ca_pem, TLS1_3_VERSION);
  if (!ctx.ok()) return ctx;
  (*ctx)->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  (*ctx)->set_verify_callback([](bool preverified, ssl::verify_context& v) {
    return CheckLeaf(preverified, v.native_handle(), "gateway", nullptr);
  });
  return ctx;
}

absl::StatusOr<ContextPtr> TunnelClientContext(const TunnelTls& tls) {
  absl::StatusOr<ContextPtr> ctx =
      Build(ssl::context::tls_client, tls.cert_chain_pem, tls.key_pem, &tls.ca_pem, TLS1_3_VERSION);
  if (!ctx.ok()) return ctx;
  (*ctx)->set_verify_mode(ssl::verify_peer);
  // Without ExpectWorker on the connection, no worker is accepted.
  (*ctx)->set_verify_callback([](bool, ssl::verify_context&) { return false; });
  return ctx;
}

bool ExpectWorker::operator()(bool preverified, ssl::verify_context& ctx) const {
  return CheckLeaf(preverified, ctx.native_handle(), "worker", &name);
}

std::string PeerCertificatePem(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string out;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (PEM_write_bio_X509(bio, cert) == 1) {
      char* data = nullptr;
      const long len = BIO_get_mem_data(bio, &data);
      out.assign(data, static_cast<size_t>(len));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return out;
}

absl::StatusOr<ContextPtr> HttpsServerContext(const std::string& cert_chain_pem,
                                              const std::string& key_pem) {
  return Build(ssl::context::tls_server, cert_chain_pem, key_pem, nullptr, TLS1_2_VERSION);
}

}  // namespace idlepool::serve
