// lockstep's reference policy against SGLang 0.5.23, layout by layout.
//
// tests/conformance/sglang-0.5.23.tsv holds, for every layout of the sweep
// (world <= 64), what SGLang 0.5.23's own functions decide: whether the server
// arguments or the model construction refuse the layout, the groups and which
// group object each role uses, the workspace tags, the MoE workspace's group,
// the facts of the FFN exit and its plan, the DP padding and whether the fused
// all-reduce is on by default. tools/conformance/sglang_table.py writes it
// from SGLang's source; this program computes the same columns from
// lockstep's dispatch core and compares them.
//
//   conformance_table --check tests/conformance/sglang-0.5.23.tsv
//   conformance_table --print tests/conformance/sglang-0.5.23.tsv > ours.tsv
//   diff <(grep -v '^#' tests/conformance/sglang-0.5.23.tsv) ours.tsv
//
// Exit 0 when every row matches, 1 on a difference (each named, column by
// column), 2 on a file that cannot be read.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dispatch/group_layout.h"
#include "dispatch/layer_boundary.h"
#include "dispatch/parallel_config.h"
#include "dispatch/policy.h"
#include "dispatch/serving_args.h"

namespace lockstep {
namespace {

// The columns, in the file's order.
constexpr const char* kColumns[] = {
    "tp",     "pp",      "ep",   "moe_dp", "attn_dp",    "attn_cp", "verdict",    "reason",
    "groups", "objects", "tags", "moe_ws", "exit_facts", "plan",    "dp_padding", "fusion_auto"};
constexpr int kNumColumns = 16;
constexpr int kReason = 7;
// The model every row assumes (the table's header says the same).
constexpr std::string_view kArchitecture = "DeepseekV3ForCausalLM";
constexpr int64_t kHidden = 7168;
constexpr int kAttentionHeads = 128;
constexpr int64_t kTokensPerDpGroup = 8;

std::string Flag(bool b) { return b ? "1" : "0"; }

std::string Groups(const ParallelLayout& layout) {
  std::vector<std::string> roles;
  for (GroupRole role : kAllGroupRoles) {
    std::vector<std::string> sets;
    std::vector<bool> seen(layout.num_peer_sets(), false);
    for (int rank = 0; rank < layout.world_size(); ++rank) {
      const GroupId id = layout.GroupOf(role, rank);
      if (seen[id.value]) continue;
      seen[id.value] = true;
      sets.push_back(absl::StrCat("[", absl::StrJoin(layout.Peers(id), ","), "]"));
    }
    roles.push_back(absl::StrCat(std::string(GroupRoleName(role)), "=", absl::StrJoin(sets, ",")));
  }
  return absl::StrJoin(roles, ";");
}

std::string Objects(const ParallelLayout& layout) {
  std::vector<std::string> out;
  for (GroupRole role : kAllGroupRoles) {
    out.push_back(absl::StrCat(std::string(GroupRoleName(role)), "=", layout.Object(role).name));
  }
  return absl::StrJoin(out, ";");
}

std::string Tags(const ParallelLayout& layout, const DispatchPolicy& policy) {
  const WorkspaceTags tags = policy.TagGroups(layout, /*fused_enabled=*/true);
  std::vector<std::string> out;
  std::vector<bool> listed(layout.objects().size(), false);
  for (GroupRole role : kAllGroupRoles) {
    const int object = layout.ObjectIndex(role);
    if (listed[static_cast<size_t>(object)]) continue;
    listed[static_cast<size_t>(object)] = true;
    const WorkspaceKind kind = tags.ForObject(object);
    if (kind == WorkspaceKind::kNone) continue;
    out.push_back(absl::StrCat(layout.objects()[static_cast<size_t>(object)].name, ":",
                               std::string(WorkspaceKindName(kind))));
  }
  return out.empty() ? "-" : absl::StrJoin(out, ";");
}

std::string PlanText(const ExitPlan& plan) {
  std::vector<std::string> roles;
  for (GroupRole r : plan.reductions) roles.emplace_back(GroupRoleName(r));
  switch (plan.kind) {
    case ExitKind::kNothing:
      return "nothing";
    case ExitKind::kCompleteNow:
    case ExitKind::kAllReduceThenScatter:
      return absl::StrCat(std::string(ExitKindName(plan.kind)), ":", absl::StrJoin(roles, "+"));
    default:
      return absl::StrCat(std::string(ExitKindName(plan.kind)), ":",
                          std::string(GroupRoleName(plan.group)));
  }
}

// lockstep's row for one layout: the first six columns as given.
std::vector<std::string> Row(const std::vector<int>& dims, const DispatchPolicy& policy) {
  ParallelConfig c;
  c.tp = dims[0];
  c.pp = dims[1];
  c.ep = dims[2];
  c.moe_dp = dims[3];
  c.attn_dp = dims[4];
  c.attn_cp = dims[5];
  std::vector<std::string> row;
  for (int d : dims) row.push_back(absl::StrCat(d));
  auto rejected = [&](std::string_view verdict, const absl::Status& s) {
    row.emplace_back(verdict);
    row.push_back(std::string(s.message()));
    while (row.size() < kNumColumns) row.emplace_back("-");
    return row;
  };
  if (absl::Status s = ValidateParallelConfig(c); !s.ok()) return rejected("reject_server_args", s);
  if (absl::Status s = ValidateAttentionHeads(c, kAttentionHeads); !s.ok()) {
    return rejected("reject_model", s);
  }
  if (absl::Status s = ValidateMoeModelConstruction(c); !s.ok()) {
    return rejected("reject_model", s);
  }
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(c);
  if (!layout.ok()) return rejected("reject_server_args", layout.status());
  const ParallelWidths& w = layout->widths();
  row.emplace_back("accept");
  row.emplace_back("-");
  row.push_back(Groups(*layout));
  row.push_back(Objects(*layout));
  row.push_back(Tags(*layout, policy));
  const GroupRole ws = policy.MoeWorkspaceRole(w);
  row.push_back(absl::StrCat(std::string(GroupRoleName(ws)), ":", layout->Object(ws).name));

  // A MoE FFN at a layer that is not the model's last, in a decode step of
  // kTokensPerDpGroup tokens per attention-DP group.
  const Platform platform;  // SM90, one node
  const ServingArgs args;   // SGLang's defaults
  ExitInputs in;
  in.ffn = FfnKind::kMoe;
  in.tokens = kTokensPerDpGroup;
  in.boundary = ResolveBoundaryReduction(args.boundary_reduction, kArchitecture);
  std::string padding = "-";
  if (w.DpAttention()) {
    DpBatch batch;
    batch.tokens.assign(static_cast<size_t>(w.attn_dp), kTokensPerDpGroup);
    // The table's TP group has no custom all-reduce (its header says so), so
    // the decode's SUM_LEN shortcut for a v2 custom all-reduce is off.
    batch.custom_v2_max_bytes = 0;
    batch.row_bytes = kHidden * 2;  // bf16
    in.padding = SelectDpPadding(batch);
    in.tokens = DpGlobalRows(in.padding, batch.tokens);
    padding = std::string(DpPaddingName(in.padding));
  }
  const ExitFacts facts = FfnExitFacts(w, in);
  row.push_back(absl::StrJoin({Flag(facts.sum_deferral_allowed), Flag(facts.may_defer_sum),
                               Flag(facts.single_sum), Flag(facts.reduce_scatterv)},
                              ","));
  row.push_back(PlanText(policy.PlanFfnExit(w, in)));
  row.push_back(padding);
  row.push_back(Flag(FusionAutoEnabled(kArchitecture, platform, w)));
  return row;
}

struct Expected {
  int line = 0;
  std::vector<std::string> cells;
};

absl::StatusOr<std::vector<Expected>> ReadTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<Expected> rows;
  std::string text;
  int line = 0;
  bool header = true;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> cells = absl::StrSplit(text, '\t');
    if (cells.size() != kNumColumns) {
      return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %d columns, expected %d (%s)", path,
                                                        line, cells.size(), kNumColumns,
                                                        absl::StrJoin(kColumns, " ")));
    }
    if (header) {  // the first line that is not a comment names the columns
      header = false;
      continue;
    }
    rows.push_back({line, std::move(cells)});
  }
  return rows;
}

int Main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "--check" && std::string(argv[1]) != "--print")) {
    std::fprintf(stderr, "usage: conformance_table --check|--print TABLE.tsv\n");
    return 2;
  }
  const bool print = std::string(argv[1]) == "--print";
  const std::string path = argv[2];
  absl::StatusOr<std::vector<Expected>> table = ReadTable(path);
  if (!table.ok()) {
    std::fprintf(stderr, "conformance_table: %s\n", std::string(table.status().message()).c_str());
    return 2;
  }
  const DispatchPolicy reference;
  if (print) std::cout << absl::StrJoin(kColumns, "\t") << "\n";
  int differing = 0, rows = 0, rejected = 0;
  for (const Expected& e : *table) {
    std::vector<int> dims;
    for (int i = 0; i < 6; ++i) {
      int v = 0;
      if (!absl::SimpleAtoi(e.cells[static_cast<size_t>(i)], &v) || v < 1 || v > 64) {
        std::fprintf(stderr, "%s:%d: column %s is not a width 1-64\n", path.c_str(), e.line,
                     kColumns[i]);
        return 2;
      }
      dims.push_back(v);
    }
    const std::vector<std::string> ours = Row(dims, reference);
    ++rows;
    if (ours[6] != "accept") ++rejected;
    if (print) {
      std::cout << absl::StrJoin(ours, "\t") << "\n";
      continue;
    }
    std::vector<std::string> diffs;
    for (int i = 6; i < kNumColumns; ++i) {
      if (i == kReason) continue;  // the messages are each project's own words
      if (ours[static_cast<size_t>(i)] != e.cells[static_cast<size_t>(i)]) {
        diffs.push_back(absl::StrFormat("  %s: SGLang %s\n  %*s  lockstep %s", kColumns[i],
                                        e.cells[static_cast<size_t>(i)],
                                        static_cast<int>(std::string_view(kColumns[i]).size()), "",
                                        ours[static_cast<size_t>(i)]));
      }
    }
    // A refusal must say what to change: SGLang's rule and the flag to move.
    if (ours[6] != "accept" && ours[6] == e.cells[6] &&
        ours[kReason].find("SGLang 0.5.23") == std::string::npos) {
      diffs.push_back(absl::StrCat("  reason: lockstep's message does not cite SGLang 0.5.23: ",
                                   ours[kReason]));
    }
    if (!diffs.empty()) {
      ++differing;
      if (differing <= 20) {
        std::printf("%s:%d: tp=%d pp=%d ep=%d moe_dp=%d attn_dp=%d attn_cp=%d\n%s\n", path.c_str(),
                    e.line, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                    absl::StrJoin(diffs, "\n").c_str());
      }
    }
  }
  if (print) return 0;
  std::printf("%d layouts (%d refused), %d differ from SGLang 0.5.23\n", rows, rejected, differing);
  return differing == 0 ? 0 : 1;
}

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) { return lockstep::Main(argc, argv); }
