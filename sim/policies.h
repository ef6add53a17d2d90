// The policy registry every lockstep tool uses: the reference design plus the
// known-bad mutants of faults/.

#ifndef LOCKSTEP_SIM_POLICIES_H_
#define LOCKSTEP_SIM_POLICIES_H_

#include "dispatch/policy.h"

namespace lockstep {

// A registry with "reference" and every mutant registered.
PolicyRegistry MakePolicyRegistry();

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_POLICIES_H_
