#include "serve/served_usage.h"

#include <cctype>
#include <optional>

namespace idlepool::serve {
namespace {

// The number after `"name"` and a colon, searched from `from` to the end of `text`.
std::optional<uint64_t> NumberAfter(std::string_view text, std::string_view name, size_t from) {
  const std::string quoted = "\"" + std::string(name) + "\"";
  size_t at = text.find(quoted, from);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + quoted.size();
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i >= text.size() || text[i] != ':') return std::nullopt;
  ++i;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  uint64_t n = 0;
  size_t digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && digits < 15;
       ++i, ++digits) {
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  return n;
}

}  // namespace

void UsageTail::Add(std::string_view piece) {
  if (piece.size() >= kTail) {
    tail_.assign(piece.substr(piece.size() - kTail));
    return;
  }
  if (tail_.size() + piece.size() > kTail) tail_.erase(0, tail_.size() + piece.size() - kTail);
  tail_.append(piece);
}

uint64_t UsageTail::Tokens() const {
  const size_t usage = tail_.rfind("\"usage\"");
  if (usage == std::string::npos) return 0;
  if (auto total = NumberAfter(tail_, "total_tokens", usage)) return *total;
  const uint64_t prompt = NumberAfter(tail_, "prompt_tokens", usage).value_or(0);
  return prompt + NumberAfter(tail_, "completion_tokens", usage).value_or(0);
}

void ServedUsage::Served(const std::string& user, const std::string& worker, uint64_t tokens) {
  ServedCount& c = pending_[{user, worker}];
  if (c.requests == 0) c.user = user, c.worker = worker;
  ++c.requests;
  c.tokens += tokens;
  UserServed& t = totals_[user];
  ++t.requests;
  t.tokens += tokens;
}

std::vector<ServedCount> ServedUsage::Take() {
  std::vector<ServedCount> out;
  out.reserve(pending_.size());
  for (auto& [key, count] : pending_) out.push_back(std::move(count));
  pending_.clear();
  return out;
}

}  // namespace idlepool::serve
