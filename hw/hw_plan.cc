#include "hw/hw_plan.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "absl/strings/str_format.h"
#include "dispatch/custom_launch.h"
#include "dispatch/serving_args.h"
#include "dispatch/workspace.h"
#include "kernels/cuda/lamport_launch.h"
#include "kernels/protocol/two_shot.h"
#include "sim/replica/replica_config.h"
#include "sim/report/display_text.h"
#include "sim/report/layout_report.h"
#include "sim/simulation.h"

namespace lockstep::hw {

absl::StatusOr<std::string> DescribeHwPlan(const Scenario& scenario, const std::string& policy_name,
                                           uint64_t seed, const PolicyRegistry& registry) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  const std::string name = policy_name.empty() ? scenario.dispatch.policy : policy_name;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy = registry.Create(name);
  if (!policy.ok()) return policy.status();
  std::ostringstream out;
  const int world = layout->world_size();
  const int per_node = scenario.hardware.gpus_per_node;
  out << absl::StrFormat("lockstep hw plan: %s, %d ranks on %s (%d GPUs per node)\n",
                         DisplayText(scenario.name), world, DisplayText(scenario.hardware.name),
                         per_node);
  out << absl::StrFormat("launch: mpirun -np %d lockstep hw %s  (one process per GPU)\n", world,
                         scenario.path.empty() ? "SCENARIO" : ShellWord(scenario.path));
  out << "\nranks:\n";
  for (int r = 0; r < world; ++r) {
    out << absl::StrFormat("  rank %d -> node %d, GPU %d\n", r, r / per_node, r % per_node);
  }
  out << "\n";
  absl::StatusOr<ReplicaConfig> config = ResolveReplicaConfig(scenario, *layout, **policy);
  if (!config.ok()) return config.status();
  out << absl::StrFormat("fusion backend: %s%s\n", FusionBackendName(config->fusion_backend),
                         scenario.dispatch.fused_backend == FusionBackendFlag::kUnset
                             ? " (SGLang's default for this model and platform)"
                             : "");
  LayoutReportOptions layout_options;
  layout_options.fused_enabled = config->wiring.workspaces();
  out << FormatLayout(*layout, **policy, layout_options);
  out << "\nNCCL: one communicator per subgroup of every group object, split from the world "
         "communicator (ncclCommSplit), non-blocking, under the watchdog\n";

  out << "\nfusion workspaces (three Lamport buffers each, cuMem FABRIC or POSIX-fd handles):\n";
  if (!config->wiring.workspaces()) {
    out << "  none (no FlashInfer fusion backend with workspaces)\n";
  } else {
    const int64_t elem_bytes = DTypeSize(scenario.dispatch.dtype);
    for (const auto& [kind, role] :
         {std::pair{WorkspaceKind::kAttnTp, GroupRole::kAttnTp},
          std::pair{WorkspaceKind::kMoe, (*policy)->MoeWorkspaceRole(layout->widths())}}) {
      for (GroupId id : layout->Object(role).members) {
        const int size = layout->GroupSize(id);
        if (size <= 1) continue;
        const int64_t elems = protocol::LamportBufferElems(
            size, scenario.dispatch.max_tokens * scenario.model.hidden);
        out << absl::StrFormat("  %s %s: %d tokens x %d %s, %.1f MiB per rank\n",
                               WorkspaceKindName(kind), layout->PeersToString(id),
                               scenario.dispatch.max_tokens, scenario.model.hidden,
                               DTypeName(scenario.dispatch.dtype),
                               static_cast<double>(3 * elems * elem_bytes) / (1 << 20));
      }
    }
  }

  // The custom all-reduce's regions: one per group of every object that
  // offers it, sized to the agreed bound (GpuWiringRuntime::MakeCustom).
  out << "\ncustom all-reduce regions (staging buffer + barrier flags + push slots, cuMem FABRIC "
         "or "
         "POSIX-fd handles):\n";
  const CustomAgreedState& custom = config->wiring.custom;
  bool any_custom = false;
  if (custom.available) {
    for (const GroupObject& object : layout->objects()) {
      if (!(*policy)->ObjectHasCustomAllReduce(object)) continue;
      for (GroupId id : object.members) {
        const int size = layout->GroupSize(id);
        if (size <= 1) continue;
        any_custom = true;
        // On the launcher's placement a group is on one host or not; the
        // runner's NVLink and clique answers are "same host" too.
        const std::span<const int> peers = layout->Peers(id);
        bool one_node = true;
        for (int p : peers) one_node &= p / per_node == peers.front() / per_node;
        const CustomAgreedState agreed =
            ChooseCustomGeneration(custom, size, one_node, one_node, one_node);
        // As GpuWiringRuntime::MakeCustom sizes the region.
        int64_t staging = (agreed.max_bytes + 15) / 16 * 16;
        int64_t push = 0;
        if (agreed.generation >= 2) {
          const CustomV2Config v2 = CustomV2ConfigFor(agreed.sm, size, agreed.max_bytes);
          staging = std::max(staging, v2.pull_bytes);
          push = v2.push_slot_bytes;
        }
        out << absl::StrFormat(
            "  %s %s: generation %d, messages <%s %d bytes, %.1f MiB staging + %d KiB flags + "
            "%.2f MiB push slots per rank\n",
            object.name, layout->PeersToString(id), agreed.generation,
            agreed.max_inclusive ? "=" : "", agreed.max_bytes,
            static_cast<double>(staging) / (1 << 20), cuda::kCustomFlagBytes / 1024,
            static_cast<double>(2 * size * push) / (1 << 20));
      }
    }
  }
  if (!any_custom) {
    out << (scenario.dispatch.custom_allreduce ? "  none (no group object offers one)\n"
                                               : "  none (dispatch.custom_allreduce: false)\n");
  }

  // The backend of every call of the first step, as the dispatch core decides.
  SimOptions options;
  options.seed = seed;
  options.policy = name;
  options.keep_trace = true;
  Scenario clean = scenario;
  clean.faults.clear();
  clean.workload.steps = 1;
  absl::StatusOr<SimResult> result = Simulate(clean, options, registry);
  if (!result.ok()) return result.status();
  out << absl::StrFormat("\ncalls of step 0 (policy %s; decisions of a simulated run, seed %d):\n",
                         name, seed);
  std::map<std::string, std::map<std::string, std::vector<int>>>
      by_site;  // site -> choice -> ranks
  std::vector<std::string> order;
  for (const TraceEvent& e : result->trace_events) {
    const std::string site = absl::StrFormat("%-28s %-8s", e.site.ToString(),
                                             layout->objects()[static_cast<size_t>(e.object)].name);
    if (!by_site.count(site)) order.push_back(site);
    std::string choice(BackendKindName(e.backend));
    // The protocol the GPU runs: the kernel, its algorithm, the fused norm
    // epilogue and its grid, as the simulated run decided them.
    if (e.algorithm != Algorithm::kNone) {
      choice += absl::StrFormat(" %s", AlgorithmName(e.algorithm));
    }
    if (e.norm_fused) choice += "+rmsnorm";
    if (e.backend == BackendKind::kFused || e.backend == BackendKind::kCustom) {
      choice += absl::StrFormat(" %d blk", e.blocks);
    }
    choice += absl::StrFormat(" (%d tokens)", e.tokens);
    by_site[site][choice].push_back(e.rank);
  }
  for (const std::string& site : order) {
    for (const auto& [choice, ranks] : by_site[site]) {
      out << absl::StrFormat("  %s %-28s ranks %s\n", site, choice,
                             ranks.size() == static_cast<size_t>(world)
                                 ? std::string("all")
                                 : absl::StrFormat("%d of %d", ranks.size(), world));
    }
  }
  out << absl::StrFormat("\nsimulated verdict of this plan: %s\n", VerdictName(result->verdict));
  return out.str();
}

}  // namespace lockstep::hw
