#include "sim/policies.h"

namespace lockstep {

PolicyRegistry MakePolicyRegistry() {
  PolicyRegistry registry;
  return registry;
}

}  // namespace lockstep
