#include "dispatch/decision.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dispatch/stable_hash.h"

namespace lockstep {

std::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kSkip:
      return "skip";
    case BackendKind::kFused:
      return "fused";
    case BackendKind::kCustom:
      return "custom";
    case BackendKind::kNccl:
      return "nccl";
  }
  return "?";
}

std::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kOneShot:
      return "one_shot";
    case Algorithm::kTwoShot:
      return "two_shot";
    case Algorithm::kNone:
      break;
  }
  return "none";
}

std::string_view PredicateName(Predicate predicate) {
  switch (predicate) {
    case Predicate::kGroupTagged:
      return "group_tagged";
    case Predicate::kLibraryAvailable:
      return "library_available";
    case Predicate::kTwoDimensional:
      return "two_dimensional";
    case Predicate::kContiguous:
      return "contiguous";
    case Predicate::kWorkspaceInitialized:
      return "workspace_initialized";
    case Predicate::kWorkspaceWorldSize:
      return "workspace_world_size_matches";
    case Predicate::kWorkspacePeers:
      return "workspace_peers_match";
    case Predicate::kTokensFit:
      return "tokens_fit";
    case Predicate::kHiddenFits:
      return "hidden_fits";
    case Predicate::kDtypeMatches:
      return "dtype_matches";
    case Predicate::kCustomAvailable:
      return "custom_available";
    case Predicate::kBytesAligned:
      return "bytes_aligned_16";
    case Predicate::kCustomContiguous:
      return "custom_contiguous";
    case Predicate::kBytesBelowMax:
      return "bytes_below_custom_max";
    case Predicate::kCustomWorldSize:
      return "custom_world_size";
    case Predicate::kNvlinkOrWorldTwo:
      return "nvlink_or_world_2";
    case Predicate::kSameNode:
      return "same_node";
  }
  return "?";
}

BackendKind PredicateBackend(Predicate predicate) {
  return predicate < Predicate::kCustomAvailable ? BackendKind::kFused : BackendKind::kCustom;
}

std::optional<Predicate> FirstFailedPredicate(const DecisionRecord& record, BackendKind backend) {
  for (int i = 0; i < kNumPredicates; ++i) {
    const auto p = static_cast<Predicate>(i);
    if (PredicateBackend(p) != backend) continue;
    if (record.Evaluated(p) && !record.Held(p)) return p;
  }
  return std::nullopt;
}

namespace {

std::string PeersText(GroupId id, const ParallelLayout* layout) {
  if (!id.valid()) return "none";
  if (layout != nullptr && id.value < layout->num_peer_sets()) return layout->PeersToString(id);
  return absl::StrCat("group#", id.value);
}

std::string Details(const DecisionRecord& r, Predicate p, const ParallelLayout* layout) {
  const TensorDesc& t = r.call.tensor;
  switch (p) {
    case Predicate::kGroupTagged:
      return absl::StrFormat("workspace hint %s", WorkspaceKindName(r.hint));
    case Predicate::kTwoDimensional:
      return absl::StrCat("ndim ", t.ndim);
    case Predicate::kWorkspaceWorldSize:
      return absl::StrFormat("workspace %d ranks, group %d", r.workspace_world_size,
                             r.group_world_size);
    case Predicate::kWorkspacePeers:
      return absl::StrCat("workspace ", PeersText(r.workspace_group, layout), ", group ",
                          PeersText(r.group, layout));
    case Predicate::kTokensFit:
      return absl::StrFormat("tokens %d, max_tokens %d", t.tokens(),
                             r.workspace_capacity.max_tokens);
    case Predicate::kHiddenFits:
      return absl::StrFormat("hidden %d, workspace hidden %d", t.hidden(),
                             r.workspace_capacity.hidden);
    case Predicate::kDtypeMatches:
      return absl::StrFormat("dtype %s, workspace dtype %s", DTypeName(t.dtype),
                             DTypeName(r.workspace_capacity.dtype));
    case Predicate::kBytesAligned:
      return absl::StrCat("bytes ", t.bytes());
    case Predicate::kBytesBelowMax:
      return absl::StrFormat("bytes %d, max %d", t.bytes(), r.custom_max_bytes);
    case Predicate::kCustomWorldSize:
      return absl::StrCat("world ", r.group_world_size);
    case Predicate::kNvlinkOrWorldTwo:
      return absl::StrCat("world ", r.group_world_size,
                          ", full_nvlink=", r.full_nvlink ? "true" : "false");
    case Predicate::kLibraryAvailable:
    case Predicate::kContiguous:
    case Predicate::kWorkspaceInitialized:
    case Predicate::kCustomAvailable:
    case Predicate::kCustomContiguous:
    case Predicate::kSameNode:
      break;
  }
  return "";
}

}  // namespace

std::string DescribePredicate(const DecisionRecord& record, Predicate predicate,
                              const ParallelLayout* layout) {
  if (!record.Evaluated(predicate)) {
    return absl::StrFormat("%s not evaluated", PredicateName(predicate));
  }
  std::string text =
      absl::StrFormat("%s=%s", PredicateName(predicate), record.Held(predicate) ? "true" : "false");
  std::string details = Details(record, predicate, layout);
  if (!details.empty()) absl::StrAppend(&text, " (", details, ")");
  return text;
}

std::string ExplainDecision(const DecisionRecord& record, const ParallelLayout* layout) {
  std::string text(BackendKindName(record.backend));
  if (record.algorithm != Algorithm::kNone) {
    absl::StrAppendFormat(&text, "/%s", AlgorithmName(record.algorithm));
  }
  std::string reasons;
  for (BackendKind passed : {BackendKind::kFused, BackendKind::kCustom}) {
    if (passed == record.backend) break;
    if (std::optional<Predicate> p = FirstFailedPredicate(record, passed)) {
      absl::StrAppendFormat(&reasons, "%s%s refused: %s", reasons.empty() ? "" : "; ",
                            BackendKindName(passed), DescribePredicate(record, *p, layout));
    }
  }
  if (!reasons.empty()) absl::StrAppend(&text, " (", reasons, ")");
  return text;
}

std::vector<Predicate> DifferingPredicates(const DecisionRecord& a, const DecisionRecord& b) {
  std::vector<Predicate> out;
  for (int i = 0; i < kNumPredicates; ++i) {
    const auto p = static_cast<Predicate>(i);
    if (a.Evaluated(p) != b.Evaluated(p) || a.Held(p) != b.Held(p)) out.push_back(p);
  }
  return out;
}

std::vector<std::string> DescribeDifferences(const DecisionRecord& a, const DecisionRecord& b,
                                             const ParallelLayout* layout) {
  std::vector<std::string> out;
  for (Predicate p : DifferingPredicates(a, b)) {
    if (a.Evaluated(p)) out.push_back(DescribePredicate(a, p, layout));
  }
  const TensorDesc& x = a.call.tensor;
  const TensorDesc& y = b.call.tensor;
  if (x.ndim != y.ndim) out.push_back(absl::StrFormat("ndim=%d", x.ndim));
  if (x.tokens() != y.tokens()) out.push_back(absl::StrFormat("tokens=%d", x.tokens()));
  if (x.hidden() != y.hidden()) out.push_back(absl::StrFormat("hidden=%d", x.hidden()));
  if (x.dtype != y.dtype) out.push_back(absl::StrFormat("dtype=%s", DTypeName(x.dtype)));
  if (x.contiguous != y.contiguous) {
    out.push_back(absl::StrFormat("contiguous=%s", x.contiguous ? "true" : "false"));
  }
  if (a.call.context.tracing != b.call.context.tracing) {
    out.push_back(absl::StrFormat("tracing=%s", a.call.context.tracing ? "true" : "false"));
  }
  if (a.call.context.graph_capture != b.call.context.graph_capture) {
    out.push_back(
        absl::StrFormat("graph_capture=%s", a.call.context.graph_capture ? "true" : "false"));
  }
  if (a.algorithm != b.algorithm) {
    out.push_back(absl::StrFormat("algorithm=%s", AlgorithmName(a.algorithm)));
  }
  if (a.blocks != b.blocks) out.push_back(absl::StrFormat("blocks=%d", a.blocks));
  if (a.kernel_flags != b.kernel_flags) {
    out.push_back(absl::StrFormat("sanitize_inputs=%s exact_sentinel=%s verify_clear=%s",
                                  (a.kernel_flags & kSanitizeInputs) ? "true" : "false",
                                  (a.kernel_flags & kExactSentinel) ? "true" : "false",
                                  (a.kernel_flags & kVerifyClear) ? "true" : "false"));
  }
  if (a.fp32_acc != b.fp32_acc) {
    out.push_back(absl::StrFormat("fp32_acc=%s", a.fp32_acc ? "true" : "false"));
  }
  if (a.workspace_group != b.workspace_group) {
    out.push_back(absl::StrFormat("workspace_peers=%s",
                                  a.workspace_group.valid() && layout != nullptr
                                      ? layout->PeersToString(a.workspace_group)
                                      : absl::StrFormat("group#%d", a.workspace_group.value)));
  }
  if (a.workspace_generation != b.workspace_generation) {
    out.push_back(absl::StrFormat("workspace_generation=%d", a.workspace_generation));
  }
  if (a.workspace_capacity.max_tokens != b.workspace_capacity.max_tokens) {
    out.push_back(absl::StrFormat("max_tokens=%d", a.workspace_capacity.max_tokens));
  }
  return out;
}

uint64_t DecisionFingerprint(const DecisionRecord& r) {
  const TensorDesc& t = r.call.tensor;
  StableHasher h;
  h.Add(r.seq)
      .Add(r.group.value)
      .Add(static_cast<uint64_t>(r.backend))
      .Add(static_cast<uint64_t>(r.algorithm))
      .Add(static_cast<uint64_t>(r.blocks))
      .Add(r.fp32_acc)
      .Add(r.kernel_flags)
      .Add(r.evaluated)
      .Add(r.held)
      .Add(static_cast<uint64_t>(t.ndim))
      .Add(static_cast<uint64_t>(t.tokens()))
      .Add(static_cast<uint64_t>(t.hidden()))
      .Add(static_cast<uint64_t>(t.dtype))
      .Add(t.contiguous)
      .Add(r.workspace_group.value)
      .Add(r.workspace_generation)
      .Add(static_cast<uint64_t>(r.workspace_capacity.max_tokens))
      .Add(static_cast<uint64_t>(r.workspace_capacity.hidden))
      .Add(static_cast<uint64_t>(r.workspace_capacity.dtype));
  return h.digest();
}

}  // namespace lockstep
