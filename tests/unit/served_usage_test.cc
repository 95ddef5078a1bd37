// serve::UsageTail and serve::ServedUsage: the tokens an answer reports, read from the end of its
// body however it arrives in pieces, and what was served, by user and worker.
#include "serve/served_usage.h"

#include <string>

#include "gtest/gtest.h"

namespace idlepool::serve {
namespace {

uint64_t TokensOf(const std::string& body, size_t piece) {
  UsageTail tail;
  for (size_t i = 0; i < body.size(); i += piece) tail.Add(std::string_view(body).substr(i, piece));
  return tail.Tokens();
}

TEST(UsageTail, ReadsTotalTokensOfACompletionInAnyPieces) {
  const std::string body =
      R"({"id":"c1","choices":[{"message":{"content":"hi"}}],)"
      R"("usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}})";
  for (size_t piece : {1, 3, 17, 4096}) EXPECT_EQ(TokensOf(body, piece), 12u) << piece;
}

TEST(UsageTail, ReadsTheLastEventOfAStreamAndSumsWithoutTotal) {
  std::string stream;
  for (int i = 0; i < 500; ++i) {
    stream += R"(data: {"choices":[{"delta":{"content":"tok"}}]})"
              "\n\n";
  }
  stream += R"(data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":500}})"
            "\n\ndata: [DONE]\n\n";
  EXPECT_EQ(TokensOf(stream, 64), 503u);
}

TEST(UsageTail, CountsNothingWithoutAUsageObject) {
  EXPECT_EQ(TokensOf(R"({"choices":[{"text":"total_tokens: 9"}]})", 5), 0u);
  EXPECT_EQ(TokensOf("", 1), 0u);
  EXPECT_EQ(TokensOf(R"({"usage":{"total_tokens":"x"}})", 2), 0u);
  // A usage object far before the end (past the tail) is not seen: 0, never a wrong figure.
  EXPECT_EQ(
      TokensOf(R"({"usage":{"total_tokens":4},"pad":")" + std::string(5000, 'x') + "\"}", 100), 0u);
}

TEST(ServedUsage, SumsByUserAndWorkerUntilTakenAndKeepsTotals) {
  ServedUsage u;
  u.Served("alice", "w1", 10);
  u.Served("alice", "w1", 5);
  u.Served("alice", "w2", 1);
  u.Served("bob", "", 0);
  u.Refused("bob");
  std::vector<ServedCount> taken = u.Take();
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0], (ServedCount{"alice", "w1", 2, 15}));
  EXPECT_EQ(taken[1], (ServedCount{"alice", "w2", 1, 1}));
  EXPECT_EQ(taken[2], (ServedCount{"bob", "", 1, 0}));
  EXPECT_TRUE(u.Take().empty());
  EXPECT_EQ(u.totals().at("alice").requests, 3u);
  EXPECT_EQ(u.totals().at("alice").tokens, 16u);
  EXPECT_EQ(u.totals().at("bob").refused, 1u);
}

}  // namespace
}  // namespace idlepool::serve
