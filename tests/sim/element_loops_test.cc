// Numeric data's per-element loops give the same bits in every instruction
// set's copy (sim/memory/element_loops.h): the AVX2 copy, where this CPU runs
// it, against the baseline one, for every element type, full and sampled
// data, and element values that include NaN, infinities, -0 and subnormals.

#include "sim/memory/element_loops.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/protocol/element.h"
#include "sim/memory/value.h"

namespace lockstep {
namespace {

constexpr protocol::Elem kElems[] = {protocol::Elem::kBf16, protocol::Elem::kFp16,
                                     protocol::Elem::kFp32};

// Bit patterns the loops must carry as they are: NaN, +-inf, -0, the
// smallest subnormals, of each element type.
std::vector<uint32_t> SpecialBits(protocol::Elem e) {
  switch (e) {
    case protocol::Elem::kBf16:
      return {0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0001, 0x8001};
    case protocol::Elem::kFp16:
      return {0x7e00, 0x7c00, 0xfc00, 0x8000, 0x0001, 0x8001};
    case protocol::Elem::kFp32:
      break;
  }
  return {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x80000001u};
}

TEST(ElementLoopsTest, TheBaselineCopyRunsEverywhere) {
  EXPECT_TRUE(CpuRuns(ElementIsa::kBaseline));
  EXPECT_TRUE(CpuRuns(BestElementIsa()));
}

TEST(ElementLoopsTest, EveryCopyGivesTheBaselinesBits) {
  if (!CpuRuns(ElementIsa::kAvx2)) {
    GTEST_SKIP() << "this CPU has no AVX2: only the baseline copy runs here";
  }
  for (const protocol::Elem e : kElems) {
    for (const NumericSampler sampler :
         {NumericSampler{}, NumericSampler{6, 8}, NumericSampler{13, 8}}) {
      for (const auto& [first, end] :
           {std::pair<int64_t, int64_t>{0, 5000}, {1003, 20011}, {7, 7}}) {
        SCOPED_TRACE(::testing::Message()
                     << "elem " << static_cast<int>(e) << ", stride " << sampler.stride() << ", ["
                     << first << "," << end << ")");
        const auto n = static_cast<size_t>(sampler.Count(first, end));
        std::vector<uint32_t> base(n), avx2(n);
        FillElements(ElementIsa::kBaseline, e, sampler, 0x1234567u, first, end, base.data());
        FillElements(ElementIsa::kAvx2, e, sampler, 0x1234567u, first, end, avx2.data());
        ASSERT_EQ(base, avx2);

        // The elements, then the special values, summed into a reference
        // that already holds something, and checked against it.
        std::vector<uint32_t> in = base;
        for (uint32_t b : SpecialBits(e)) in.push_back(b);
        std::vector<double> sum_base(in.size()), mag_base(in.size());
        for (size_t i = 0; i < in.size(); ++i) {
          sum_base[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
          mag_base[i] = 0.125 * static_cast<double>(i % 5);
        }
        std::vector<double> sum_avx2 = sum_base, mag_avx2 = mag_base;
        AddToReference(ElementIsa::kBaseline, e, in.data(), in.size(), sum_base.data(),
                       mag_base.data());
        AddToReference(ElementIsa::kAvx2, e, in.data(), in.size(), sum_avx2.data(),
                       mag_avx2.data());
        ASSERT_EQ(std::memcmp(sum_base.data(), sum_avx2.data(), sum_base.size() * sizeof(double)),
                  0);
        ASSERT_EQ(std::memcmp(mag_base.data(), mag_avx2.data(), mag_base.size() * sizeof(double)),
                  0);
        const auto count = static_cast<int64_t>(in.size());
        for (const double n_eps : {0.0, 1e-3, 1.0}) {
          const int64_t outside = CountOutside(ElementIsa::kBaseline, e, in.data(), count,
                                               sum_base.data(), mag_base.data(), n_eps);
          EXPECT_EQ(CountOutside(ElementIsa::kAvx2, e, in.data(), count, sum_base.data(),
                                 mag_base.data(), n_eps),
                    outside);
          // Not a count that cannot fail: the NaN is outside at any tolerance.
          EXPECT_GE(outside, 1);
        }
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
