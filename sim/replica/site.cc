#include "sim/replica/site.h"

#include "absl/strings/str_format.h"

namespace lockstep {

static_assert(static_cast<int>(SiteKind::kMoeCpGather) + 1 == kNumSiteKinds,
              "kNumSiteKinds counts every SiteKind");

std::string_view SiteKindName(SiteKind kind) {
  switch (kind) {
    case SiteKind::kEmbedding:
      return "embedding";
    case SiteKind::kAttnOut:
      return "attn_out";
    case SiteKind::kDenseMlp:
      return "dense_mlp";
    case SiteKind::kMoe:
      return "moe";
    case SiteKind::kMoeDeferred:
      return "moe_deferred";
    case SiteKind::kMoeFlush:
      return "moe_flush";
    case SiteKind::kMoeReplicated:
      return "moe_replicated";
    case SiteKind::kDraftProjection:
      return "draft_projection";
    case SiteKind::kDpGather:
      return "dp_gather";
    case SiteKind::kDenseDeferred:
      return "dense_deferred";
    case SiteKind::kDpReturn:
      return "dp_return";
    case SiteKind::kMoeCpGather:
      return "moe_cp_gather";
  }
  return "?";
}

std::optional<SiteKind> SiteKindFromName(std::string_view name) {
  for (int k = 0; k < kNumSiteKinds; ++k) {
    if (SiteKindName(static_cast<SiteKind>(k)) == name) return static_cast<SiteKind>(k);
  }
  return std::nullopt;
}

std::string_view CallPhaseName(CallPhase phase) {
  switch (phase) {
    case CallPhase::kEager:
      return "eager";
    case CallPhase::kCapture:
      return "capture";
    case CallPhase::kReplay:
      return "replay";
  }
  return "?";
}

std::optional<CallPhase> CallPhaseFromName(std::string_view name) {
  for (CallPhase p : {CallPhase::kEager, CallPhase::kCapture, CallPhase::kReplay}) {
    if (CallPhaseName(p) == name) return p;
  }
  return std::nullopt;
}

std::string SiteRef::ToString() const {
  std::string s = layer < 0
                      ? absl::StrFormat("step %d %s", step, SiteKindName(kind))
                      : absl::StrFormat("step %d layer %d %s", step, layer, SiteKindName(kind));
  if (phase != CallPhase::kEager) s += absl::StrFormat(" (%s)", CallPhaseName(phase));
  return s;
}

}  // namespace lockstep
