// Sampled data (`workload.data: sampled`) against numeric data: the catalogue's
// scenarios whose faults act on element values (−0 and negative subnormal
// inputs, fp32 accumulation asked for by one rank, an uncleared Lamport
// buffer), under the reference and the mutants those faults expose, give the
// same verdict in both modes, and that verdict is the one each is known for.
// Hidden is cut to 1024 (sampled keeps 8 elements of each 1024) so that the
// numeric runs stay short. Label `long` (exploration_test).

#include <string>
#include <vector>

#include "faults/explore.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gtest/gtest.h"

namespace lockstep::faults {
namespace {

std::string Faults() { return LOCKSTEP_SOURCE_DIR "/topologies/scenarios/faults/"; }

struct Case {
  const char* file;
  const char* policy;
  Verdict expected;
};

TEST(SampledDataTest, GivesNumericDataVerdictsOnTheElementValueFaults) {
  const Case cases[] = {
      {"tp8-negative-zero-inputs.yaml", "reference", Verdict::kClean},
      {"tp8-negative-zero-inputs.yaml", "no-input-sanitising", Verdict::kHang},
      {"tp8-negative-zero-inputs.yaml", "sum-from-own-rank", Verdict::kDivergence},
      {"tp2-h200x2-negative-zero-inputs.yaml", "no-input-sanitising", Verdict::kHang},
      {"tp8-negative-subnormal-ftz.yaml", "reference", Verdict::kClean},
      {"tp8-negative-subnormal-ftz.yaml", "sentinel-zero-and-signbit", Verdict::kHang},
      {"tp8-replay-negative-subnormal-ftz.yaml", "sentinel-zero-and-signbit", Verdict::kHang},
      {"tp8-fp32-acc-env.yaml", "reference", Verdict::kClean},
      {"tp8-fp32-acc-env.yaml", "fp32-acc-from-rank-env", Verdict::kDivergence},
      {"tp8-uncleared-buffer.yaml", "reference", Verdict::kFailStop},
  };
  const PolicyRegistry registry = MakePolicyRegistry();
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Scenario>> loaded = LoadScenarios(Faults() + c.file);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    Scenario s = loaded->front();
    s.model.hidden = 1024;
    for (const uint64_t seed : {uint64_t{1}, uint64_t{2}}) {
      for (const DataMode mode : {DataMode::kNumeric, DataMode::kSampled}) {
        s.workload.data = mode;
        SimOptions o;
        o.seed = seed;
        o.policy = c.policy;
        absl::StatusOr<SimResult> r = SimulateWithFaults(s, o, registry);
        ASSERT_TRUE(r.ok()) << r.status();
        const bool sampled = mode == DataMode::kSampled;
        EXPECT_EQ(r->verdict, c.expected)
            << c.file << " under " << c.policy << ", seed " << seed << ", "
            << (sampled ? "sampled" : "numeric") << ": " << r->summary;
      }
    }
  }
}

}  // namespace
}  // namespace lockstep::faults
