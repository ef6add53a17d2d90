#include "sim/scenario/did_you_mean.h"

#include <array>

#include "gtest/gtest.h"

namespace lockstep {
namespace {

TEST(DidYouMeanTest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("tp", "tpp"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(DidYouMeanTest, SuggestsOnlyPlausibleTypos) {
  constexpr std::array<std::string_view, 3> kKeys = {"hardware", "parallel", "workload"};
  EXPECT_EQ(ClosestMatch("hardwre", kKeys), "hardware");
  EXPECT_EQ(ClosestMatch("zzz", kKeys), "");
  EXPECT_EQ(DidYouMean("paralel", kKeys), "; did you mean 'parallel'?");
  EXPECT_EQ(DidYouMean("faults", kKeys), "");
}

}  // namespace
}  // namespace lockstep
