#include "sim/scenario/serving_import.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "sim/scenario/did_you_mean.h"
#include "sim/scenario/input_text.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// One option of a program's parser: the flag, the value it sets, how many
// values it takes (argparse's nargs: "0", "1", "?", "+", "*").
struct FlagSpec {
  std::string flag;
  std::string dest;
  std::string nargs;
};

// What the command line set: dest -> the flag as given and its values.
struct Given {
  std::string flag;
  std::vector<std::string> values;
};
using ParsedFlags = std::map<std::string, Given>;

absl::Status Usage(std::string_view program, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", program, what));
}

absl::StatusOr<std::vector<FlagSpec>> LoadFlagTable(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, kMaxScenarioFileBytes, "flag tables");
  if (!text.ok()) return text.status();
  std::vector<FlagSpec> specs;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string> cols = absl::StrSplit(line, '\t');
    if (cols.size() != 3 || !absl::StartsWith(cols[0], "-")) {
      return absl::InternalError(
          absl::StrFormat("%s:%d: expected FLAG<TAB>DEST<TAB>NARGS", path, line_no));
    }
    specs.push_back({cols[0], cols[1], cols[2]});
  }
  return specs;
}

// Reads `args` as argparse does with allow_abbrev: `--flag value`,
// `--flag=value`, a unique prefix of a long flag; values until the next flag
// for nargs + and *. `positional` (vLLM's model) takes one bare argument.
absl::StatusOr<ParsedFlags> ParseFlags(std::span<const std::string> args,
                                       const std::vector<FlagSpec>& specs, std::string_view program,
                                       std::string_view positional) {
  ParsedFlags out;
  std::vector<std::string_view> names;
  for (const FlagSpec& s : specs) names.push_back(s.flag);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg.front() != '-') {
      if (!positional.empty() && out.count(std::string(positional)) == 0) {
        out[std::string(positional)] = Given{"(positional)", {arg}};
        continue;
      }
      return Usage(program, absl::StrFormat("unexpected argument '%s'", arg));
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); eq != std::string::npos && absl::StartsWith(arg, "--")) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (s.flag == name) spec = &s;
    }
    if (spec == nullptr && absl::StartsWith(name, "--")) {
      std::vector<const FlagSpec*> prefixed;
      for (const FlagSpec& s : specs) {
        if (absl::StartsWith(s.flag, name)) prefixed.push_back(&s);
      }
      std::set<std::string> dests;
      for (const FlagSpec* s : prefixed) dests.insert(s->dest);
      if (dests.size() > 1) {
        std::vector<std::string> matches;
        for (const FlagSpec* s : prefixed) matches.push_back(s->flag);
        return Usage(program, absl::StrFormat("ambiguous option %s could match %s", name,
                                              absl::StrJoin(matches, ", ")));
      }
      if (!prefixed.empty()) spec = prefixed.front();
    }
    if (spec == nullptr) {
      return Usage(program, absl::StrFormat("unknown flag %s%s", name, DidYouMean(name, names)));
    }
    Given given{name, {}};
    if (spec->nargs == "0") {
      if (inline_value) {
        return Usage(program, absl::StrFormat("%s takes no value (got '%s')", name, *inline_value));
      }
      given.values.push_back("true");
    } else if (inline_value) {
      given.values.push_back(*inline_value);
    } else {
      const bool many = spec->nargs == "+" || spec->nargs == "*";
      while (i + 1 < args.size() && !absl::StartsWith(args[i + 1], "--") &&
             (many || given.values.empty())) {
        given.values.push_back(args[++i]);
      }
      if (given.values.empty() && (spec->nargs == "1" || spec->nargs == "+")) {
        return Usage(program, absl::StrFormat("%s expects a value", name));
      }
    }
    const auto [it, inserted] = out.emplace(spec->dest, given);
    if (!inserted) {
      return Usage(program, absl::StrFormat("%s %s and %s %s set the same option: give it once",
                                            it->second.flag, absl::StrJoin(it->second.values, " "),
                                            name, absl::StrJoin(given.values, " ")));
    }
  }
  return out;
}

class Flags {
 public:
  Flags(ParsedFlags parsed, std::string program)
      : parsed_(std::move(parsed)), program_(std::move(program)) {}

  bool Has(const std::string& dest) const { return parsed_.count(dest) != 0; }
  const Given* Get(const std::string& dest) {
    used_.insert(dest);
    const auto it = parsed_.find(dest);
    return it == parsed_.end() ? nullptr : &it->second;
  }
  absl::StatusOr<int> Int(const std::string& dest, int fallback, int lo = 1, int hi = 1 << 16) {
    const Given* g = Get(dest);
    if (g == nullptr) return fallback;
    int v = 0;
    if (g->values.size() != 1 || !absl::SimpleAtoi(g->values.front(), &v) || v < lo || v > hi) {
      return Usage(program_, absl::StrFormat("%s: '%s' is not an integer from %d to %d", g->flag,
                                             absl::StrJoin(g->values, " "), lo, hi));
    }
    return v;
  }
  std::optional<std::string> String(const std::string& dest) {
    const Given* g = Get(dest);
    if (g == nullptr || g->values.empty()) return std::nullopt;
    return g->values.front();
  }
  bool Bool(const std::string& dest) { return Get(dest) != nullptr; }
  // Flags given that nothing read: not modelled.
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    for (const auto& [dest, g] : parsed_) {
      if (used_.count(dest) == 0) out.push_back(g.flag);
    }
    return out;
  }
  const std::string& program() const { return program_; }

 private:
  ParsedFlags parsed_;
  std::set<std::string> used_;
  std::string program_;
};

absl::StatusOr<DType> DtypeOf(std::string_view name, std::string_view program,
                              std::string_view flag) {
  const std::string n = absl::AsciiStrToLower(std::string(name));
  if (n == "bfloat16" || n == "bf16") return DType::kBf16;
  if (n == "float16" || n == "half" || n == "fp16") return DType::kFp16;
  if (n == "float32" || n == "float" || n == "fp32") return DType::kFp32;
  return Usage(program, absl::StrFormat("%s %s: lockstep models bfloat16, float16 and float32 "
                                        "activations",
                                        flag, name));
}

// The architectures whose SGLang 0.5.23 model reduces the embedding over
// attention TP under DP attention (the catalogue's models say which).
bool EmbeddingOnAttnTp(std::string_view architecture) {
  return architecture == "DeepseekV3ForCausalLM" || architecture == "DeepseekV2ForCausalLM" ||
         architecture == "DeepseekV4ForCausalLM" || architecture == "Qwen3MoeForCausalLM";
}

// The model's shape: a config.json (given, or next to the model path), else
// the catalogue model named like the model path's last component.
absl::StatusOr<ModelSpec> ResolveModel(const std::string& model_path, const ImportOptions& options,
                                       std::string_view program, std::vector<std::string>& notes) {
  std::string config = options.model_config;
  if (config.empty() && !model_path.empty()) {
    const fs::path candidate = fs::path(model_path) / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) config = candidate.string();
  }
  const std::string base = model_path.empty() ? "" : fs::path(model_path).filename().string();
  if (!config.empty()) {
    absl::StatusOr<std::string> text =
        ReadInputFile(config, kMaxScenarioFileBytes, "model configs");
    if (!text.ok()) return text.status();
    if (!JsonNestedAtMost(*text, 16)) {
      return Usage(program, absl::StrFormat("%s: not a Hugging Face config.json", config));
    }
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return Usage(program, absl::StrFormat("%s: not a Hugging Face config.json", config));
    }
    // Multimodal configs nest the language model's.
    const nlohmann::json& c =
        j.contains("text_config") && j["text_config"].is_object() ? j["text_config"] : j;
    // The integer `key`, when the config gives one (HF writes null for
    // unset fields), in [lo, hi]: a value outside is refused, naming the
    // key, rather than cut to fit.
    auto integer = [&](std::string_view key, int64_t lo,
                       int64_t hi) -> absl::StatusOr<std::optional<int64_t>> {
      const auto it = c.find(key);
      if (it == c.end() || !it->is_number_integer()) return std::nullopt;
      const bool in_range = it->is_number_unsigned()
                                ? it->get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                                      it->get<uint64_t>() >= static_cast<uint64_t>(lo)
                                : it->get<int64_t>() >= lo && it->get<int64_t>() <= hi;
      if (!in_range) {
        return Usage(program, absl::StrFormat("%s: %s %s is out of range [%d, %d]", config, key,
                                              it->dump(), lo, hi));
      }
      return std::optional<int64_t>(it->get<int64_t>());
    };
    ModelSpec m;
    m.name = base.empty() ? fs::path(config).parent_path().filename().string() : base;
    if (m.name.empty()) m.name = "model";
    const absl::StatusOr<std::optional<int64_t>> hidden =
        integer("hidden_size", 1, kMaxModelHidden);
    if (!hidden.ok()) return hidden.status();
    const absl::StatusOr<std::optional<int64_t>> layers =
        integer("num_hidden_layers", 1, kMaxModelLayers);
    if (!layers.ok()) return layers.status();
    if (!*hidden || !*layers) {
      return Usage(program,
                   absl::StrFormat("%s: needs integer hidden_size and num_hidden_layers", config));
    }
    m.hidden = **hidden;
    m.layers = static_cast<int>(**layers);
    const absl::StatusOr<std::optional<int64_t>> heads =
        integer("num_attention_heads", 1, kMaxAttentionHeads);
    if (!heads.ok()) return heads.status();
    if (*heads) m.attention_heads = static_cast<int>(**heads);
    for (std::string_view key : {"n_routed_experts", "num_experts", "num_local_experts"}) {
      const absl::StatusOr<std::optional<int64_t>> experts = integer(key, 0, int64_t{1} << 20);
      if (!experts.ok()) return experts.status();
      if (*experts && **experts > 0) m.moe = true;
    }
    const absl::StatusOr<std::optional<int64_t>> dense =
        integer("first_k_dense_replace", 0, kMaxModelLayers);
    if (!dense.ok()) return dense.status();
    // A config cut to fewer layers than its dense prefix (a debugging copy of
    // DeepSeek-V3's, say) keeps its last layer MoE.
    if (m.moe && *dense)
      m.first_moe_layer = static_cast<int>(std::min<int64_t>(**dense, m.layers - 1));
    const auto arch = j.find("architectures");
    if (arch != j.end() && arch->is_array() && !arch->empty() && arch->front().is_string()) {
      m.architecture = arch->front().get<std::string>();
    }
    m.ar_norm_fusion = m.architecture != "DeepseekV4ForCausalLM";
    m.embedding_attn_tp_under_dp = EmbeddingOnAttnTp(m.architecture);
    notes.push_back(absl::StrFormat(
        "model: %s from %s (hidden %d, %d layers%s, architecture %s)", m.name, config, m.hidden,
        m.layers, m.moe ? absl::StrFormat(", MoE from layer %d", m.first_moe_layer) : "",
        m.architecture.empty() ? "not given" : m.architecture));
    return m;
  }
  const std::string name = absl::AsciiStrToLower(base);
  const fs::path file = fs::path(options.catalogue) / "models" / (name + ".yaml");
  std::error_code ec;
  if (name.empty() || !fs::is_regular_file(file, ec)) {
    return Usage(program,
                 absl::StrFormat("no model shape for '%s': no config.json next to it and no "
                                 "catalogue model '%s' (%s); give --model-config CONFIG_JSON",
                                 model_path.empty() ? "(no model given)" : model_path, name,
                                 (fs::path(options.catalogue) / "models").string()));
  }
  absl::StatusOr<ModelSpec> m = LoadModelFile(file.string());
  if (!m.ok()) return m.status();
  notes.push_back(absl::StrFormat("model: the catalogue's %s", m->name));
  return m;
}

// The hardware: named, else one node of 8 H200s for up to 8 ranks.
absl::StatusOr<HardwareSpec> ResolveHardware(const ImportOptions& options, int64_t world,
                                             std::string_view program,
                                             std::vector<std::string>& notes) {
  std::string name = options.hardware;
  if (name.empty()) {
    if (world > 8) {
      return Usage(program,
                   absl::StrFormat("a world of %d ranks spans nodes: name the hardware with "
                                   "--hardware (e.g. gb200-nvl72, two-nvl72-racks; catalogue "
                                   "%s)",
                                   world, (fs::path(options.catalogue) / "hardware").string()));
    }
    name = "h200x8";
    notes.push_back("hardware: h200x8 (not given: one node of eight H200; --hardware NAME)");
  }
  if (name.empty() || name.find_first_of("/\\") != std::string::npos || name.front() == '.') {
    return Usage(program, absl::StrFormat("--hardware '%s' is not a catalogue name", name));
  }
  return LoadHardwareFile((fs::path(options.catalogue) / "hardware" / (name + ".yaml")).string());
}

// The decode batch sizes a deployment captures graphs for, as the
// workload's token counts (at most four of them: smallest, two between,
// largest).
std::vector<int64_t> TokensOf(std::vector<int64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() <= 4) return sizes;
  return {sizes.front(), sizes[sizes.size() / 3], sizes[2 * sizes.size() / 3], sizes.back()};
}

absl::StatusOr<std::vector<int64_t>> IntList(const Given& g, std::string_view program) {
  std::vector<int64_t> out;
  for (const std::string& v : g.values) {
    for (absl::string_view piece : absl::StrSplit(v, absl::ByAnyChar(", []"), absl::SkipEmpty())) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(piece, &n) || n < 1 || n > (1 << 20)) {
        return Usage(program, absl::StrFormat("%s: '%s' is not a list of batch sizes", g.flag, v));
      }
      out.push_back(n);
    }
  }
  return out;
}

// The imported workload: two decode steps, over the model's first layers (two,
// or through the first two MoE layers), at the batch sizes the deployment
// captures graphs for: `sizes_flag`'s list, else 1, 8 and `max_flag` (256
// when that is not given either). SGLang and vLLM differ only in the flags'
// names.
absl::Status SetDecodeWorkload(Flags& f, const std::string& sizes_flag, const std::string& max_flag,
                               Scenario& s) {
  WorkloadSpec& w = s.workload;
  w.steps = 2;
  w.layers = std::min(s.model.layers, s.model.moe ? s.model.first_moe_layer + 2 : 2);
  std::vector<int64_t> sizes;
  if (const Given* bs = f.Get(sizes_flag)) {
    absl::StatusOr<std::vector<int64_t>> list = IntList(*bs, f.program());
    if (!list.ok()) return list.status();
    sizes = *std::move(list);
  }
  absl::StatusOr<int> max_bs = f.Int(max_flag, 0, 1, 1 << 20);
  if (!max_bs.ok()) return max_bs.status();
  if (sizes.empty()) sizes = {1, 8, *max_bs > 0 ? *max_bs : 256};
  w.tokens = TokensOf(std::move(sizes));
  return absl::OkStatus();
}

// The scenario, written and read back: whatever lockstep's own validation
// refuses (the layout, the hardware's size) is refused here, with its message.
absl::StatusOr<ImportedScenario> Finish(Scenario s, std::vector<std::string> notes,
                                        const ImportOptions& options) {
  s.version = 1;
  if (options.name.empty()) {
    s.name = absl::StrFormat("imported-%s-%s", s.parallel.ShortName(), s.model.name);
  } else {
    s.name = options.name;
  }
  ImportedScenario out;
  out.yaml = ScenarioToYaml(s);
  absl::StatusOr<Scenario> back = ParseScenario(out.yaml, s.name + ".yaml", options.catalogue);
  if (!back.ok()) return back.status();
  out.scenario = *std::move(back);
  out.notes = std::move(notes);
  return out;
}

}  // namespace

absl::StatusOr<ImportedScenario> ImportSglangFlags(std::span<const std::string> args,
                                                   const ImportOptions& options) {
  const std::string program = "sglang.launch_server 0.5.23";
  absl::StatusOr<std::vector<FlagSpec>> table =
      LoadFlagTable((fs::path(options.catalogue) / "import" / "sglang-0.5.23-flags.tsv").string());
  if (!table.ok()) return table.status();
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(args, *table, program, "");
  if (!parsed.ok()) return parsed.status();
  Flags f(*std::move(parsed), program);
  std::vector<std::string> notes;

  // Paths lockstep does not implement: a deployment on them is not the one
  // lockstep would check.
  static constexpr std::pair<std::string_view, std::string_view> kElsewhere[] = {
      {"enable_mscclpp", "the all-reduce would run on MSCCL++"},
      {"enable_torch_symm_mem", "the all-reduce would run on PyTorch symmetric memory"},
      {"enable_symm_mem", "NCCL would run on symmetric memory registrations"},
      {"enable_nccl_nvls", "NCCL would use NVLink SHARP (multicast)"},
      {"enable_pdmux", "prefill/decode multiplexing splits the communicators"},
      {"enable_two_batch_overlap", "two-batch overlap splits every step into micro-batches"},
  };
  for (const auto& [dest, why] : kElsewhere) {
    if (f.Bool(std::string(dest))) {
      return Usage(program, absl::StrFormat("lockstep cannot represent %s: %s, which it does not "
                                            "model; drop the flag to check the rest",
                                            f.Get(std::string(dest))->flag, why));
    }
  }
  if (const std::optional<std::string> a2a = f.String("moe_a2a_backend"); a2a && *a2a != "none") {
    return Usage(program, absl::StrFormat("lockstep cannot represent --moe-a2a-backend %s: the "
                                          "MoE would dispatch tokens all-to-all, which it does "
                                          "not model; drop the flag to check the rest",
                                          *a2a));
  }

  Scenario s;
  ParallelConfig& p = s.parallel;
  absl::StatusOr<int> v = f.Int("tp_size", 1);
  if (!v.ok()) return v.status();
  p.tp = *v;
  for (auto [dest, field] : {std::pair<const char*, int*>{"pp_size", &p.pp},
                             {"dp_size", &p.dp},
                             {"attn_dp_size", &p.attn_dp},
                             {"ep_size", &p.ep},
                             {"moe_dp_size", &p.moe_dp},
                             {"attn_cp_size", &p.attn_cp}}) {
    absl::StatusOr<int> x = f.Int(dest, 1);
    if (!x.ok()) return x.status();
    *field = *x;
  }
  p.dp_attention = f.Bool("enable_dp_attention");
  absl::StatusOr<int> nnodes = f.Int("nnodes", 1);
  if (!nnodes.ok()) return nnodes.status();
  f.Get("node_rank");
  f.Get("dist_init_addr");

  // The model and its shape.
  const std::optional<std::string> model_path = f.String("model_path");
  absl::StatusOr<ModelSpec> model = ResolveModel(model_path.value_or(""), options, program, notes);
  if (!model.ok()) return model.status();
  s.model = *std::move(model);

  // Dispatch.
  DispatchSpec& d = s.dispatch;
  if (const std::optional<std::string> backend = f.String("flashinfer_allreduce_fusion_backend")) {
    absl::StatusOr<FusionBackendFlag> flag = ParseFusionBackendFlag(*backend);
    if (!flag.ok()) {
      return Usage(program, absl::StrFormat("--flashinfer-allreduce-fusion-backend %s: %s",
                                            *backend, flag.status().message()));
    }
    if (f.Bool("enable_flashinfer_allreduce_fusion")) {
      return Usage(program,
                   "--enable-flashinfer-allreduce-fusion and --flashinfer-allreduce-fusion-backend "
                   "both choose the fusion backend: give one");
    }
    d.fused_backend = *flag;
  } else if (f.Bool("enable_flashinfer_allreduce_fusion")) {
    d.fused_backend = FusionBackendFlag::kAuto;
  }
  d.custom_allreduce = !f.Bool("disable_custom_all_reduce");
  if (const std::optional<std::string> reduction = f.String("boundary_reduction")) {
    absl::StatusOr<BoundaryReduction> r = ParseBoundaryReduction(*reduction);
    if (!r.ok()) {
      return Usage(program, absl::StrFormat("--boundary-reduction %s: %s", *reduction,
                                            r.status().message()));
    }
    d.boundary_reduction = *r;
  }
  const std::optional<std::string> dtype = f.String("dtype");
  if (dtype && *dtype != "auto") {
    absl::StatusOr<DType> t = DtypeOf(*dtype, program, "--dtype");
    if (!t.ok()) return t.status();
    d.dtype = *t;
  } else {
    notes.push_back("dtype: bfloat16 (--dtype auto: the checkpoint's; give --dtype to change)");
  }

  // The workload: decode steps at the captured batch sizes.
  if (absl::Status st = SetDecodeWorkload(f, "cuda_graph_bs_decode", "cuda_graph_max_bs_decode", s);
      !st.ok()) {
    return st;
  }
  WorkloadSpec& w = s.workload;
  notes.push_back(absl::StrFormat("workload: 2 decode steps of %s tokens over %d layers",
                                  absl::StrJoin(w.tokens, ", "), w.layers));
  if (const std::optional<std::string> spec = f.String("speculative_algorithm")) {
    const std::string algo = absl::AsciiStrToUpper(*spec);
    if (algo == "EAGLE" || algo == "EAGLE3" || algo == "NEXTN" || algo == "MTP") {
      w.speculative = true;
      s.model.draft_projection = GroupRole::kAttnTp;
      notes.push_back(absl::StrFormat(
          "speculative decoding (%s): the draft model's projection after the last layer, "
          "reduced over attention TP",
          *spec));
    } else {
      notes.push_back(absl::StrFormat(
          "--speculative-algorithm %s: no draft model projection to reduce; not modelled", *spec));
    }
  }
  f.Get("speculative_num_steps");
  f.Get("speculative_eagle_topk");
  f.Get("speculative_draft_model_path");
  // The speculative skip near the context limit (docs/FAULTS.md, "The
  // speculative skip"): the limit and the draft's length, when drafting.
  if (!w.speculative) {
    f.Get("speculative_num_draft_tokens");
  } else {
    absl::StatusOr<int> context = f.Int("context_length", 0, 1, 1 << 30);
    if (!context.ok()) return context.status();
    absl::StatusOr<int> draft = f.Int("speculative_num_draft_tokens", 0, 1, 1 << 16);
    if (!draft.ok()) return draft.status();
    w.max_model_len = *context;
    if (*draft > 0) w.draft_tokens = *draft;
    if (*context > 0) {
      notes.push_back(absl::StrFormat(
          "--context-length %d: the draft is skipped once a sequence plus %d draft tokens "
          "passes it (workload.max_model_len; set workload.prompt_len to a prompt near the "
          "limit to reach the skip)",
          *context, w.draft_tokens));
    }
  }

  const int64_t world = p.WorldSize();
  absl::StatusOr<HardwareSpec> hw = ResolveHardware(options, world, program, notes);
  if (!hw.ok()) return hw.status();
  s.hardware = *std::move(hw);
  if (*nnodes > 1 && s.hardware.gpus_per_node * *nnodes < world) {
    return Usage(program, absl::StrFormat("--nnodes %d of %s (%d GPUs each) hold fewer than the "
                                          "%d ranks of tp %d x pp %d",
                                          *nnodes, s.hardware.name, s.hardware.gpus_per_node, world,
                                          p.tp, p.pp));
  }
  std::vector<std::string> unread = f.Unread();
  if (!unread.empty()) {
    notes.push_back(
        absl::StrFormat("not modelled (no effect on the all-reduce dispatch lockstep "
                        "checks): %s",
                        absl::StrJoin(unread, " ")));
  }
  s.description = absl::StrFormat("imported from sglang.launch_server %s",
                                  absl::StrJoin(args.begin(), args.end(), " "));
  return Finish(std::move(s), std::move(notes), options);
}

absl::StatusOr<ImportedScenario> ImportVllmFlags(std::span<const std::string> args,
                                                 const ImportOptions& options) {
  const std::string program = "vllm serve";
  // The vllm serve flags lockstep reads, and those it knows change nothing
  // it models. Any other flag is refused: lockstep does not carry vLLM's
  // whole parser.
  static const std::vector<FlagSpec> kSpecs = {
      {"--model", "model", "1"},
      {"--tensor-parallel-size", "tp", "1"},
      {"-tp", "tp", "1"},
      {"--pipeline-parallel-size", "pp", "1"},
      {"-pp", "pp", "1"},
      {"--data-parallel-size", "dp", "1"},
      {"-dp", "dp", "1"},
      {"--enable-expert-parallel", "ep", "0"},
      {"-ep", "ep", "0"},
      {"--dtype", "dtype", "1"},
      {"--disable-custom-all-reduce", "disable_custom_all_reduce", "0"},
      {"--compilation-config", "compilation_config", "1"},
      {"-O", "compilation_config", "1"},
      {"--cuda-graph-sizes", "cuda_graph_sizes", "+"},
      {"--max-num-seqs", "max_num_seqs", "1"},
      {"--speculative-config", "speculative_config", "1"},
      {"--enforce-eager", "enforce_eager", "0"},
      // Known, and without effect on the dispatch lockstep models.
      {"--host", "host", "1"},
      {"--port", "port", "1"},
      {"--gpu-memory-utilization", "gpu_memory_utilization", "1"},
      {"--max-model-len", "max_model_len", "1"},
      {"--trust-remote-code", "trust_remote_code", "0"},
      {"--served-model-name", "served_model_name", "+"},
      {"--api-key", "api_key", "1"},
      {"--seed", "seed", "1"},
      {"--kv-cache-dtype", "kv_cache_dtype", "1"},
      {"--quantization", "quantization", "1"},
      {"--max-num-batched-tokens", "max_num_batched_tokens", "1"},
      {"--enable-prefix-caching", "enable_prefix_caching", "0"},
      {"--enable-chunked-prefill", "enable_chunked_prefill", "0"},
      {"--tokenizer", "tokenizer", "1"},
      {"--revision", "revision", "1"},
      {"--download-dir", "download_dir", "1"},
      {"--load-format", "load_format", "1"},
      {"--block-size", "block_size", "1"},
      {"--disable-log-requests", "disable_log_requests", "0"},
      {"--disable-log-stats", "disable_log_stats", "0"},
      {"--distributed-executor-backend", "distributed_executor_backend", "1"},
  };
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(args, kSpecs, program, "model");
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s (lockstep reads the vllm serve flags that map onto what it models; "
                        "docs/IMPORT.md lists them)",
                        parsed.status().message()));
  }
  Flags f(*std::move(parsed), program);
  std::vector<std::string> notes;
  Scenario s;
  absl::StatusOr<int> tp = f.Int("tp", 1), pp = f.Int("pp", 1), dp = f.Int("dp", 1);
  for (const auto* x : {&tp, &pp, &dp}) {
    if (!x->ok()) return x->status();
  }
  const bool ep = f.Bool("ep");
  ParallelConfig& p = s.parallel;
  p.pp = *pp;
  if (ep && *dp > 1) {
    // vLLM's data-parallel attention with expert-parallel MoE over every
    // rank of the replica: SGLang's DP attention spelling of it.
    p.tp = *tp * *dp;
    p.attn_dp = *dp;
    p.ep = p.tp;
    notes.push_back(absl::StrFormat(
        "layout: vLLM dp %d x tp %d with expert parallelism is attention DP %d over %d ranks "
        "with EP %d (lockstep's reference groups are SGLang's)",
        *dp, *tp, *dp, p.tp, p.ep));
  } else {
    p.tp = *tp;
    p.dp = *dp;
    if (ep) p.ep = *tp;
    if (*dp > 1) {
      notes.push_back(
          absl::StrFormat("layout: dp %d without expert parallelism: independent "
                          "replicas",
                          *dp));
    }
  }
  const std::optional<std::string> model_path = f.String("model");
  absl::StatusOr<ModelSpec> model = ResolveModel(model_path.value_or(""), options, program, notes);
  if (!model.ok()) return model.status();
  s.model = *std::move(model);
  DispatchSpec& d = s.dispatch;
  // vLLM's custom all-reduce is the one-node kernel SGLang's v1 generation
  // inherited.
  d.custom_allreduce = !f.Bool("disable_custom_all_reduce");
  d.custom_allreduce_v2 = false;
  notes.push_back(
      "custom all-reduce: vLLM's, modelled as SGLang's v1 generation (the same kernel)");
  d.fused_backend = FusionBackendFlag::kNone;
  if (const std::optional<std::string> config = f.String("compilation_config")) {
    if (!JsonNestedAtMost(*config, 16)) {
      return Usage(program, "--compilation-config: not a JSON object");
    }
    const nlohmann::json j = nlohmann::json::parse(*config, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      const auto pass = j.find("pass_config");
      if (pass != j.end() && pass->is_object()) {
        const auto fuse = pass->find("enable_fi_allreduce_fusion");
        if (fuse != pass->end() && fuse->is_boolean() && fuse->get<bool>()) {
          d.fused_backend = FusionBackendFlag::kTrtllm;
          notes.push_back(
              "fusion: vLLM's FlashInfer all-reduce fusion pass, modelled as FlashInfer's "
              "trtllm backend with SGLang 0.5.23's predicates");
        }
      }
    } else if (j.is_number_integer()) {
      notes.push_back(
          absl::StrFormat("-O %s: an optimisation level; no fusion pass named", *config));
    } else {
      return Usage(program, absl::StrFormat("--compilation-config '%s': not JSON", *config));
    }
  }
  if (const std::optional<std::string> dtype = f.String("dtype"); dtype && *dtype != "auto") {
    absl::StatusOr<DType> t = DtypeOf(*dtype, program, "--dtype");
    if (!t.ok()) return t.status();
    d.dtype = *t;
  }
  if (absl::Status st = SetDecodeWorkload(f, "cuda_graph_sizes", "max_num_seqs", s); !st.ok()) {
    return st;
  }
  WorkloadSpec& w = s.workload;
  if (f.Bool("enforce_eager")) notes.push_back("--enforce-eager: no CUDA graphs (not modelled)");
  if (const std::optional<std::string> spec = f.String("speculative_config")) {
    absl::StatusOr<int> max_len = f.Int("max_model_len", 0, 1, 1 << 30);
    if (!max_len.ok()) return max_len.status();
    w.speculative = true;
    s.model.draft_projection = GroupRole::kAttnTp;
    notes.push_back("speculative decoding: the draft projection reduced over attention TP");
    // vLLM's SpeculativeConfig: num_speculative_tokens is the draft's length.
    // vLLM reads the flag as a JSON object of its fields (json.loads) and
    // refuses anything else.
    const nlohmann::json config = JsonNestedAtMost(*spec, 16)
                                      ? nlohmann::json::parse(*spec, nullptr, false)
                                      : nlohmann::json(nlohmann::json::value_t::discarded);
    if (!config.is_object()) {
      return Usage(program,
                   absl::StrFormat("--speculative-config %s: not a JSON object of "
                                   "SpeculativeConfig's fields, e.g. "
                                   "'{\"method\": \"eagle\", \"num_speculative_tokens\": 3}'",
                                   QuoteBytes(*spec)));
    }
    if (config.contains("num_speculative_tokens")) {
      const nlohmann::json& k = config["num_speculative_tokens"];
      if (!k.is_number_integer() || k.get<int64_t>() < 1 || k.get<int64_t>() > (1 << 16)) {
        return Usage(program, absl::StrFormat("--speculative-config: num_speculative_tokens "
                                              "must be an integer in [1, %d]",
                                              1 << 16));
      }
      w.draft_tokens = k.get<int64_t>();
    }
    w.max_model_len = *max_len;
    if (*max_len > 0) {
      notes.push_back(absl::StrFormat(
          "--max-model-len %d: the draft is skipped once a sequence plus %d draft tokens "
          "passes it (workload.max_model_len)",
          *max_len, w.draft_tokens));
    }
  }
  absl::StatusOr<HardwareSpec> hw = ResolveHardware(options, p.WorldSize(), program, notes);
  if (!hw.ok()) return hw.status();
  s.hardware = *std::move(hw);
  std::vector<std::string> unread = f.Unread();
  if (!unread.empty()) {
    notes.push_back(
        absl::StrFormat("not modelled (no effect on the all-reduce dispatch lockstep "
                        "checks): %s",
                        absl::StrJoin(unread, " ")));
  }
  s.description =
      absl::StrFormat("imported from vllm serve %s", absl::StrJoin(args.begin(), args.end(), " "));
  return Finish(std::move(s), std::move(notes), options);
}

}  // namespace lockstep
