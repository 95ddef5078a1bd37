// The frame-spec corpus (../shared/data/framespecs.tsv) is the test of record for the frame
// grammar: every row is its own test case. Each row is also chunked with several chunk sizes,
// and the chunks are checked against ParseFrames and against the terms of the spec.

#include <cstdint>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/spec.h"

namespace idlepool::spec {
namespace {

using ::testing::StartsWith;

struct CorpusRow {
  int line = 0;
  std::string spec;
  std::string expected;  // comma list, or "ERROR"
};

// Names a row in failure messages instead of dumping its bytes.
void PrintTo(const CorpusRow& row, std::ostream* os) {
  *os << "line " << row.line << ": '" << row.spec << "'";
}

std::string CorpusPath() { return std::string(IDLEPOOL_SHARED_DATA) + "/framespecs.tsv"; }

// Loaded before tests are registered: one parameterized test per row. An absent file gives no
// rows; FramesCorpus.FileIsPresentAndComplete then says so (and the row suite is allowed to be
// empty).
std::vector<CorpusRow> LoadCorpus(bool* present = nullptr) {
  std::ifstream in(CorpusPath(), std::ios::binary);
  if (present != nullptr) *present = static_cast<bool>(in);
  std::vector<CorpusRow> rows;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    CorpusRow row;
    row.line = line_no;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      row.spec = line;
      row.expected = "<malformed row: no tab>";
    } else {
      row.spec = line.substr(0, tab);
      row.expected = line.substr(tab + 1);
    }
    rows.push_back(row);
  }
  return rows;
}

TEST(FramesCorpus, FileIsPresentAndComplete) {
  bool present = false;
  const std::vector<CorpusRow> rows = LoadCorpus(&present);
  if (!present) {
    GTEST_SKIP() << "frame-spec corpus not found at " << CorpusPath()
                 << " (it lives outside the repository, in ../shared/data); skipping the corpus";
  }
  // The corpus has both kinds of row, including the one whose spec is the empty string.
  int errors = 0;
  bool has_empty_spec = false;
  for (const CorpusRow& r : rows) {
    if (r.expected == "ERROR") ++errors;
    if (r.spec.empty()) has_empty_spec = true;
  }
  EXPECT_GE(rows.size(), 20u);
  EXPECT_GT(errors, 0);
  EXPECT_LT(errors, static_cast<int>(rows.size()));
  EXPECT_TRUE(has_empty_spec);
}

class FramesCorpusRow : public ::testing::TestWithParam<CorpusRow> {};

// For each frame of the spec, in order, the index of the first term that lists it, computed by
// parsing the terms one at a time: an independent account of which term each frame comes from.
std::vector<std::pair<int64_t, size_t>> FramesByTerm(const std::string& spec) {
  std::vector<std::pair<int64_t, size_t>> out;
  std::set<int64_t> seen;
  size_t term_index = 0;
  for (const std::string& term : std::vector<std::string>(absl::StrSplit(spec, ','))) {
    const absl::StatusOr<std::vector<int64_t>> frames = ParseFrames(term);
    if (frames.ok()) {
      for (int64_t f : *frames) {
        if (seen.insert(f).second) out.emplace_back(f, term_index);
      }
    }
    ++term_index;
  }
  return out;
}

TEST_P(FramesCorpusRow, Expands) {
  const CorpusRow& row = GetParam();
  SCOPED_TRACE("framespecs.tsv line " + std::to_string(row.line) + ": '" + row.spec + "'");
  const absl::StatusOr<std::vector<int64_t>> frames = ParseFrames(row.spec);
  if (row.expected == "ERROR") {
    ASSERT_FALSE(frames.ok()) << "expected an error, got " << JoinFrames(*frames);
    EXPECT_EQ(frames.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(frames.status().message()),
                StartsWith("frame spec '" + row.spec + "'"));
    return;
  }
  ASSERT_TRUE(frames.ok()) << frames.status();
  EXPECT_EQ(JoinFrames(*frames), row.expected);
}

TEST_P(FramesCorpusRow, ChunksAreArithmeticRunsOfOneTermCoveringTheFramesInOrder) {
  const CorpusRow& row = GetParam();
  SCOPED_TRACE("framespecs.tsv line " + std::to_string(row.line) + ": '" + row.spec + "'");
  if (row.expected == "ERROR") {
    for (uint32_t chunk : {1u, 2u, 3u, 4u, 7u, 10u}) {
      const absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames(row.spec, chunk);
      ASSERT_FALSE(chunks.ok()) << "chunk " << chunk << ": expected an error";
      EXPECT_EQ(chunks.status().code(), absl::StatusCode::kInvalidArgument);
    }
    return;
  }
  const absl::StatusOr<std::vector<int64_t>> frames = ParseFrames(row.spec);
  ASSERT_TRUE(frames.ok()) << frames.status();
  std::vector<size_t> owners;
  std::vector<int64_t> by_terms;
  for (const auto& [frame, term] : FramesByTerm(row.spec)) {
    by_terms.push_back(frame);
    owners.push_back(term);
  }
  ASSERT_EQ(by_terms, *frames) << "the terms parsed one by one disagree with the whole spec";

  for (uint32_t chunk : {1u, 2u, 3u, 4u, 7u, 10u}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const absl::StatusOr<std::vector<FrameChunk>> chunks = ChunkFrames(row.spec, chunk);
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    std::vector<int64_t> joined;
    for (const FrameChunk& c : *chunks) {
      ASSERT_FALSE(c.frames.empty());
      EXPECT_LE(c.frames.size(), chunk);
      EXPECT_EQ(c.start, c.frames.front());
      EXPECT_EQ(c.end, c.frames.back());
      EXPECT_NE(c.step, 0);
      if (c.frames.size() == 1) {
        EXPECT_EQ(c.step, 1);
      }
      for (size_t i = 0; i < c.frames.size(); ++i) {
        EXPECT_EQ(c.frames[i], c.start + static_cast<int64_t>(i) * c.step)
            << "chunk " << c.start << ".." << c.end << " step " << c.step << " is not one run";
      }
      const size_t first = joined.size();
      joined.insert(joined.end(), c.frames.begin(), c.frames.end());
      for (size_t i = first; i < joined.size() && i < owners.size(); ++i) {
        EXPECT_EQ(owners[i], owners[first])
            << "chunk " << c.start << ".." << c.end << " mixes terms of the spec";
      }
    }
    EXPECT_EQ(joined, *frames) << "the chunks do not cover the frames exactly, in order";

    // TaskCount must agree with the chunks without expanding them.
    JobSpec job;
    job.kind = TaskKind::kFrames;
    job.frames = row.spec;
    job.chunk = chunk;
    const absl::StatusOr<uint64_t> n = TaskCount(job);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, chunks->size());
  }
}

std::string RowName(const ::testing::TestParamInfo<CorpusRow>& info) {
  return "line_" + std::to_string(info.param.line);
}

INSTANTIATE_TEST_SUITE_P(FramesCorpus, FramesCorpusRow, ::testing::ValuesIn(LoadCorpus()), RowName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FramesCorpusRow);

}  // namespace
}  // namespace idlepool::spec
