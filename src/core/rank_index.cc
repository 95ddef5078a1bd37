#include "core/rank_index.h"

#include <algorithm>
#include <cmath>

namespace idlepool::core {

int RankIndex::Bin(double rank) {
  int exp = 0;
  const double m = 2 * std::frexp(rank, &exp);  // rank = m x 2^(exp - 1), m in [1, 2)
  const int quarter = m < 1.189207115002721   ? 0
                      : m < 1.414213562373095 ? 1
                      : m < 1.681792830507429 ? 2
                                              : 3;
  return std::clamp((exp - 1) * 4 + quarter + kBinBase, 0, kBins - 1);
}

RankIndex::Share RankIndex::Insert(double rank, const WorkerName& name, uint32_t slots) {
  ranked_.insert({rank, name});
  const Share share{Bin(rank), static_cast<int64_t>(std::llround(rank * kFixed)) * slots, slots};
  bin_slots_[share.bin] += slots;
  bin_weight_[share.bin] += share.weight;
  return share;
}

void RankIndex::Erase(double rank, const WorkerName& name, const Share& share) {
  ranked_.erase({rank, name});
  bin_slots_[share.bin] -= share.slots;
  bin_weight_[share.bin] -= share.weight;
}

RankIndex::Above RankIndex::SumAbove(double rank) const {
  int64_t slots = 0, weight = 0;
  for (int b = Bin(rank) + 1; b < kBins; ++b) {
    slots += bin_slots_[b];
    weight += bin_weight_[b];
  }
  return {slots, static_cast<double>(weight) / kFixed};
}

}  // namespace idlepool::core
