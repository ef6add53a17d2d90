#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/cli/commands.h"

namespace lockstep::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunLockstep(std::vector<std::string> args) {
  args.insert(args.begin(), "lockstep");
  std::ostringstream out, err;
  const int code = Main(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(LayoutCommandTest, HybridLayoutShowsBothMoeGroupsAndTheMergedPlan) {
  const Result r = RunLockstep({"layout", "--tp", "4", "--ep", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("moe_ep   roles moe_ep"));
  EXPECT_THAT(r.out, HasSubstr("[0,2] [1,3]  <- workspace moe"));
  EXPECT_THAT(r.out, HasSubstr("[0,1] [2,3]\n"));
  EXPECT_THAT(r.out, HasSubstr("hybrid EP+TP: yes"));
  EXPECT_THAT(r.out, HasSubstr("do not fuse: hybrid EP+TP"));
  EXPECT_THAT(r.out, HasSubstr("plan: all-reduce over tp (EP and MoE-TP merged)"));
}

TEST(LayoutCommandTest, JsonListsEverySubgroup) {
  const Result r = RunLockstep({"layout", "--tp=8", "--ep=2", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["widths"]["moe_tp"], 4);
  EXPECT_EQ(j["moe_workspace_group"], "moe_ep");
  bool found = false;
  for (const auto& g : j["groups"]) {
    if (g["name"] == "moe_ep") {
      found = true;
      EXPECT_EQ(g["subgroups"], nlohmann::json::parse("[[0,4],[1,5],[2,6],[3,7]]"));
      EXPECT_EQ(g["workspace"], "moe");
    }
  }
  EXPECT_TRUE(found);
}

TEST(LayoutCommandTest, InvalidLayoutExitsTwoWithTheRule) {
  const Result r = RunLockstep({"layout", "--tp", "6", "--ep", "4"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("tp=6 is not divisible by ep*moe_dp"));
  EXPECT_THAT(r.out, Not(HasSubstr("groups:")));
}

TEST(LayoutCommandTest, MisspelledFlagGetsASuggestion) {
  const Result r = RunLockstep({"layout", "--tpp", "4"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --tpp for 'lockstep layout'; did you mean 'tp'?"));
}

TEST(LayoutCommandTest, NonNumericValueIsRejected) {
  const Result r = RunLockstep({"layout", "--tp", "four"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--tp expects an integer, got 'four'"));
}

TEST(LayoutCommandTest, UnknownPolicyListsKnownOnes) {
  const Result r = RunLockstep({"layout", "--tp", "4", "--policy", "nope"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("known policies: reference"));
}

TEST(MainTest, UnknownCommandSuggestsTheClosestVerb) {
  const Result r = RunLockstep({"layuot"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'layout'?"));
}

TEST(MainTest, HelpListsCommandsAndExitsZero) {
  const Result r = RunLockstep({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("layout"));
}

}  // namespace
}  // namespace lockstep::cli
