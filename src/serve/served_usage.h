// What the gateway served, by user: requests answered by a replica and the tokens the answers
// report, kept until the gateway's owner takes them (the coordinator adds them to its usage by
// day), plus running totals by user for the gateway's metrics.
//
// Tokens: an OpenAI-style answer reports its own in a `usage` object, at its end (a completion,
// an embedding) or in the last event of a stream (`stream_options.include_usage`). UsageTail keeps
// the last kTail bytes of an answer's body as it passes and reads `total_tokens` (else
// `prompt_tokens` + `completion_tokens`) from the last `usage` object in it; an answer without
// one counts 0 tokens (an http service, a stream without include_usage).
//
// Pure: no clock, I/O or threads. One thread (the gateway's io thread). Memory: one entry per
// (user, worker) since the last Take, one per user for the totals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idlepool::serve {

class UsageTail {
 public:
  static constexpr size_t kTail = 4096;
  void Add(std::string_view piece);
  // The tokens of the last `usage` object seen in the tail; 0 when none.
  uint64_t Tokens() const;

 private:
  std::string tail_;
};

struct ServedCount {
  std::string user;
  std::string worker;  // the replica's worker when it is reached through a tunnel; else ""
  uint64_t requests = 0;
  uint64_t tokens = 0;
  bool operator==(const ServedCount&) const = default;
};

struct UserServed {
  uint64_t requests = 0, tokens = 0;
  uint64_t refused = 0;  // answered 429: over the key's rate or concurrency
};

class ServedUsage {
 public:
  void Served(const std::string& user, const std::string& worker, uint64_t tokens);
  void Refused(const std::string& user) { ++totals_[user].refused; }
  // What was served since the last Take, by (user, worker); empties it.
  std::vector<ServedCount> Take();
  // Since the gateway started, by user.
  const std::map<std::string, UserServed>& totals() const { return totals_; }

 private:
  std::map<std::pair<std::string, std::string>, ServedCount> pending_;
  std::map<std::string, UserServed> totals_;
};

}  // namespace idlepool::serve
