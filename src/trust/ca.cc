// The pool CA. Certificates are X.509 v3, SHA-256 over ECDSA P-256, with a random 128-bit serial
// (top bit set, so every serial is 32 hex digits), subject OU = role and CN = name, and subject
// and authority key identifiers. The CA's subject names its pin's first 12 digits, so the CAs of
// two pools never share a subject.
#include "trust/ca.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "text/utf8.h"
#include "trust/ca_files.h"
#include "trust/ossl.h"

namespace idlepool::trust {

struct CertificateAuthority::Key {
  ossl::PkeyPtr pkey;
  ossl::X509Ptr cert;
};

namespace {

using ossl::Internal;

// Issued certificates start a little in the past, for machines whose clocks run behind.
constexpr int64_t kBackdateSeconds = 5 * 60;
constexpr size_t kMaxCommonNameBytes = 64;  // X.520 ub-common-name

// What a certificate to be signed says.
struct CertSpec {
  std::string common_name;
  std::string unit;  // the subject's OU: the role
  int64_t not_before = 0;
  int64_t not_after = 0;
  bool is_ca = false;
  const char* extended_usage = nullptr;  // leaves only
  std::vector<std::string> names = {};   // subjectAltName entries
};

absl::StatusOr<ossl::PkeyPtr> NewKey() {
  ossl::PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (key == nullptr) return Internal("generate a P-256 key");
  return key;
}

absl::StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key) {
  ossl::BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Internal("write private key PEM");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

absl::Status SetSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Internal("draw a serial number");
  bytes[0] |= 0x80;
  ossl::BnPtr bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) == nullptr) {
    return Internal("set the serial number");
  }
  return absl::OkStatus();
}

absl::Status SetSubject(X509* cert, const CertSpec& spec) {
  X509_NAME* name = X509_get_subject_name(cert);
  auto add = [&](const char* field, const std::string& value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                      reinterpret_cast<const unsigned char*>(value.data()),
                                      static_cast<int>(value.size()), -1, 0) == 1;
  };
  if (!add("OU", spec.unit) || !add("CN", spec.common_name)) return Internal("set the subject");
  return absl::OkStatus();
}

absl::Status SetValidity(X509* cert, const CertSpec& spec) {
  if (ASN1_TIME_set(X509_getm_notBefore(cert), static_cast<time_t>(spec.not_before)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert), static_cast<time_t>(spec.not_after)) == nullptr) {
    return Internal("set the validity");
  }
  return absl::OkStatus();
}

// One extension in OpenSSL's configuration syntax; `issuer` supplies the authority key id.
absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ossl::ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return Internal(absl::StrCat("add extension ", OBJ_nid2sn(nid), " = ", value));
  }
  return absl::OkStatus();
}

bool IsDnsName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

// An IP SAN for an IP literal (v4 or v6), a URI SAN for a token binding (kTokenUriPrefix), else a
// DNS SAN. Built directly rather than through
// the configuration syntax, so no name can smuggle in another entry.
absl::StatusOr<ossl::GeneralNamePtr> SanEntry(const std::string& name) {
  ossl::GeneralNamePtr gen(GENERAL_NAME_new());
  if (gen == nullptr) return Internal("allocate a subjectAltName entry");
  if (ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.c_str())) {
    GENERAL_NAME_set0_value(gen.get(), GEN_IPADD, ip);
    return gen;
  }
  ERR_clear_error();
  if (absl::StartsWith(name, kTokenUriPrefix)) {
    ASN1_IA5STRING* uri = ASN1_IA5STRING_new();
    if (uri == nullptr || ASN1_STRING_set(uri, name.data(), static_cast<int>(name.size())) != 1) {
      ASN1_IA5STRING_free(uri);
      return Internal("set a URI");
    }
    GENERAL_NAME_set0_value(gen.get(), GEN_URI, uri);
    return gen;
  }
  if (!IsDnsName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name.substr(0, 100), "' is neither an IP address nor a DNS name"));
  }
  ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
  if (dns == nullptr || ASN1_STRING_set(dns, name.data(), static_cast<int>(name.size())) != 1) {
    ASN1_IA5STRING_free(dns);
    return Internal("set a DNS name");
  }
  GENERAL_NAME_set0_value(gen.get(), GEN_DNS, dns);
  return gen;
}

absl::Status AddSubjectAltNames(X509* cert, const std::vector<std::string>& names) {
  if (names.empty()) return absl::OkStatus();
  ossl::GeneralNamesPtr gens(GENERAL_NAMES_new());
  if (gens == nullptr) return Internal("allocate subjectAltName");
  for (const std::string& name : names) {
    absl::StatusOr<ossl::GeneralNamePtr> gen = SanEntry(name);
    if (!gen.ok()) return gen.status();
    if (sk_GENERAL_NAME_push(gens.get(), gen->get()) == 0) return Internal("add a SAN");
    gen->release();  // owned by gens now
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, gens.get(), 0, X509V3_ADD_DEFAULT) != 1) {
    return Internal("add subjectAltName");
  }
  return absl::OkStatus();
}

absl::Status AddExtensions(X509* cert, X509* issuer, const CertSpec& spec) {
  const std::pair<int, const char*> common[] = {
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
      {NID_basic_constraints, spec.is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE"},
      {NID_key_usage, spec.is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"},
  };
  for (const auto& [nid, value] : common) {
    if (absl::Status s = AddExtension(cert, issuer, nid, value); !s.ok()) return s;
  }
  if (spec.extended_usage != nullptr) {
    absl::Status s = AddExtension(cert, issuer, NID_ext_key_usage, spec.extended_usage);
    if (!s.ok()) return s;
  }
  return AddSubjectAltNames(cert, spec.names);
}

// A certificate for `subject_key` signed by `signing_key`; `issuer` null makes it self-signed.
absl::StatusOr<ossl::X509Ptr> MakeCert(const CertSpec& spec, EVP_PKEY* subject_key, X509* issuer,
                                       EVP_PKEY* signing_key) {
  ossl::X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      X509_set_pubkey(cert.get(), subject_key) != 1) {
    return Internal("start a certificate");
  }
  for (absl::Status s :
       {SetSerial(cert.get()), SetSubject(cert.get(), spec), SetValidity(cert.get(), spec)}) {
    if (!s.ok()) return s;
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1) {
    return Internal("set the issuer");
  }
  if (absl::Status s = AddExtensions(cert.get(), signer, spec); !s.ok()) return s;
  if (X509_sign(cert.get(), signing_key, EVP_sha256()) <= 0) return Internal("sign certificate");
  return cert;
}

// The one `nid` entry of `name`; "" when there is none or more than one (a subject with two OUs
// has no role).
std::string NameField(X509_NAME* name, int nid) {
  const int i = X509_NAME_get_index_by_NID(name, nid, -1);
  if (i < 0 || X509_NAME_get_index_by_NID(name, nid, i) >= 0) return "";
  unsigned char* utf8 = nullptr;
  const int len =
      ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
  if (len < 0) return "";
  std::unique_ptr<unsigned char, ossl::OpensslFree> owned(utf8);
  return std::string(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
}

// The id in the certificate's token binding (a URI SAN kTokenUriPrefix + ID); "" when it has none.
// Several bindings set `*several` (trust::RevocationList refuses such a certificate).
std::string BoundToken(X509* cert, bool* several) {
  ossl::GeneralNamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  std::string out;
  *several = false;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* gen = sk_GENERAL_NAME_value(names.get(), i);
    if (gen->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = gen->d.uniformResourceIdentifier;
    std::string text(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                     static_cast<size_t>(ASN1_STRING_length(uri)));
    if (!absl::StartsWith(text, kTokenUriPrefix)) continue;
    if (!out.empty()) *several = true;
    out = text.substr(std::string_view(kTokenUriPrefix).size());
  }
  return out;
}

absl::StatusOr<int64_t> UnixTime(const ASN1_TIME* t) {
  struct tm tm;
  std::memset(&tm, 0, sizeof tm);
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return Internal("read a certificate time");
  return static_cast<int64_t>(timegm(&tm));
}

absl::StatusOr<std::string> SerialHex(X509* cert) {
  ossl::BnPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (bn == nullptr) return Internal("read the serial number");
  std::unique_ptr<char, ossl::OpensslFree> hex(BN_bn2hex(bn.get()));
  if (hex == nullptr) return Internal("print the serial number");
  return absl::AsciiStrToLower(hex.get());
}

absl::StatusOr<Issued> IssuedOf(X509* cert) {
  Issued out;
  absl::StatusOr<std::string> pem = ossl::CertPem(cert);
  absl::StatusOr<std::string> serial = SerialHex(cert);
  absl::StatusOr<int64_t> nb = UnixTime(X509_get0_notBefore(cert));
  absl::StatusOr<int64_t> na = UnixTime(X509_get0_notAfter(cert));
  for (const absl::Status& s : {pem.status(), serial.status(), nb.status(), na.status()}) {
    if (!s.ok()) return s;
  }
  return Issued{*std::move(pem), *std::move(serial), *nb, *na};
}

absl::StatusOr<Issued> IssueLeaf(EVP_PKEY* ca_key, X509* ca_cert, const std::string& public_key_pem,
                                 const CertSpec& spec) {
  absl::StatusOr<ossl::PkeyPtr> subject = ossl::ReadPublicKey(public_key_pem, "the public key");
  if (!subject.ok()) return subject.status();
  absl::StatusOr<ossl::X509Ptr> cert = MakeCert(spec, subject->get(), ca_cert, ca_key);
  if (!cert.ok()) return cert.status();
  return IssuedOf(cert->get());
}

// A fresh CA: key, self-signed certificate, both PEMs.
struct NewCa {
  ossl::PkeyPtr key;
  ossl::X509Ptr cert;
  std::string key_pem, cert_pem;
};

absl::StatusOr<NewCa> MakeCa(int64_t now) {
  absl::StatusOr<ossl::PkeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> pin = ossl::PinOf(key->get());
  if (!pin.ok()) return pin.status();
  CertSpec spec{.common_name = absl::StrCat("idlepool CA ", pin->substr(0, 12)),
                .unit = "ca",
                .not_before = now - kBackdateSeconds,
                .not_after = now + kCaValiditySeconds,
                .is_ca = true};
  absl::StatusOr<ossl::X509Ptr> cert = MakeCert(spec, key->get(), nullptr, key->get());
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key_pem = PrivateKeyPem(key->get());
  absl::StatusOr<std::string> cert_pem = ossl::CertPem(cert->get());
  if (!key_pem.ok()) return key_pem.status();
  if (!cert_pem.ok()) return cert_pem.status();
  return NewCa{*std::move(key), *std::move(cert), *std::move(key_pem), *std::move(cert_pem)};
}

// Parses a loaded CA; anything wrong with it is kDataLoss naming the file.
absl::StatusOr<NewCa> ParseCa(const CaFiles& files, const std::string& key_pem,
                              const std::string& cert_pem) {
  absl::StatusOr<ossl::PkeyPtr> key = ossl::ReadPrivateKey(key_pem, files.key_path);
  if (!key.ok()) return absl::DataLossError(key.status().message());
  absl::StatusOr<ossl::X509Ptr> cert = ossl::ReadCert(cert_pem, files.cert_path);
  if (!cert.ok()) return absl::DataLossError(cert.status().message());
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return absl::DataLossError(
        absl::StrCat(files.cert_path, " does not match the key in ", files.key_path));
  }
  if ((X509_get_extension_flags(cert->get()) & EXFLAG_CA) == 0) {
    return absl::DataLossError(absl::StrCat(files.cert_path, " is not a CA certificate"));
  }
  return NewCa{*std::move(key), *std::move(cert), key_pem, cert_pem};
}

absl::StatusOr<NewCa> LoadOrMakeCa(const CaFiles& files, int64_t now, bool* created) {
  absl::StatusOr<bool> key_exists = FileExists(files.key_path);
  if (!key_exists.ok()) return key_exists.status();
  absl::StatusOr<bool> cert_exists = FileExists(files.cert_path);
  if (!cert_exists.ok()) return cert_exists.status();
  if (*key_exists != *cert_exists) {
    return absl::DataLossError(absl::StrCat(*key_exists ? files.key_path : files.cert_path,
                                            " exists without ",
                                            *key_exists ? files.cert_path : files.key_path,
                                            "; restore it, or remove both to make a new CA"));
  }
  if (created != nullptr) *created = !*key_exists;
  if (*key_exists) {
    absl::StatusOr<std::string> key_pem = ReadCaFile(files.key_path);
    if (!key_pem.ok()) return key_pem.status();
    absl::StatusOr<std::string> cert_pem = ReadCaFile(files.cert_path);
    if (!cert_pem.ok()) return cert_pem.status();
    return ParseCa(files, *key_pem, *cert_pem);
  }
  absl::StatusOr<NewCa> ca = MakeCa(now);
  if (!ca.ok()) return ca.status();
  if (absl::Status s = WriteCaFiles(files, ca->key_pem, ca->cert_pem); !s.ok()) return s;
  return ca;
}

// `what`: "worker" or "gateway", for the message.
absl::Status CheckName(const std::string& name, const char* what = "worker") {
  if (name.empty() || name.size() > kMaxCommonNameBytes || !text::IsPrintableUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", what, " name must be 1 to ", kMaxCommonNameBytes, " bytes of printable UTF-8"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> NewPrivateKeyPem() {
  absl::StatusOr<ossl::PkeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  return PrivateKeyPem(key->get());
}

absl::StatusOr<std::string> PublicKeyPemOf(const std::string& private_key_pem) {
  absl::StatusOr<ossl::PkeyPtr> key = ossl::ReadPrivateKey(private_key_pem, "the private key");
  if (!key.ok()) return key.status();
  ossl::BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_PUBKEY(bio.get(), key->get()) != 1) {
    return Internal("write public key PEM");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

absl::StatusOr<std::string> PublicKeyPin(const std::string& public_key_pem) {
  absl::StatusOr<ossl::PkeyPtr> key = absl::StrContains(public_key_pem, "PRIVATE KEY-----")
                                          ? ossl::ReadPrivateKey(public_key_pem, "the key")
                                          : ossl::ReadPublicKey(public_key_pem, "the public key");
  if (!key.ok()) return key.status();
  return ossl::PinOf(key->get());
}

absl::StatusOr<std::string> CertPin(const std::string& cert_pem) {
  absl::StatusOr<ossl::X509Ptr> cert = ossl::ReadCert(cert_pem, "the certificate");
  if (!cert.ok()) return cert.status();
  return ossl::PinOf(X509_get0_pubkey(cert->get()));
}

absl::StatusOr<CertInfo> InspectCertificate(const std::string& cert_pem) {
  absl::StatusOr<ossl::X509Ptr> cert = ossl::ReadCert(cert_pem, "the certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<Issued> issued = IssuedOf(cert->get());
  if (!issued.ok()) return issued.status();
  X509_NAME* subject = X509_get_subject_name(cert->get());
  CertInfo info;
  info.common_name = NameField(subject, NID_commonName);
  info.role = NameField(subject, NID_organizationalUnitName);
  info.serial_hex = issued->serial_hex;
  info.not_before = issued->not_before;
  info.not_after = issued->not_after;
  bool several = false;
  info.token_id = BoundToken(cert->get(), &several);
  if (several) info.token_id = kSeveralTokens;
  return info;
}

CertificateAuthority::CertificateAuthority(std::unique_ptr<Key> key, std::string cert_pem,
                                           std::string pin)
    : key_(std::move(key)), cert_pem_(std::move(cert_pem)), pin_(std::move(pin)) {}

CertificateAuthority::~CertificateAuthority() = default;

absl::StatusOr<std::unique_ptr<CertificateAuthority>> CertificateAuthority::LoadOrCreate(
    const std::string& dir, int64_t now, bool* created) {
  absl::StatusOr<NewCa> ca = LoadOrMakeCa(CaFilesIn(dir), now, created);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> pin = ossl::PinOf(ca->key.get());
  if (!pin.ok()) return pin.status();
  auto key = std::make_unique<Key>(Key{std::move(ca->key), std::move(ca->cert)});
  return std::unique_ptr<CertificateAuthority>(
      new CertificateAuthority(std::move(key), std::move(ca->cert_pem), *std::move(pin)));
}

absl::StatusOr<Issued> CertificateAuthority::IssueServer(const std::string& public_key_pem,
                                                         const std::vector<std::string>& names,
                                                         int64_t now) const {
  CertSpec spec{.common_name = "idlepool coordinator",
                .unit = "coordinator",
                .not_before = now - kBackdateSeconds,
                .not_after = now + kServerValiditySeconds,
                .extended_usage = "serverAuth",
                .names = names};
  return IssueLeaf(key_->pkey.get(), key_->cert.get(), public_key_pem, spec);
}

absl::StatusOr<Issued> CertificateAuthority::IssueWorker(const std::string& public_key_pem,
                                                         const std::string& name, int64_t now,
                                                         int64_t validity) const {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  if (validity <= 0) return absl::InvalidArgumentError("a certificate's validity must be > 0");
  // A worker renews at two thirds of not_after - not_before: the backdate stays a small part of
  // that span, else a short-lived certificate would be due for renewal as soon as issued.
  CertSpec spec{.common_name = name,
                .unit = "worker",
                .not_before = now - std::min(kBackdateSeconds, validity / 10),
                .not_after = now + validity,
                .extended_usage = "serverAuth,clientAuth",
                .names = {kWorkerSanName}};
  return IssueLeaf(key_->pkey.get(), key_->cert.get(), public_key_pem, spec);
}

absl::StatusOr<Issued> CertificateAuthority::IssueGateway(const std::string& public_key_pem,
                                                          const std::string& name, int64_t now,
                                                          int64_t validity,
                                                          const std::string& token_id) const {
  if (absl::Status s = CheckName(name, "gateway"); !s.ok()) return s;
  if (validity <= 0) return absl::InvalidArgumentError("a certificate's validity must be > 0");
  if (!token_id.empty() && !IsDnsName(token_id)) {
    return absl::InvalidArgumentError("a token id is letters, digits, '-', '.' and '_'");
  }
  CertSpec spec{.common_name = name,
                .unit = "gateway",
                .not_before = now - std::min(kBackdateSeconds, validity / 10),
                .not_after = now + validity,
                .extended_usage = "clientAuth"};
  if (!token_id.empty()) spec.names.push_back(absl::StrCat(kTokenUriPrefix, token_id));
  return IssueLeaf(key_->pkey.get(), key_->cert.get(), public_key_pem, spec);
}

absl::Status CertificateAuthority::Verify(const std::string& cert_pem, int64_t now) const {
  absl::StatusOr<ossl::X509Ptr> cert = ossl::ReadCert(cert_pem, "the certificate");
  if (!cert.ok()) return cert.status();
  absl::Status s = ossl::VerifyAgainst(cert->get(), key_->cert.get(), now);
  if (s.ok()) return s;
  return absl::PermissionDeniedError(absl::StrCat("not a valid certificate of this pool (CA ",
                                                  pin_.substr(0, 12), "): ", s.message()));
}

}  // namespace idlepool::trust
