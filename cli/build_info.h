// Which build of lockstep this is, as result files, replay bundles and
// reports record it: "0.1.0 (git 225ea9e1a2b3)", with ", modified DIGEST"
// when the checkout it was built from had uncommitted changes, or "0.1.0 (no
// git revision)" when built outside a git checkout. Written at build time by
// cmake/LockstepBuildStamp.cmake; a new revision relinks only what links this.

#ifndef LOCKSTEP_CLI_BUILD_INFO_H_
#define LOCKSTEP_CLI_BUILD_INFO_H_

#include <string_view>

namespace lockstep::cli {

std::string_view ThisBuild();

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_BUILD_INFO_H_
