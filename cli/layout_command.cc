// lockstep layout: the groups SGLang builds for a parallel configuration.

#include <iostream>

#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "faults/mutants.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "sim/report/layout_report.h"

namespace lockstep::cli {

int RunLayout(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  ParallelConfig config;
  bool json = false;
  bool no_fused = false;
  int max_subgroups = 16;
  std::string policy_name = "reference";
  FlagParser flags("lockstep layout");
  flags.AddInt("tp", &config.tp, "tensor-parallel size (--tp-size)");
  flags.AddInt("pp", &config.pp, "pipeline-parallel size (--pp-size)");
  flags.AddInt("dp", &config.dp, "data-parallel size; needs --dp-attention (--dp-size)");
  flags.AddInt("ep", &config.ep, "expert-parallel size (--ep-size)");
  flags.AddInt("moe-dp", &config.moe_dp, "MoE data-parallel size (--moe-dp-size)");
  flags.AddInt("attn-cp", &config.attn_cp, "attention context-parallel size (--attn-cp-size)");
  flags.AddBool("dp-attention", &config.dp_attention, "DP attention (--enable-dp-attention)");
  flags.AddInt("world", &config.world, "ranks launched; must equal tp*pp (default tp*pp)");
  flags.AddString("policy", &policy_name, "dispatch policy whose tags and plan to show");
  flags.AddBool("no-fused", &no_fused, "no fused all-reduce backend configured");
  flags.AddInt("max-subgroups", &max_subgroups, "subgroups printed per group (text only)");
  flags.AddBool("json", &json, "print JSON instead of text");
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    err << "lockstep layout: " << s.message() << "\n" << flags.Usage();
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(config);
  if (!layout.ok()) {
    err << "lockstep layout: " << layout.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy =
      faults::MakePolicyRegistry().Create(policy_name);
  if (!policy.ok()) {
    err << "lockstep layout: " << policy.status().message() << "\n";
    return kExitUsage;
  }
  LayoutReportOptions options;
  options.fused_enabled = !no_fused;
  options.max_subgroups = std::max(1, max_subgroups);
  if (json) {
    out << LayoutToJson(*layout, **policy, options).dump(2) << "\n";
  } else {
    out << FormatLayout(*layout, **policy, options);
  }
  return kExitOk;
}

}  // namespace lockstep::cli
