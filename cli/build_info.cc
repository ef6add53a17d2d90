#include "cli/build_info.h"

#include "lockstep_build_stamp.h"

namespace lockstep::cli {

std::string_view ThisBuild() { return LOCKSTEP_BUILD; }

}  // namespace lockstep::cli
