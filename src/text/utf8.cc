// Strict UTF-8 checks (RFC 3629): what protobuf accepts in a proto3 `string` field.

#include "text/utf8.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/unicode_internal.h"

namespace idlepool::text {
namespace internal {
namespace {
bool Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

size_t SequenceAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80;  // allowed range of the second byte
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (c == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below U+10000
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (!Continuation(b(k))) return 0;
  }
  return len;
}

uint32_t CodePoint(std::string_view s, size_t i, size_t n) {
  const auto b = [&](size_t k) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k]));
  };
  if (n == 1) return b(0);
  if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

}  // namespace internal

namespace {
using internal::CodePoint;
using internal::SequenceAt;

bool Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// What a terminal would act on rather than show: controls, and the bidi controls that reorder
// the rest of the line.
bool Steers(uint32_t c) { return internal::IsControl(c) || internal::IsBidiControl(c); }

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string TruncateUtf8(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  for (size_t i = 0; i < s.size();) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) {  // one invalid byte becomes one '?'
      if (out.size() + 1 > max_bytes) break;
      out.push_back('?');
      ++i;
      continue;
    }
    if (out.size() + n > max_bytes) break;
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

bool IsPrintableUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = SequenceAt(s, i);
    if (n == 0 || Steers(CodePoint(s, i, n))) return false;
    i += n;
  }
  return true;
}

std::string PrintableText(std::string_view s, bool keep_newlines) {
  if (IsPrintableUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = SequenceAt(s, i);
    if (n == 0) {
      out.push_back('?');
      ++i;
      continue;
    }
    const uint32_t c = CodePoint(s, i, n);
    if (keep_newlines && c == '\n') {
      out.push_back('\n');
    } else if (keep_newlines && c == '\t') {
      out.push_back(' ');
    } else if (Steers(c)) {
      out.push_back('?');
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string TailUtf8(std::string_view s, size_t max_bytes) {
  size_t start = s.size() > max_bytes ? s.size() - max_bytes : 0;
  while (start > 0 && start < s.size() && Continuation(static_cast<unsigned char>(s[start]))) {
    ++start;
  }
  return TruncateUtf8(s.substr(start), max_bytes);
}

}  // namespace idlepool::text
