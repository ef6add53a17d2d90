#include "hw/provenance.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep::hw {
namespace {

float Factor(uint64_t instance, int64_t i) {
  return 1.0f + static_cast<float>((instance + static_cast<uint64_t>(i)) & 1u);
}

uint32_t MaskOf(std::span<const int> ranks) {
  uint32_t mask = 0;
  for (int r : ranks) mask |= 1u << (r % kProvenanceRanks);
  return mask;
}

std::string RanksOfMask(uint32_t mask, int base) {
  std::vector<int> ranks;
  for (int b = 0; b < kProvenanceRanks; ++b) {
    if (mask & (1u << b)) ranks.push_back(base + b);
  }
  return absl::StrFormat("[%s]", absl::StrJoin(ranks, ","));
}

}  // namespace

std::vector<uint8_t> ProvenanceInput(int rank, uint64_t parity, int64_t elems,
                                     protocol::Elem elem) {
  const int esize = protocol::ElemBytes(elem);
  std::vector<uint8_t> raw(static_cast<size_t>(elems * esize));
  const float weight = static_cast<float>(1u << (rank % kProvenanceRanks));
  for (int64_t i = 0; i < elems; ++i) {
    const uint32_t bits = protocol::FromFloat(weight * Factor(parity, i), elem);
    std::memcpy(raw.data() + i * esize, &bits, static_cast<size_t>(esize));
  }
  return raw;
}

std::optional<ProvenanceMismatch> CheckProvenanceRow(std::span<const uint8_t> row,
                                                     protocol::Elem elem, uint64_t instance,
                                                     std::span<const int> expected) {
  const int esize = protocol::ElemBytes(elem);
  const int64_t elems = static_cast<int64_t>(row.size()) / esize;
  const uint32_t want = MaskOf(expected);
  const int base = expected.empty() ? 0 : expected.front() / kProvenanceRanks * kProvenanceRanks;
  for (int64_t i = 0; i < elems; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, row.data() + i * esize, static_cast<size_t>(esize));
    const float got = protocol::ToFloat(bits, elem) / Factor(instance, i);
    const uint32_t mask = got >= 0 && got < 65536.0f ? static_cast<uint32_t>(got) : 0xffffffffu;
    if (static_cast<float>(mask) == got && mask == want) continue;
    return ProvenanceMismatch{i,
                              static_cast<float>(mask) == got
                                  ? RanksOfMask(mask, base)
                                  : absl::StrFormat("(value %g)", static_cast<double>(got)),
                              RanksOfMask(want, base)};
  }
  return std::nullopt;
}

}  // namespace lockstep::hw
