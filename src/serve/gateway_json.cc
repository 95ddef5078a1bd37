#include "serve/gateway_json.h"

#include <cmath>
#include <cstdlib>

namespace idlepool::serve {

namespace {

using Kind = TopLevelModel::Kind;

class Scanner {
 public:
  explicit Scanner(std::string_view s)
      : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}

  bool SkipBom() {
    if (p_ == end_ || *p_ != 0xEF) return true;
    if (end_ - p_ < 3 || p_[1] != 0xBB || p_[2] != 0xBF) return false;
    p_ += 3;
    return true;
  }
  void Ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool At(unsigned char c) const { return p_ != end_ && *p_ == c; }
  bool AtEnd() const { return p_ == end_; }
  unsigned char Peek() const { return *p_; }
  void Skip() { ++p_; }

  // At '"': the string, its escapes decoded into `out` when not null.
  bool String(std::string* out) {
    ++p_;
    const unsigned char* run = p_;
    for (;;) {
      if (p_ == end_) return false;
      unsigned char c = *p_;
      if (c == '"') {
        if (out) out->append(run, p_);
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (out) out->append(run, p_);
        ++p_;
        if (!Escape(out)) return false;
        run = p_;
      } else if (c < 0x80) {
        ++p_;
      } else if (!Utf8()) {
        return false;
      }
    }
  }

  // At '-' or a digit: a number of the JSON grammar, finite as a double.
  bool Number() {
    const unsigned char* start = p_;
    if (At('-')) ++p_;
    if (At('0')) {
      ++p_;
    } else if (!Digits()) {
      return false;
    }
    bool fraction_or_exponent = false;
    if (At('.')) {
      ++p_;
      if (!Digits()) return false;
      fraction_or_exponent = true;
    }
    if (At('e') || At('E')) {
      ++p_;
      if (At('+') || At('-')) ++p_;
      if (!Digits()) return false;
      fraction_or_exponent = true;
    }
    // Any integer of up to 300 digits is finite as a double; past that, or with a fraction or
    // an exponent, strtod says (as nlohmann, which refuses an infinite result).
    if (!fraction_or_exponent && p_ - start <= 300) return true;
    std::string token(start, p_);
    return std::isfinite(std::strtod(token.c_str(), nullptr));
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size()) return false;
    for (char c : word) {
      if (*p_++ != static_cast<unsigned char>(c)) return false;
    }
    return true;
  }

 private:
  bool Digits() {
    const unsigned char* start = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != start;
  }

  static bool In(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

  // At a byte >= 0x80: one well-formed UTF-8 sequence (RFC 3629: no overlong form, surrogate
  // or code point past U+10FFFF).
  bool Utf8() {
    unsigned char c = *p_;
    unsigned char lo = 0x80, hi = 0xBF;
    int more = 0;
    if (In(c, 0xC2, 0xDF)) {
      more = 1;
    } else if (In(c, 0xE0, 0xEF)) {
      more = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (In(c, 0xF0, 0xF4)) {
      more = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (end_ - p_ <= more) return false;
    if (!In(p_[1], lo, hi)) return false;
    for (int i = 2; i <= more; ++i) {
      if (!In(p_[i], 0x80, 0xBF)) return false;
    }
    p_ += more + 1;
    return true;
  }

  bool Hex4(unsigned& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      unsigned char c = *p_++;
      unsigned d;
      if (In(c, '0', '9')) {
        d = c - '0';
      } else if (In(c, 'a', 'f')) {
        d = c - 'a' + 10;
      } else if (In(c, 'A', 'F')) {
        d = c - 'A' + 10;
      } else {
        return false;
      }
      v = v * 16 + d;
    }
    return true;
  }

  // After a backslash.
  bool Escape(std::string* out) {
    if (p_ == end_) return false;
    char plain = 0;
    switch (*p_++) {
      case '"':
        plain = '"';
        break;
      case '\\':
        plain = '\\';
        break;
      case '/':
        plain = '/';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u':
        return CodePoint(out);
      default:
        return false;
    }
    if (out) out->push_back(plain);
    return true;
  }

  // After "\u".
  bool CodePoint(std::string* out) {
    unsigned cp;
    if (!Hex4(cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      unsigned low;
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      if (!Hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (out) AppendUtf8(*out, cp);
    return true;
  }

  static void AppendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

// One pass; `open` holds '{' or '[' per container not yet closed.
class TopLevel {
 public:
  explicit TopLevel(std::string_view body) : s_(body) {}

  TopLevelModel Run() {
    TopLevelModel r;
    if (!s_.SkipBom() || !Document(r)) {
      r = TopLevelModel{};
      return r;
    }
    if (!top_object_) r.kind = Kind::kNotObject;
    if (r.kind != Kind::kString) r.model.clear();
    return r;
  }

 private:
  enum class Step { kFail, kValue, kOpened };  // kOpened: a container whose first value comes next

  bool Document(TopLevelModel& r) {
    r.kind = Kind::kAbsent;
    s_.Ws();
    for (bool first = true;; first = false) {
      Step step = Value(r, first);
      if (step == Step::kFail) return false;
      if (step == Step::kOpened) continue;  // a loop, not recursion: nesting costs no stack
      if (!AfterValue()) return false;
      if (open_.empty()) return s_.AtEnd() || s_.Peek() == 0;  // nlohmann: NUL ends the input
    }
  }

  // A value, or the opening of a container (and its first key, for an object); an empty
  // container is a value (AfterValue closes it).
  Step Value(TopLevelModel& r, bool first) {
    if (s_.AtEnd()) return Step::kFail;
    bool is_model = expect_model_;
    expect_model_ = false;
    unsigned char c = s_.Peek();
    bool ok = false;
    if (c == '"') {
      if (!is_model) return s_.String(nullptr) ? Step::kValue : Step::kFail;
      r.model.clear();
      r.kind = Kind::kString;
      return s_.String(&r.model) ? Step::kValue : Step::kFail;
    }
    if (is_model) r.kind = Kind::kNotString;
    if (c == '{' || c == '[') {
      if (first) top_object_ = c == '{';
      s_.Skip();
      open_.push_back(static_cast<char>(c));
      s_.Ws();
      if (s_.At(c == '{' ? '}' : ']')) return Step::kValue;
      if (c == '[') return Step::kOpened;
      return Key() ? Step::kOpened : Step::kFail;
    }
    if (c == 't') {
      ok = s_.Literal("true");
    } else if (c == 'f') {
      ok = s_.Literal("false");
    } else if (c == 'n') {
      ok = s_.Literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      ok = s_.Number();
    }
    return ok ? Step::kValue : Step::kFail;
  }

  // At '"' of an object's key: the key, ':' and the whitespace before its value.
  bool Key() {
    if (!s_.At('"')) return false;
    if (open_.size() == 1) {
      key_.clear();
      if (!s_.String(&key_)) return false;
      expect_model_ = key_ == "model";
    } else if (!s_.String(nullptr)) {
      return false;
    }
    s_.Ws();
    if (!s_.At(':')) return false;
    s_.Skip();
    s_.Ws();
    return true;
  }

  // After a value (or an empty container's opening): closings, then ',' and what follows it
  // (a key, or whitespace before the next value); ends at the next value or the document's end.
  bool AfterValue() {
    for (;;) {
      s_.Ws();
      if (open_.empty()) return true;
      char container = open_.back();
      if (s_.At(container == '{' ? '}' : ']')) {
        s_.Skip();
        open_.pop_back();
        continue;
      }
      if (!s_.At(',')) return false;
      s_.Skip();
      s_.Ws();
      return container == '{' ? Key() : true;
    }
  }

  Scanner s_;
  std::string open_;
  std::string key_;
  bool top_object_ = false;
  bool expect_model_ = false;
};

}  // namespace

TopLevelModel ScanTopLevelModel(std::string_view body) { return TopLevel(body).Run(); }

}  // namespace idlepool::serve
