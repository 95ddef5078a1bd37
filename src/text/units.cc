#include "text/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace idlepool::text {

absl::StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text.substr(0, 40),
        "' is not a size (bytes, or a number with K, M, G or T, all binary: 512M = 512Mi "
        "= 512MiB, 10G, 1.5GiB)"));
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string number = text.substr(0, i);
  std::string unit;
  for (char c : text.substr(i))
    unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    return bad();
  }
  int shift = -1;
  if (unit.empty() || unit == "b") shift = 0;
  const char* units = "kmgt";
  for (int k = 0; k < 4; ++k) {
    const std::string u(1, units[k]);
    if (unit == u || unit == u + "b" || unit == u + "i" || unit == u + "ib") shift = 10 * (k + 1);
  }
  if (shift < 0) return bad();
  const long double value = std::strtold(number.c_str(), nullptr) * std::ldexp(1.0L, shift);
  if (!(value >= 1) || value > std::ldexp(1.0L, 60)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text.substr(0, 40), "' is out of range (1 byte to 1 EiB)"));
  }
  if (shift == 0 && number.find('.') != std::string::npos) return bad();
  return static_cast<uint64_t>(std::llround(value));
}

absl::StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const std::string num = text.substr(0, i), unit = text.substr(i);
  int64_t per = 0;
  if (unit.empty() || unit == "s")
    per = 1000;
  else if (unit == "ms")
    per = 1;
  else if (unit == "m" || unit == "min")
    per = 60 * 1000;
  else if (unit == "h")
    per = 3600 * 1000;
  else if (unit == "d")
    per = 24 * 3600 * 1000;
  if (num.empty() || num.size() > 9 || per == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a duration (a whole number with ms, s, m, h or d: 500ms, 30s, 10m)"));
  }
  return std::chrono::milliseconds(std::stoll(num) * per);
}

absl::StatusOr<double> ParseRate(const std::string& text) {
  const size_t slash = text.find('/');
  const std::string num = text.substr(0, slash);
  const std::string unit = slash == std::string::npos ? "s" : text.substr(slash + 1);
  double per = 0;
  if (unit == "s") {
    per = 1;
  } else if (unit == "m" || unit == "min") {
    per = 60;
  } else if (unit == "h") {
    per = 3600;
  }
  const bool digits =
      !num.empty() && num.size() <= 12 &&
      std::all_of(num.begin(), num.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }) &&
      std::count(num.begin(), num.end(), '.') <= 1 && num != ".";
  if (!digits || per == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text.substr(0, 40), "' is not a rate (requests per s, m or h: 10/s, 30/m, 0.5/s)"));
  }
  return std::strtod(num.c_str(), nullptr) / per;
}

}  // namespace idlepool::text
