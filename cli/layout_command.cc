// lockstep layout: the groups SGLang builds for a parallel configuration.

#include <iostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "faults/mutants.h"
#include "sim/report/layout_report.h"

namespace lockstep::cli {

int RunLayout(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  ParallelConfig config;
  bool json = false;
  bool no_fused = false;
  int max_subgroups = 16;
  std::string policy_name = "reference";
  std::string versus;
  FlagParser flags("lockstep layout");
  flags.AddInt("tp", &config.tp, "tensor-parallel size (--tp-size)");
  flags.AddInt("pp", &config.pp, "pipeline-parallel size (--pp-size)");
  flags.AddInt("dp", &config.dp,
               "data-parallel replicas (--dp-size); with --dp-attention, the attention-DP width");
  flags.AddInt("attn-dp", &config.attn_dp, "attention data-parallel size (--attn-dp-size)");
  flags.AddInt("ep", &config.ep, "expert-parallel size (--ep-size)");
  flags.AddInt("moe-dp", &config.moe_dp, "MoE data-parallel size (--moe-dp-size)");
  flags.AddInt("attn-cp", &config.attn_cp, "attention context-parallel size (--attn-cp-size)");
  flags.AddBool("dp-attention", &config.dp_attention,
                "deprecated: --dp is the attention-DP width (--enable-dp-attention)");
  flags.AddInt("world", &config.world, "ranks launched; must equal tp*pp (default tp*pp)");
  flags.AddString("policy", &policy_name, "dispatch policy whose tags and plan to show");
  flags.AddString("versus", &versus,
                  "a second policy: print the lines of the plan where the two differ");
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
  // The layout shows the MoE groups and plan: a layout SGLang refuses when
  // it builds a MoE model is refused here too.
  if (absl::Status s = ValidateMoeModelConstruction(config); !s.ok()) {
    err << "lockstep layout: " << s.message() << "\n";
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
  if (!versus.empty()) {
    absl::StatusOr<std::unique_ptr<DispatchPolicy>> other =
        faults::MakePolicyRegistry().Create(versus);
    if (!other.ok()) {
      err << "lockstep layout: --versus: " << other.status().message() << "\n";
      return kExitUsage;
    }
    if (json) {
      nlohmann::json j;
      j[policy_name] = LayoutToJson(*layout, **policy, options);
      j[versus] = LayoutToJson(*layout, **other, options);
      out << j.dump(2) << "\n";
    } else {
      out << FormatLayoutDifferences(*layout, **policy, **other, options);
    }
    return kExitOk;
  }
  if (json) {
    out << LayoutToJson(*layout, **policy, options).dump(2) << "\n";
  } else {
    out << FormatLayout(*layout, **policy, options);
  }
  return kExitOk;
}

}  // namespace lockstep::cli
