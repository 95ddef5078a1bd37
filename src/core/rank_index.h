#pragma once
// Schedulable workers by rank (under the ranked policies), and per rank bin their slots and
// slots x rank in exact fixed point: the tail rule reads the bins above a rank instead of every
// worker, and walks the best-ranked workers first.
#include <array>
#include <cstdint>
#include <set>
#include <utility>

#include "core/types.h"

namespace idlepool::core {

class RankIndex {
 public:
  // What a worker added to its bin, to be taken out again as it was.
  struct Share {
    int bin = 0;
    int64_t weight = 0;  // slots x rank, fixed point
    uint32_t slots = 0;
  };
  struct ByRank {
    bool operator()(const std::pair<double, WorkerName>& a,
                    const std::pair<double, WorkerName>& b) const {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    }
  };
  using Ordered = std::set<std::pair<double, WorkerName>, ByRank>;
  // Slots, and their sum of ranks, of the bins strictly above the bin of a rank.
  struct Above {
    int64_t slots = 0;
    double rank_sum = 0;
  };

  Share Insert(double rank, const WorkerName& name, uint32_t slots);
  void Erase(double rank, const WorkerName& name, const Share& share);
  Above SumAbove(double rank) const;
  const Ordered& Best() const { return ranked_; }  // highest rank first, then by name

  // Bins: a quarter of an octave each, from 2^-16 up (kBinBase quarters below 1.0).
  static int Bin(double rank);

 private:
  static constexpr int kBins = 100;
  static constexpr int kBinBase = 64;
  static constexpr double kFixed = 1048576.0;  // 2^20: rank sums are kept as exact integers

  Ordered ranked_;
  std::array<int64_t, kBins> bin_slots_{};
  std::array<int64_t, kBins> bin_weight_{};
};

}  // namespace idlepool::core
