#include <cmath>
#include <cstring>

#include "gtest/gtest.h"
#include "kernels/protocol/element.h"
#include "kernels/protocol/lamport.h"
#include "kernels/protocol/one_shot.h"
#include "kernels/protocol/two_shot.h"

namespace lockstep::protocol {
namespace {

TEST(ElementTest, EveryHalfValueRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const bool nan = (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
    if (nan) continue;
    EXPECT_EQ(FloatToHalfBits(HalfBitsToFloat(bits)), bits) << std::hex << bits;
  }
}

TEST(ElementTest, EveryBfloat16ValueRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const bool nan = (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
    if (nan) continue;
    EXPECT_EQ(FloatToBf16Bits(Bf16BitsToFloat(bits)), bits) << std::hex << bits;
  }
}

TEST(ElementTest, ConversionsRoundToNearestEven) {
  // 1 + 2^-11 lies halfway between two halves; ties go to the even one (1.0).
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u);
  EXPECT_EQ(FloatToBf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80u);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00u) << "rounds to infinity";
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000u) << "halfway to the smallest subnormal";
}

TEST(LamportTest, ExactSentinelTestMatchesOnlyNegativeZero) {
  for (Elem e : {Elem::kBf16, Elem::kFp16, Elem::kFp32}) {
    EXPECT_TRUE(IsSentinel(NegZeroBits(e), e, SentinelTest::kExactBits, true));
    EXPECT_FALSE(IsSentinel(0u, e, SentinelTest::kExactBits, true));
    const uint32_t negative_subnormal = SignBit(e) | 1u;
    EXPECT_FALSE(IsSentinel(negative_subnormal, e, SentinelTest::kExactBits, true))
        << "a peer's negative subnormal is data, with or without FTZ";
  }
}

TEST(LamportTest, ZeroAndSignbitTestMistakesNegativeSubnormalsForTheSentinelUnderFtz) {
  for (Elem e : {Elem::kBf16, Elem::kFp16, Elem::kFp32}) {
    const uint32_t negative_subnormal = SignBit(e) | 1u;
    EXPECT_FALSE(IsSentinel(negative_subnormal, e, SentinelTest::kZeroAndSignbit, false));
    EXPECT_TRUE(IsSentinel(negative_subnormal, e, SentinelTest::kZeroAndSignbit, true));
  }
}

TEST(LamportTest, SanitisingRewritesNegativeZeroOnly) {
  EXPECT_EQ(SanitizeBits(0x8000u, Elem::kBf16), 0u);
  EXPECT_EQ(SanitizeBits(0x8001u, Elem::kBf16), 0x8001u);
  EXPECT_EQ(SanitizeBits(0x80000000u, Elem::kFp32), 0u);
}

TEST(LamportTest, ThreeBuffersRotateAndTheNextCallClearsThePreviousSize) {
  LamportState s;
  LamportCall c = BeginLamportCall(s);
  EXPECT_EQ(c.buffer, 0u);
  EXPECT_EQ(c.clear_buffer, 2u);
  EXPECT_EQ(c.clear_elems, 0);
  EndLamportCall(s, 4096);
  c = BeginLamportCall(s);
  EXPECT_EQ(c.buffer, 1u);
  EXPECT_EQ(c.clear_buffer, 0u);
  EXPECT_EQ(c.clear_elems, 4096);
  EXPECT_EQ(c.epoch, 2u);
  EndLamportCall(s, 16);
  EndLamportCall(s, 8);
  c = BeginLamportCall(s);
  EXPECT_EQ(c.buffer, 0u) << "three buffers";
  EXPECT_EQ(c.clear_elems, 8);
}

TEST(TwoShotTest, OwnersCoverTheMessageOnceInAlignedRanges) {
  for (int32_t world : {2, 3, 4, 8}) {
    for (int64_t elems : {1, 7, 8, 100, 7168, 7169}) {
      int64_t covered = 0;
      for (int32_t owner = 0; owner < world; ++owner) {
        const int64_t lo = TwoShotOwnerBegin(owner, world, elems);
        const int64_t hi = TwoShotOwnerEnd(owner, world, elems);
        EXPECT_EQ(lo, covered) << world << " " << elems;
        EXPECT_EQ(lo % kTwoShotAlign == 0 || lo == elems, true);
        covered = hi;
      }
      EXPECT_EQ(covered, elems);
      EXPECT_LE(TwoShotFootprint(world, elems), LamportBufferElems(world, elems));
      EXPECT_LE(OneShotFootprint(world, elems), LamportBufferElems(world, elems));
    }
  }
}

TEST(OneShotTest, SlotOffsetsDependOnTheElementCount) {
  EXPECT_EQ(OneShotSlotOffset(3, 100), 300);
  EXPECT_NE(OneShotSlotOffset(1, 100), OneShotSlotOffset(1, 101));
}

}  // namespace
}  // namespace lockstep::protocol
