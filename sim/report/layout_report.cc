#include "sim/report/layout_report.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/fusion_gate.h"
#include "dispatch/workspace.h"

namespace lockstep {
namespace {

// The gate's inputs for a representative decode step: backend on, the model
// can fuse, one token. Only the layout decides the outcome then.
FusionGateInputs DecodeStepGateInputs(bool fused_enabled) {
  FusionGateInputs in;
  in.fused_backend_enabled = fused_enabled;
  in.tokens = 1;
  in.max_fused_tokens = 2048;
  return in;
}

std::string RoleList(const GroupObject& object) {
  std::vector<std::string> names;
  for (GroupRole r : object.roles) names.emplace_back(GroupRoleName(r));
  return absl::StrJoin(names, ",");
}

}  // namespace

std::string FormatLayout(const ParallelLayout& layout, const DispatchPolicy& policy,
                         const LayoutReportOptions& options) {
  const ParallelConfig& c = layout.config();
  const ParallelWidths& w = layout.widths();
  std::string out = absl::StrFormat(
      "layout %s: %d ranks (tp=%d pp=%d dp=%d ep=%d moe_dp=%d attn_cp=%d dp_attention=%s)\n",
      c.ShortName(), w.world, c.tp, c.pp, c.dp, c.ep, c.moe_dp, c.attn_cp,
      c.dp_attention ? "on" : "off");
  absl::StrAppendFormat(&out,
                        "widths: attn_dp=%d attn_tp=%d attn_cp=%d moe_ep=%d moe_tp=%d moe_dp=%d\n",
                        w.attn_dp, w.attn_tp, w.attn_cp, w.moe_ep, w.moe_tp, w.moe_dp);
  absl::StrAppendFormat(&out, "policy: %s\n\ngroups:\n", policy.name());

  const WorkspaceTags tags = policy.TagGroups(layout, options.fused_enabled);
  const auto& objects = layout.objects();
  for (size_t i = 0; i < objects.size(); ++i) {
    const GroupObject& object = objects[i];
    std::vector<std::string> subgroups;
    const size_t shown =
        std::min(object.members.size(), static_cast<size_t>(options.max_subgroups));
    for (size_t g = 0; g < shown; ++g) subgroups.push_back(layout.PeersToString(object.members[g]));
    if (shown < object.members.size()) {
      subgroups.push_back(absl::StrCat("... and ", object.members.size() - shown, " more"));
    }
    const WorkspaceKind tag = tags.ForObject(static_cast<int>(i));
    absl::StrAppendFormat(
        &out, "  %-8s roles %-18s size %-5d %s%s\n", object.name, RoleList(object),
        layout.GroupSize(object.members.front()), absl::StrJoin(subgroups, " "),
        tag == WorkspaceKind::kNone ? ""
                                    : absl::StrFormat("  <- workspace %s", WorkspaceKindName(tag)));
  }

  absl::StrAppend(&out, "\nworkspaces (rendezvous groups):\n");
  if (!options.fused_enabled) {
    absl::StrAppend(&out, "  none: no fused all-reduce backend configured\n");
  } else {
    const GroupRole moe_role = MoeWorkspaceRole(w);
    const int moe_width = moe_role == GroupRole::kMoeEp ? w.moe_ep : w.moe_tp;
    auto describe = [&](std::string_view workspace, GroupRole role, int width,
                        std::string_view why) {
      if (width == 1) {
        absl::StrAppendFormat(&out, "  %-8s none: %s groups have one rank, nothing to reduce\n",
                              workspace, GroupRoleName(role));
      } else {
        absl::StrAppendFormat(&out, "  %-8s on %s (%d ranks each)%s\n", workspace,
                              GroupRoleName(role), width, why);
      }
    };
    describe("attn_tp", GroupRole::kAttnTp, w.attn_tp, "");
    describe("moe", moe_role, moe_width,
             moe_role == GroupRole::kMoeEp ? ", since moe_ep > 1" : ", since moe_ep == 1");
  }

  const FusionGateInputs gate = DecodeStepGateInputs(options.fused_enabled);
  const bool fuse = policy.ShouldFuseMlpAllReduceWithNextLayer(w, gate);
  const std::string_view refusal = FusionGateRefusal(w, gate);
  absl::StrAppend(&out, "\npost-experts reduction:\n");
  absl::StrAppendFormat(&out, "  hybrid EP+TP: %s\n", w.IsHybridEpTp() ? "yes" : "no");
  absl::StrAppendFormat(
      &out, "  fusion gate (decode step): %s\n",
      fuse ? "fuse into the next layer"
           : absl::StrFormat("do not fuse: %s", refusal.empty() ? "policy refuses" : refusal));
  absl::StrAppendFormat(&out, "  plan: %s\n", policy.PlanPostExperts(w, fuse).ToString());
  if (fuse) {
    absl::StrAppendFormat(&out, "  plan without fusion: %s\n",
                          policy.PlanPostExperts(w, false).ToString());
  }
  return out;
}

nlohmann::json LayoutToJson(const ParallelLayout& layout, const DispatchPolicy& policy,
                            const LayoutReportOptions& options) {
  const ParallelConfig& c = layout.config();
  const ParallelWidths& w = layout.widths();
  nlohmann::json j;
  j["config"] = {{"tp", c.tp},
                 {"pp", c.pp},
                 {"dp", c.dp},
                 {"ep", c.ep},
                 {"moe_dp", c.moe_dp},
                 {"attn_cp", c.attn_cp},
                 {"dp_attention", c.dp_attention},
                 {"world", w.world}};
  j["widths"] = {{"attn_dp", w.attn_dp}, {"attn_tp", w.attn_tp}, {"attn_cp", w.attn_cp},
                 {"moe_ep", w.moe_ep},   {"moe_tp", w.moe_tp},   {"moe_dp", w.moe_dp}};
  j["policy"] = policy.name();
  const WorkspaceTags tags = policy.TagGroups(layout, options.fused_enabled);
  nlohmann::json groups = nlohmann::json::array();
  const auto& objects = layout.objects();
  for (size_t i = 0; i < objects.size(); ++i) {
    nlohmann::json g;
    g["name"] = objects[i].name;
    nlohmann::json roles = nlohmann::json::array();
    for (GroupRole r : objects[i].roles) roles.push_back(GroupRoleName(r));
    g["roles"] = roles;
    nlohmann::json members = nlohmann::json::array();
    for (GroupId id : objects[i].members) {
      auto peers = layout.Peers(id);
      members.push_back(std::vector<int>(peers.begin(), peers.end()));
    }
    g["subgroups"] = members;
    g["workspace"] = WorkspaceKindName(tags.ForObject(static_cast<int>(i)));
    groups.push_back(g);
  }
  j["groups"] = groups;
  j["moe_workspace_group"] = GroupRoleName(MoeWorkspaceRole(w));
  const FusionGateInputs gate = DecodeStepGateInputs(options.fused_enabled);
  const bool fuse = policy.ShouldFuseMlpAllReduceWithNextLayer(w, gate);
  const PostExpertsPlan plan = policy.PlanPostExperts(w, fuse);
  nlohmann::json reductions = nlohmann::json::array();
  for (GroupRole r : plan.reductions) reductions.push_back(GroupRoleName(r));
  j["post_experts"] = {{"hybrid_ep_tp", w.IsHybridEpTp()},
                       {"fuse_with_next_layer", fuse},
                       {"refusal", std::string(FusionGateRefusal(w, gate))},
                       {"fused_group", fuse ? GroupRoleName(plan.fused_group) : ""},
                       {"reductions", reductions},
                       {"merged", plan.merged}};
  return j;
}

}  // namespace lockstep
