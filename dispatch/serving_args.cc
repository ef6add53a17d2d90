#include "dispatch/serving_args.h"

#include <array>

#include "absl/strings/str_format.h"

namespace lockstep {
namespace {

// _FLASHINFER_ALLREDUCE_FUSION_ARCHS (arg_groups/overrides.py:929-951 @ 0.5.23).
constexpr std::array<std::string_view, 19> kAutoFusionArchitectures = {
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV4ForCausalLM",
    "GptOssForCausalLM",
    "GlmMoeDsaForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM",
    "MistralLarge3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3VLMoeForConditionalGeneration",
    "Qwen3NextForCausalLM",
    "Qwen4ExpForConditionalGeneration",
    "KimiK25ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3",
};

bool IsSm90(const Platform& p) { return p.sm == 90; }
bool IsSm10x(const Platform& p) { return p.sm >= 100 && p.sm < 110; }

}  // namespace

std::string_view FusionBackendFlagName(FusionBackendFlag flag) {
  switch (flag) {
    case FusionBackendFlag::kUnset:
      return "unset";
    case FusionBackendFlag::kNone:
      return "none";
    case FusionBackendFlag::kAuto:
      return "auto";
    case FusionBackendFlag::kTrtllm:
      return "trtllm";
    case FusionBackendFlag::kMnnvl:
      return "mnnvl";
    case FusionBackendFlag::kCutedsl:
      return "cutedsl";
  }
  return "?";
}

absl::StatusOr<FusionBackendFlag> ParseFusionBackendFlag(std::string_view name) {
  for (FusionBackendFlag f :
       {FusionBackendFlag::kUnset, FusionBackendFlag::kNone, FusionBackendFlag::kAuto,
        FusionBackendFlag::kTrtllm, FusionBackendFlag::kMnnvl, FusionBackendFlag::kCutedsl}) {
    if (FusionBackendFlagName(f) == name) return f;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown fusion backend '%s': use auto, trtllm, mnnvl, cutedsl or none", name));
}

std::string_view FusionBackendName(FusionBackend backend) {
  switch (backend) {
    case FusionBackend::kNone:
      return "none";
    case FusionBackend::kTrtllm:
      return "trtllm";
    case FusionBackend::kMnnvl:
      return "mnnvl";
    case FusionBackend::kCutedsl:
      return "cutedsl";
  }
  return "?";
}

std::string_view BoundaryReductionName(BoundaryReduction reduction) {
  switch (reduction) {
    case BoundaryReduction::kAuto:
      return "auto";
    case BoundaryReduction::kAr:
      return "ar";
    case BoundaryReduction::kRs:
      return "rs";
    case BoundaryReduction::kRsv:
      return "rsv";
    case BoundaryReduction::kRsRsv:
      return "rs+rsv";
  }
  return "?";
}

absl::StatusOr<BoundaryReduction> ParseBoundaryReduction(std::string_view name) {
  for (BoundaryReduction r :
       {BoundaryReduction::kAuto, BoundaryReduction::kAr, BoundaryReduction::kRs,
        BoundaryReduction::kRsv, BoundaryReduction::kRsRsv}) {
    if (BoundaryReductionName(r) == name) return r;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown boundary reduction '%s': use auto, ar, rs, rsv or rs+rsv", name));
}

bool FusionAutoEnabled(std::string_view architecture, const Platform& platform,
                       const ParallelWidths& widths) {
  bool listed = false;
  for (std::string_view a : kAutoFusionArchitectures) listed |= a == architecture;
  return listed && (IsSm90(platform) || IsSm10x(platform)) && widths.tp > 1 &&
         !widths.DpAttention() && (platform.nodes == 1 || IsSm10x(platform));
}

absl::StatusOr<FusionBackend> ResolveFusionBackend(const ServingArgs& args,
                                                   const Platform& platform,
                                                   std::string_view architecture,
                                                   const ParallelWidths& widths) {
  FusionBackendFlag flag = args.fusion_backend;
  if (flag == FusionBackendFlag::kUnset) {
    flag = FusionAutoEnabled(architecture, platform, widths) ? FusionBackendFlag::kAuto
                                                             : FusionBackendFlag::kNone;
  }
  if (flag == FusionBackendFlag::kNone) return FusionBackend::kNone;
  const bool multi_node = platform.nodes > 1;
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fusion backend %s on SM%d across %d node(s): %s (SGLang 0.5.23 refuses it when it "
        "creates the workspace, layers/flashinfer_comm_fusion.py:46-100)",
        FusionBackendFlagName(flag), platform.sm, platform.nodes, why));
  };
  if (!IsSm90(platform) && !IsSm10x(platform)) {
    return refuse("FlashInfer all-reduce fusion requires SM90 or SM10x GPUs");
  }
  switch (flag) {
    case FusionBackendFlag::kCutedsl:
      if (!IsSm10x(platform)) return refuse("the cutedsl backend requires Blackwell");
      return FusionBackend::kCutedsl;
    case FusionBackendFlag::kAuto:
      if (IsSm10x(platform)) return FusionBackend::kMnnvl;
      if (multi_node) return refuse("multi-node fusion needs Blackwell");
      return FusionBackend::kTrtllm;
    case FusionBackendFlag::kTrtllm:
      if (multi_node) return refuse("the trtllm backend is single-node only");
      return FusionBackend::kTrtllm;
    case FusionBackendFlag::kMnnvl:
      if (!IsSm10x(platform) && multi_node) {
        return refuse("the mnnvl backend needs Blackwell, or SM90 on one node");
      }
      return FusionBackend::kMnnvl;
    case FusionBackendFlag::kUnset:
    case FusionBackendFlag::kNone:
      break;
  }
  return FusionBackend::kNone;
}

FusedCapacityRule CapacityRuleOf(FusionBackend backend) {
  return backend == FusionBackend::kMnnvl ? FusedCapacityRule::kMnnvl : FusedCapacityRule::kTrtllm;
}

CustomAgreedState CustomAllReduceLimits(const ServingArgs& args, const Platform& platform) {
  CustomAgreedState s;
  s.available = !args.disable_custom_all_reduce;
  s.max_inclusive = true;
  if (args.custom_all_reduce_v2) {
    // CustomAllReduceV2's tuned tables (configs/custom_all_reduce_v2.py:266-333
    // @ 0.5.23): SM90 serves 2-8 ranks, SM10x 2-8 and 16; its bound is
    // inclusive and clipped to the configured size.
    s.generation = 2;
    s.sm = platform.sm;
    s.world_sizes = 0;
    for (int w = 2; w <= 8; ++w) s.world_sizes |= 1u << w;
    if (IsSm10x(platform)) s.world_sizes |= 1u << 16;
    s.max_bytes = args.custom_all_reduce_v2_max_bytes;
  } else {
    // CustomAllreduce v1 (custom_all_reduce.py:41-42, 260-283 @ 0.5.23).
    s.generation = 1;
    s.world_sizes = (1u << 2) | (1u << 4) | (1u << 6) | (1u << 8);
    s.max_bytes = int64_t{8} << 20;
  }
  return s;
}

CustomAgreedState ChooseCustomGeneration(const CustomAgreedState& limits, int world, bool same_node,
                                         bool full_nvlink, bool one_clique) {
  CustomAgreedState s = limits;
  s.group_world_size = world;
  s.full_nvlink = full_nvlink;
  s.same_node = same_node;
  if (s.generation < 2) return s;
  const bool served = world >= 0 && world < 32 && (s.world_sizes >> world & 1u) != 0;
  if (served && (same_node ? full_nvlink : one_clique)) {
    s.graph_inputs = same_node;  // no graph-input registration across nodes
    s.same_node = true;          // one node, or one NVLink clique (v2 treats it as one)
    return s;
  }
  // v1's limits (custom_all_reduce.py:41-42, 260-283).
  ServingArgs v1;
  v1.custom_all_reduce_v2 = false;
  CustomAgreedState legacy = CustomAllReduceLimits(v1, Platform{});
  legacy.available = limits.available;
  legacy.group_world_size = world;
  legacy.full_nvlink = full_nvlink;
  legacy.same_node = same_node;
  return legacy;
}

BoundaryReduction ResolveBoundaryReduction(BoundaryReduction flag, std::string_view architecture) {
  if (flag != BoundaryReduction::kAuto) return flag;
  // _RSV_ARCHITECTURES and _AR_ARCHITECTURES (arg_groups/boundary_reduction.py:7-26).
  for (std::string_view a :
       {"BailingMoELinearForCausalLM", "BailingMoeV2_5ForCausalLM", "LongcatFlashForCausalLM",
        "LongcatFlashForCausalLMNextN", "Step3VLForConditionalGeneration"}) {
    if (architecture == a) return BoundaryReduction::kRsv;
  }
  for (std::string_view a :
       {"KimiK3ForConditionalGeneration", "KimiK3LinearForCausalLM", "Qwen3ForCausalLM",
        "Qwen3ForSequenceClassification", "Qwen3Model", "Qwen3ForRewardModel", "MossVLForCausalLM",
        "MossVLForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpForCausalLMMTP"}) {
    if (architecture == a) return BoundaryReduction::kAr;
  }
  return BoundaryReduction::kRsRsv;
}

}  // namespace lockstep
