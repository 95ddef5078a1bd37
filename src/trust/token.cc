#include "trust/token.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "trust/ossl.h"

namespace idlepool::trust {
namespace {

constexpr absl::string_view kJoinPrefix = "ipj1_";
constexpr absl::string_view kAccessPrefix = "ipt1_";
constexpr size_t kPinChars = 64;
constexpr size_t kIdBytes = 6;
constexpr size_t kSecretBytes = 32;
constexpr size_t kSecretChars = 43;  // base64url of 32 bytes, unpadded

bool IsHex(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isxdigit(c)) return false;
  }
  return true;
}

bool IsBase64Url(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

std::string Base64Url(const unsigned char* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    acc = (acc << 8) | data[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

// A CSPRNG that fails cannot make a token; carrying on would hand out a guessable one.
void RandomOrDie(unsigned char* out, size_t n) {
  if (RAND_bytes(out, static_cast<int>(n)) != 1) {
    std::fputs("idlepool: OpenSSL RAND_bytes failed; cannot make a token\n", stderr);
    std::abort();
  }
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("not a valid idlepool token: ", what));
}

}  // namespace

// Messages name the part that is wrong and its length, never its text: any part may hold the
// secret when a separator is missing.
absl::StatusOr<TokenParts> ParseToken(std::string_view token) {
  absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(token.data(), token.size()));
  TokenParts parts;
  if (text.substr(0, kJoinPrefix.size()) == kJoinPrefix) {
    parts.kind = TokenKind::kJoin;
  } else if (text.substr(0, kAccessPrefix.size()) == kAccessPrefix) {
    parts.kind = TokenKind::kAccess;
  } else {
    return absl::InvalidArgumentError("not an idlepool token: it should start with ipj1_ or ipt1_");
  }
  text.remove_prefix(kJoinPrefix.size());
  const size_t underscore = text.find('_');
  const absl::string_view pin = text.substr(0, underscore);
  if (underscore == absl::string_view::npos || pin.size() != kPinChars || !IsHex(pin)) {
    return Bad(absl::StrCat("the CA pin should be ", kPinChars, " hex digits followed by '_'"));
  }
  text.remove_prefix(underscore + 1);
  const size_t dot = text.find('.');
  const absl::string_view id = text.substr(0, dot);
  if (dot == absl::string_view::npos || id.size() != 2 * kIdBytes || !IsHex(id)) {
    return Bad(
        absl::StrCat("the token id should be ", 2 * kIdBytes, " hex digits followed by '.'"));
  }
  const absl::string_view secret = text.substr(dot + 1);
  if (secret.size() != kSecretChars || !IsBase64Url(secret)) {
    return Bad(absl::StrCat("the secret should be ", kSecretChars,
                            " characters of base64url (it has ", secret.size(), ")"));
  }
  parts.pin = absl::AsciiStrToLower(pin);
  parts.id = absl::AsciiStrToLower(id);
  parts.secret = std::string(secret);
  return parts;
}

std::string FormatToken(const TokenParts& parts) {
  return absl::StrCat(parts.kind == TokenKind::kJoin ? kJoinPrefix : kAccessPrefix, parts.pin, "_",
                      parts.id, ".", parts.secret);
}

TokenParts NewToken(TokenKind kind, std::string pin) {
  unsigned char id[kIdBytes], secret[kSecretBytes];
  RandomOrDie(id, sizeof id);
  RandomOrDie(secret, sizeof secret);
  TokenParts parts{kind, std::move(pin), ossl::Hex(id, sizeof id),
                   Base64Url(secret, sizeof secret)};
  OPENSSL_cleanse(secret, sizeof secret);
  return parts;
}

std::string HashSecret(std::string_view secret) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest);
  return ossl::Hex(digest, sizeof digest);
}

bool SameHash(std::string_view a, std::string_view b) {
  // Lengths are public (always 64); only the contents are compared in constant time.
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace idlepool::trust
