#include "dispatch/decision.h"

#include <array>
#include <iterator>
#include <utility>

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
    case Algorithm::kOneShotPush:
      return "1shot_push";
    case Algorithm::kTwoShotPush:
      return "2shot_push";
    case Algorithm::kOneShotPull:
      return "1shot_pull";
    case Algorithm::kTwoShotPull:
      return "2shot_pull";
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
    case Predicate::kHiddenAligned:
      return "hidden_aligned_16_bytes";
    case Predicate::kElementsFit:
      return "elements_fit";
    case Predicate::kNormFusionPath:
      return "norm_fusion_path";
    case Predicate::kNormFusable:
      return "norm_fusable";
    case Predicate::kTokensInNormRange:
      return "tokens_in_norm_range";
  }
  return "?";
}

BackendKind PredicateBackend(Predicate predicate) {
  return predicate >= Predicate::kCustomAvailable && predicate <= Predicate::kSameNode
             ? BackendKind::kCustom
             : BackendKind::kFused;
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
    case Predicate::kHiddenAligned:
      return absl::StrFormat("hidden %d, %d-byte elements", t.hidden(), DTypeSize(t.dtype));
    case Predicate::kElementsFit:
      return absl::StrFormat("tokens*hidden %d, capacity %d*%d", t.tokens() * t.hidden(),
                             r.workspace_capacity.max_tokens, r.workspace_capacity.hidden);
    case Predicate::kTokensInNormRange:
      return absl::StrFormat("tokens %d, limit %d", t.tokens(), r.norm_max_tokens);
    case Predicate::kNormFusionPath:
    case Predicate::kNormFusable:
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

namespace {

std::string Bool(bool b) { return b ? "true" : "false"; }

// The scalar fields of a record, as DecisionFields() lists them after the
// predicates.
constexpr DecisionField kScalarFields[] = {
    {"seq", true, [](const DecisionRecord& r) { return r.seq; },
     [](const DecisionRecord& r, const ParallelLayout*) { return absl::StrCat("seq=", r.seq); }},
    {"group", true, [](const DecisionRecord& r) { return uint64_t{r.group.value}; },
     [](const DecisionRecord& r, const ParallelLayout* l) {
       return absl::StrCat("group=", PeersText(r.group, l));
     }},
    {"backend", true, [](const DecisionRecord& r) { return static_cast<uint64_t>(r.backend); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrFormat("backend=%s", BackendKindName(r.backend));
     }},
    {"algorithm", true, [](const DecisionRecord& r) { return static_cast<uint64_t>(r.algorithm); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrFormat("algorithm=%s", AlgorithmName(r.algorithm));
     }},
    {"blocks", true, [](const DecisionRecord& r) { return static_cast<uint64_t>(r.blocks); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("blocks=", r.blocks);
     }},
    {"fp32_acc", true, [](const DecisionRecord& r) { return uint64_t{r.fp32_acc}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("fp32_acc=", Bool(r.fp32_acc));
     }},
    {"kernel_flags", true, [](const DecisionRecord& r) { return uint64_t{r.kernel_flags}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrFormat(
           "sanitize_inputs=%s exact_sentinel=%s verify_clear=%s clear_previous_footprint=%s "
           "rank_order_sum=%s three_buffer_rotation=%s bounded_waits=%s release_flags=%s",
           Bool(r.kernel_flags & kSanitizeInputs), Bool(r.kernel_flags & kExactSentinel),
           Bool(r.kernel_flags & kVerifyClear), Bool(r.kernel_flags & kClearPreviousFootprint),
           Bool(r.kernel_flags & kRankOrderSum), Bool(r.kernel_flags & kThreeBufferRotation),
           Bool(r.kernel_flags & kBoundedWaits), Bool(r.kernel_flags & kReleaseFlags));
     }},
    {"norm_fused", true, [](const DecisionRecord& r) { return uint64_t{r.norm_fused}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("norm_fused=", Bool(r.norm_fused));
     }},
    {"graph_inputs", true, [](const DecisionRecord& r) { return uint64_t{r.graph_inputs}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("graph_inputs=", Bool(r.graph_inputs));
     }},
    {"ndim", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.call.tensor.ndim); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("ndim=", r.call.tensor.ndim);
     }},
    {"tokens", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.call.tensor.tokens()); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("tokens=", r.call.tensor.tokens());
     }},
    {"hidden", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.call.tensor.hidden()); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("hidden=", r.call.tensor.hidden());
     }},
    {"dtype", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.call.tensor.dtype); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrFormat("dtype=%s", DTypeName(r.call.tensor.dtype));
     }},
    {"tensor_contiguous", true,
     [](const DecisionRecord& r) { return uint64_t{r.call.tensor.contiguous}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("tensor_contiguous=", Bool(r.call.tensor.contiguous));
     }},
    {"workspace_peers", true,
     [](const DecisionRecord& r) { return uint64_t{r.workspace_group.value}; },
     [](const DecisionRecord& r, const ParallelLayout* l) {
       return absl::StrCat("workspace_peers=", PeersText(r.workspace_group, l));
     }},
    {"workspace_generation", true,
     [](const DecisionRecord& r) { return uint64_t{r.workspace_generation}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("workspace_generation=", r.workspace_generation);
     }},
    {"max_tokens", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.workspace_capacity.max_tokens); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("max_tokens=", r.workspace_capacity.max_tokens);
     }},
    {"workspace_hidden", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.workspace_capacity.hidden); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("workspace_hidden=", r.workspace_capacity.hidden);
     }},
    {"workspace_dtype", true,
     [](const DecisionRecord& r) { return static_cast<uint64_t>(r.workspace_capacity.dtype); },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrFormat("workspace_dtype=%s", DTypeName(r.workspace_capacity.dtype));
     }},
    // Context the decision must not depend on: named when decisions differ, as
    // a likely cause, but not part of what must agree.
    {"tracing", false, [](const DecisionRecord& r) { return uint64_t{r.call.context.tracing}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("tracing=", Bool(r.call.context.tracing));
     }},
    {"graph_capture", false,
     [](const DecisionRecord& r) { return uint64_t{r.call.context.graph_capture}; },
     [](const DecisionRecord& r, const ParallelLayout*) {
       return absl::StrCat("graph_capture=", Bool(r.call.context.graph_capture));
     }},
};

// A predicate as a field: its value is evaluated (bit 1) and held (bit 0).
template <int P>
uint64_t PredicateValue(const DecisionRecord& r) {
  return (uint64_t{r.Evaluated(static_cast<Predicate>(P))} << 1) |
         uint64_t{r.Held(static_cast<Predicate>(P))};
}
template <int P>
std::string PredicateText(const DecisionRecord& r, const ParallelLayout* layout) {
  return DescribePredicate(r, static_cast<Predicate>(P), layout);
}

template <int... P>
std::array<DecisionField, sizeof...(P) + std::size(kScalarFields)> AllFields(
    std::integer_sequence<int, P...>) {
  std::array<DecisionField, sizeof...(P) + std::size(kScalarFields)> all{DecisionField{
      PredicateName(static_cast<Predicate>(P)), true, &PredicateValue<P>, &PredicateText<P>}...};
  for (size_t i = 0; i < std::size(kScalarFields); ++i) all[sizeof...(P) + i] = kScalarFields[i];
  return all;
}

}  // namespace

std::span<const DecisionField> DecisionFields() {
  static const auto fields = AllFields(std::make_integer_sequence<int, kNumPredicates>());
  return fields;
}

std::vector<std::string> DescribeDifferences(const DecisionRecord& a, const DecisionRecord& b,
                                             const ParallelLayout* layout) {
  std::vector<std::string> out;
  for (const DecisionField& f : DecisionFields()) {
    if (f.value(a) != f.value(b)) out.push_back(f.describe(a, layout));
  }
  return out;
}

bool SameDecision(const DecisionRecord& a, const DecisionRecord& b) {
  // Every predicate field is the predicate's evaluated and held bits.
  if (a.evaluated != b.evaluated || a.held != b.held) return false;
  for (const DecisionField& f : kScalarFields) {
    if (f.fingerprinted && f.value(a) != f.value(b)) return false;
  }
  return true;
}

uint64_t DecisionFingerprint(const DecisionRecord& r) {
  StableHasher h;
  for (const DecisionField& f : DecisionFields()) {
    if (f.fingerprinted) h.Add(f.value(r));
  }
  return h.digest();
}

}  // namespace lockstep
