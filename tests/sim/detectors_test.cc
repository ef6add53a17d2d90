// The detector table: one row per detector, in enum order, each saying what
// it checks and which verdicts it gives.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/finding.h"

namespace lockstep {
namespace {

TEST(DetectorsTest, EveryDetectorHasOneRowInEnumOrderNamingItsVerdicts) {
  int index = 0;
  for (const DetectorInfo& d : Detectors()) {
    EXPECT_EQ(static_cast<int>(d.detector), index++) << d.name;
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.checks.empty()) << d.name;
    EXPECT_FALSE(d.where.empty()) << d.name;
    // Every verdict named is a verdict.
    std::string verdicts(d.verdicts);
    for (size_t start = 0; start < verdicts.size();) {
      size_t end = verdicts.find(", ", start);
      if (end == std::string::npos) end = verdicts.size();
      EXPECT_TRUE(ParseVerdict(verdicts.substr(start, end - start)).ok()) << d.name;
      start = end + 2;
    }
  }
  EXPECT_EQ(&DetectorOf(Detector::kDeadlock),
            &Detectors()[static_cast<size_t>(Detector::kDeadlock)]);
}

TEST(DetectorsTest, SeverityOrdersASilentWrongResultAboveAHangAboveALoudStop) {
  EXPECT_LT(Severity(Verdict::kClean), Severity(Verdict::kFailStop));
  EXPECT_LT(Severity(Verdict::kFailStop), Severity(Verdict::kMismatch));
  EXPECT_LT(Severity(Verdict::kMismatch), Severity(Verdict::kHang));
  EXPECT_LT(Severity(Verdict::kHang), Severity(Verdict::kDivergence));
  EXPECT_LT(Severity(Verdict::kDivergence), Severity(Verdict::kWrongPeer));
}

}  // namespace
}  // namespace lockstep
