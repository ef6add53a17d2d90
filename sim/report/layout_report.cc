#include "sim/report/layout_report.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dispatch/layer_boundary.h"
#include "dispatch/workspace.h"

namespace lockstep {
namespace {

// A representative decode step's FFN exit: one token, not the last layer,
// the fused backend on and a model that can fuse.
ExitInputs DecodeStep(FfnKind ffn, bool fused_enabled) {
  ExitInputs in;
  in.ffn = ffn;
  in.tokens = 1;
  in.fused_backend = fused_enabled;
  in.norm_max_tokens = 2048;
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
      "layout %s: %d ranks (tp=%d pp=%d attn_dp=%d ep=%d moe_dp=%d attn_cp=%d%s)\n", c.ShortName(),
      w.world, c.tp, c.pp, w.attn_dp, c.ep, c.moe_dp, c.attn_cp,
      w.replicas > 1
          ? absl::StrFormat("; dp=%d independent replicas, this is one of them", w.replicas)
          : std::string());
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
    const GroupRole moe_role = policy.MoeWorkspaceRole(w);
    auto describe = [&](std::string_view workspace, GroupRole role, std::string_view why) {
      const int width = layout.GroupSize(layout.Object(role).members.front());
      if (width == 1) {
        absl::StrAppendFormat(&out, "  %-8s none: %s groups have one rank, nothing to reduce\n",
                              workspace, GroupRoleName(role));
      } else {
        absl::StrAppendFormat(&out, "  %-8s on %s (%d ranks each)%s\n", workspace,
                              GroupRoleName(role), width, why);
      }
    };
    describe("attn_tp", GroupRole::kAttnTp, "");
    describe("moe", moe_role,
             moe_role == GroupRole::kTp      ? ", the merged post-experts reduction group"
             : moe_role == GroupRole::kMoeEp ? ", since moe_ep > 1"
                                             : ", since moe_ep == 1");
  }

  absl::StrAppend(&out, "\ncustom all-reduce on: ");
  std::vector<std::string> custom;
  for (const GroupObject& object : objects) {
    if (policy.ObjectHasCustomAllReduce(object) && layout.GroupSize(object.members.front()) > 1) {
      custom.push_back(object.name);
    }
  }
  absl::StrAppend(&out, custom.empty() ? "none" : absl::StrJoin(custom, ", "), "\n");

  absl::StrAppend(&out, "\nFFN exit (a decode step, not the last layer):\n");
  absl::StrAppendFormat(
      &out, "  hybrid EP+TP: %s%s\n", w.IsHybridEpTp() ? "yes" : "no",
      w.MergesPostExperts() ? " (EP and MoE-TP merge into one TP reduction)" : "");
  absl::StrAppendFormat(
      &out, "  MoE:   %s\n",
      policy.PlanFfnExit(w, DecodeStep(FfnKind::kMoe, options.fused_enabled)).ToString());
  absl::StrAppendFormat(
      &out, "  dense: %s\n",
      policy.PlanFfnExit(w, DecodeStep(FfnKind::kDense, options.fused_enabled)).ToString());
  return out;
}

nlohmann::json LayoutToJson(const ParallelLayout& layout, const DispatchPolicy& policy,
                            const LayoutReportOptions& options) {
  const ParallelConfig& c = layout.config();
  const ParallelWidths& w = layout.widths();
  nlohmann::json j;
  j["config"] = {{"tp", c.tp},           {"pp", c.pp},
                 {"dp", c.dp},           {"attn_dp", c.attn_dp},
                 {"ep", c.ep},           {"moe_dp", c.moe_dp},
                 {"attn_cp", c.attn_cp}, {"dp_attention", c.dp_attention},
                 {"world", w.world}};
  j["widths"] = {{"replicas", w.replicas}, {"attn_dp", w.attn_dp}, {"attn_tp", w.attn_tp},
                 {"attn_cp", w.attn_cp},   {"moe_ep", w.moe_ep},   {"moe_tp", w.moe_tp},
                 {"moe_dp", w.moe_dp}};
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
  j["moe_workspace_group"] = GroupRoleName(policy.MoeWorkspaceRole(w));
  nlohmann::json custom = nlohmann::json::array();
  for (const GroupObject& object : objects) {
    if (policy.ObjectHasCustomAllReduce(object) && layout.GroupSize(object.members.front()) > 1) {
      custom.push_back(object.name);
    }
  }
  j["custom_all_reduce"] = custom;
  auto exit_json = [&](FfnKind ffn) {
    const ExitPlan plan = policy.PlanFfnExit(w, DecodeStep(ffn, options.fused_enabled));
    nlohmann::json reductions = nlohmann::json::array();
    for (GroupRole r : plan.reductions) reductions.push_back(GroupRoleName(r));
    return nlohmann::json{{"kind", std::string(ExitKindName(plan.kind))},
                          {"group", std::string(GroupRoleName(plan.group))},
                          {"reductions", reductions},
                          {"merged", plan.merged},
                          {"text", plan.ToString()}};
  };
  j["ffn_exit"] = {{"hybrid_ep_tp", w.IsHybridEpTp()},
                   {"moe", exit_json(FfnKind::kMoe)},
                   {"dense", exit_json(FfnKind::kDense)}};
  return j;
}

std::string FormatLayoutDifferences(const ParallelLayout& layout, const DispatchPolicy& a,
                                    const DispatchPolicy& b, const LayoutReportOptions& options) {
  const std::string text_a = FormatLayout(layout, a, options);
  const std::string text_b = FormatLayout(layout, b, options);
  const std::vector<std::string> lines_a = absl::StrSplit(text_a, '\n', absl::SkipEmpty());
  const std::vector<std::string> lines_b = absl::StrSplit(text_b, '\n', absl::SkipEmpty());
  // Lines are compared as multisets: the report's order is the same for both
  // policies, and a line present in both is a decision they share.
  auto only_in = [](const std::vector<std::string>& x, const std::vector<std::string>& y) {
    std::vector<std::string> rest = y, out;
    for (const std::string& line : x) {
      auto it = std::find(rest.begin(), rest.end(), line);
      if (it == rest.end()) {
        out.push_back(line);
      } else {
        rest.erase(it);
      }
    }
    return out;
  };
  const std::vector<std::string> diff_a = only_in(lines_a, lines_b);
  const std::vector<std::string> diff_b = only_in(lines_b, lines_a);
  std::string out = absl::StrFormat("%s\n", lines_a.empty() ? "" : lines_a.front());
  if (diff_a.empty() && diff_b.empty()) {
    absl::StrAppendFormat(&out, "%s and %s decide the same on this layout\n", a.name(), b.name());
    return out;
  }
  absl::StrAppendFormat(&out, "where %s (-) and %s (+) differ:\n", a.name(), b.name());
  for (const std::string& line : diff_a) absl::StrAppendFormat(&out, "- %s\n", line);
  for (const std::string& line : diff_b) absl::StrAppendFormat(&out, "+ %s\n", line);
  return out;
}

}  // namespace lockstep
