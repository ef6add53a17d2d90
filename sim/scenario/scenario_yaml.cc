#include "sim/scenario/scenario_yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/scenario/did_you_mean.h"
#include "sim/scenario/input_text.h"

#ifndef LOCKSTEP_TOPOLOGIES_DIR
#define LOCKSTEP_TOPOLOGIES_DIR ""
#endif

namespace lockstep {
namespace {

namespace fs = std::filesystem;

std::string JoinViews(std::span<const std::string_view> views) {
  std::string out;
  for (std::string_view v : views) {
    if (!out.empty()) out += ", ";
    out.append(v);
  }
  return out;
}

// Reads typed values out of YAML maps, with errors that name file, line and
// the dotted key path.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  absl::Status Error(const YAML::Node& at, std::string_view key, std::string_view message) const {
    const int line = at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s: %s", file_, line, key, message));
  }

  // Every key of `map` must be in `allowed`.
  absl::Status CheckKeys(const YAML::Node& map, std::string_view path,
                         std::span<const std::string_view> allowed) const {
    if (!map.IsMap()) return Error(map, path, "expected a mapping of keys to values");
    std::vector<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      // yaml-cpp keeps both entries of a repeated key and lookups find the
      // first: refuse it rather than run on one of them silently.
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return Error(kv.first, Join(path, key), "duplicate key (each key may appear once)");
      }
      seen.push_back(key);
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      return Error(kv.first, Join(path, key),
                   absl::StrFormat("unknown key%s (known: %s)", DidYouMean(key, allowed),
                                   JoinViews(allowed)));
    }
    return absl::OkStatus();
  }

  static std::string Join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : absl::StrFormat("%s.%s", path, key);
  }

  template <typename T>
  absl::Status Int(const YAML::Node& map, std::string_view path, std::string_view key, T* out,
                   int64_t lo, int64_t hi) const {
    const YAML::Node n = map[std::string(key)];
    if (!n) return absl::OkStatus();
    const std::string k = Join(path, key);
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
      return Error(n, k, absl::StrFormat("expected an integer, got '%s'", Text(n)));
    }
    if (v < lo || v > hi) {
      return Error(n, k, absl::StrFormat("%d is out of range [%d, %d]", v, lo, hi));
    }
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }

  absl::Status Double(const YAML::Node& map, std::string_view path, std::string_view key,
                      double* out, double lo, double hi) const {
    const YAML::Node n = map[std::string(key)];
    if (!n) return absl::OkStatus();
    const std::string k = Join(path, key);
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= lo && v <= hi)) {
      return Error(n, k,
                   absl::StrFormat("expected a number in [%g, %g], got '%s'", lo, hi, Text(n)));
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status Bool(const YAML::Node& map, std::string_view path, std::string_view key,
                    bool* out) const {
    const YAML::Node n = map[std::string(key)];
    if (!n) return absl::OkStatus();
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      return Error(n, Join(path, key),
                   absl::StrFormat("expected true or false, got '%s'", Text(n)));
    }
    *out = v;
    return absl::OkStatus();
  }

  absl::Status String(const YAML::Node& map, std::string_view path, std::string_view key,
                      std::string* out) const {
    const YAML::Node n = map[std::string(key)];
    if (!n) return absl::OkStatus();
    if (!n.IsScalar()) return Error(n, Join(path, key), "expected a string");
    if (absl::Status utf8 = Utf8(n, Join(path, key)); !utf8.ok()) return utf8;
    *out = n.Scalar();
    return absl::OkStatus();
  }

  // A scalar's decoded text must be UTF-8 (escapes can make bytes that the
  // file's own text did not hold), or a report carrying it could not be
  // written (issue 11).
  absl::Status Utf8(const YAML::Node& n, std::string_view key) const {
    const std::string& text = n.Scalar();
    if (const std::optional<size_t> bad = FirstInvalidUtf8(text)) {
      return Error(n, key,
                   absl::StrFormat("the value %s is not valid UTF-8 (byte %d); write it in UTF-8",
                                   QuoteBytes(text), *bad));
    }
    return absl::OkStatus();
  }

  absl::Status Require(const YAML::Node& map, std::string_view path, std::string_view key) const {
    if (map[std::string(key)]) return absl::OkStatus();
    return Error(map, Join(path, key), "required key is missing");
  }

  static std::string Text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "null";
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

#define LS_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)

constexpr int64_t kMaxTokens = int64_t{1} << 24;

// Counts the documents of a YAML stream without building them, and keeps
// where the second one starts.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  const YAML::Mark& second() const { return second_; }

 private:
  int documents_ = 0;
  YAML::Mark second_ = YAML::Mark::null_mark();
};

absl::StatusOr<YAML::Node> LoadYaml(std::string_view text, const std::string& file) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    // A second document is refused rather than ignored (issue 11: Load reads
    // the first and drops the rest). Two parser steps at most: yaml-cpp's
    // LoadAll never ends on some malformed input (simulate_fuzzer found it
    // while this was written), each step here does.
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    DocumentCounter counter;
    if (parser.HandleNextDocument(counter) && parser.HandleNextDocument(counter)) {
      int line = counter.second().line;
      if (line < 0) {  // an empty document: the line of its "---"
        const size_t at = text.rfind("\n---");
        line = at == std::string_view::npos
                   ? 0
                   : static_cast<int>(std::count(text.begin(), text.begin() + at + 1, '\n'));
      }
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: (top level): a second YAML document (after '---'); a file holds one scenario: "
          "remove the second document or put it in its own file",
          file, line + 1));
    }
    return root;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d: malformed YAML: %s", file, e.mark.line + 1, e.msg));
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  return ReadInputFile(path, kMaxScenarioFileBytes, "scenario, hardware and model files");
}

// YAML text must be UTF-8: a parser that let other bytes through would write
// them back differently (a report's scenario would not be the one that ran).
absl::Status CheckUtf8(std::string_view text, const std::string& path, std::string_view what) {
  const std::optional<size_t> bad = FirstInvalidUtf8(text);
  if (!bad) return absl::OkStatus();
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + *bad, '\n'));
  return absl::InvalidArgumentError(
      absl::StrFormat("%s:%d: the %s is not valid UTF-8 (byte 0x%02x); YAML files must be UTF-8",
                      path, line, what, static_cast<unsigned char>(text[*bad])));
}

// A catalogue file (hardware, model): read, checked and parsed.
absl::StatusOr<YAML::Node> LoadYamlFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  LS_RETURN_IF_ERROR(CheckUtf8(*text, path, "file"));
  return LoadYaml(*text, path);
}

absl::Status ParseHop(const Reader& r, const YAML::Node& n, const std::string& path, HopSpec* hop) {
  static constexpr std::string_view kKeys[] = {"latency_us", "bandwidth_gbps", "source"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, path, kKeys));
  LS_RETURN_IF_ERROR(r.Require(n, path, "latency_us"));
  LS_RETURN_IF_ERROR(r.Require(n, path, "bandwidth_gbps"));
  LS_RETURN_IF_ERROR(r.Double(n, path, "latency_us", &hop->latency_us, 0.0, 1e6));
  return r.Double(n, path, "bandwidth_gbps", &hop->bandwidth_gbps, 1e-3, 1e6);
}

absl::Status ParseHardwareNode(const Reader& r, const YAML::Node& n, const std::string& path,
                               HardwareSpec* hw) {
  static constexpr std::string_view kKeys[] = {
      "name",   "description", "gpus_per_node", "nodes_per_domain", "max_gpus", "nvlink", "sm",
      "tflops", "hops",        "source"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, path, kKeys));
  for (std::string_view k : {"name", "gpus_per_node", "max_gpus", "hops"}) {
    LS_RETURN_IF_ERROR(r.Require(n, path, k));
  }
  LS_RETURN_IF_ERROR(r.String(n, path, "name", &hw->name));
  LS_RETURN_IF_ERROR(r.String(n, path, "description", &hw->description));
  LS_RETURN_IF_ERROR(r.Int(n, path, "gpus_per_node", &hw->gpus_per_node, 1, 1024));
  LS_RETURN_IF_ERROR(r.Int(n, path, "nodes_per_domain", &hw->nodes_per_domain, 1, 4096));
  LS_RETURN_IF_ERROR(r.Int(n, path, "max_gpus", &hw->max_gpus, 1, kMaxWorldSize));
  LS_RETURN_IF_ERROR(r.Bool(n, path, "nvlink", &hw->nvlink));
  LS_RETURN_IF_ERROR(r.Int(n, path, "sm", &hw->sm, 10, 200));
  LS_RETURN_IF_ERROR(r.Double(n, path, "tflops", &hw->tflops, 1e-3, 1e6));
  const YAML::Node hops = n["hops"];
  const std::string hops_path = Reader::Join(path, "hops");
  static constexpr std::string_view kHops[] = {"intra_node", "intra_domain", "network"};
  LS_RETURN_IF_ERROR(r.CheckKeys(hops, hops_path, kHops));
  LS_RETURN_IF_ERROR(r.Require(hops, hops_path, "intra_node"));
  LS_RETURN_IF_ERROR(
      ParseHop(r, hops["intra_node"], Reader::Join(hops_path, "intra_node"), &hw->intra_node));
  hw->intra_domain = hw->intra_node;
  hw->network = hw->intra_node;
  if (hops["intra_domain"]) {
    LS_RETURN_IF_ERROR(ParseHop(r, hops["intra_domain"], Reader::Join(hops_path, "intra_domain"),
                                &hw->intra_domain));
  }
  if (hops["network"]) {
    LS_RETURN_IF_ERROR(
        ParseHop(r, hops["network"], Reader::Join(hops_path, "network"), &hw->network));
  }
  return absl::OkStatus();
}

absl::Status ParseModelNode(const Reader& r, const YAML::Node& n, const std::string& path,
                            ModelSpec* m) {
  static constexpr std::string_view kKeys[] = {"name",
                                               "description",
                                               "hidden",
                                               "layers",
                                               "moe",
                                               "first_moe_layer",
                                               "ar_norm_fusion",
                                               "layer_gflops_per_token",
                                               "architecture",
                                               "embedding_attn_tp_under_dp",
                                               "draft_projection",
                                               "attention_heads",
                                               "source"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, path, kKeys));
  for (std::string_view k : {"name", "hidden", "layers"}) LS_RETURN_IF_ERROR(r.Require(n, path, k));
  LS_RETURN_IF_ERROR(r.String(n, path, "name", &m->name));
  LS_RETURN_IF_ERROR(r.Int(n, path, "hidden", &m->hidden, 1, kMaxModelHidden));
  LS_RETURN_IF_ERROR(r.Int(n, path, "layers", &m->layers, 1, kMaxModelLayers));
  LS_RETURN_IF_ERROR(r.Bool(n, path, "moe", &m->moe));
  LS_RETURN_IF_ERROR(r.Int(n, path, "attention_heads", &m->attention_heads, 1, kMaxAttentionHeads));
  LS_RETURN_IF_ERROR(r.Int(n, path, "first_moe_layer", &m->first_moe_layer, 0, kMaxModelLayers));
  LS_RETURN_IF_ERROR(r.Bool(n, path, "ar_norm_fusion", &m->ar_norm_fusion));
  LS_RETURN_IF_ERROR(r.String(n, path, "architecture", &m->architecture));
  LS_RETURN_IF_ERROR(r.Bool(n, path, "embedding_attn_tp_under_dp", &m->embedding_attn_tp_under_dp));
  if (const YAML::Node d = n["draft_projection"]) {
    const std::string key = Reader::Join(path, "draft_projection");
    if (!d.IsScalar()) return r.Error(d, key, "expected none, attn_tp or tp");
    if (d.Scalar() == "none") {
      m->draft_projection.reset();
    } else if (d.Scalar() == "attn_tp" || d.Scalar() == "tp") {
      m->draft_projection = d.Scalar() == "tp" ? GroupRole::kTp : GroupRole::kAttnTp;
    } else {
      return r.Error(d, key, absl::StrFormat("'%s' is not none, attn_tp or tp", Reader::Text(d)));
    }
  }
  return r.Double(n, path, "layer_gflops_per_token", &m->layer_gflops_per_token, 0, 1e6);
}

// A catalogue reference (a name) or an inline mapping.
template <typename Spec, typename ParseNode>
absl::Status ResolveEntry(const Reader& r, const YAML::Node& n, const std::string& key,
                          const std::string& catalogue, std::string_view folder, ParseNode parse,
                          Spec* out) {
  if (n.IsMap()) return parse(r, n, key, out);
  if (!n.IsScalar()) return r.Error(n, key, "expected a catalogue name or an inline mapping");
  const std::string name = n.Scalar();
  // A name, not a path: no separators, no leading dot (a scenario must not
  // read files outside the catalogue), UTF-8 (it reaches the report).
  if (name.empty() || name.front() == '.' || name.find_first_of("/\\") != std::string::npos ||
      name.find('\0') != std::string::npos || FirstInvalidUtf8(name)) {
    return r.Error(n, key,
                   absl::StrFormat("%s is not a catalogue name (a file name under %s/ without "
                                   "'.yaml', or an inline mapping)",
                                   QuoteBytes(name), folder));
  }
  const fs::path dir = fs::path(catalogue) / folder;
  const fs::path file = dir / (name + ".yaml");
  std::error_code ec;
  if (catalogue.empty() || !fs::exists(file, ec)) {
    std::vector<std::string> names;
    if (!catalogue.empty() && fs::is_directory(dir, ec)) {
      // increment(ec), not operator++: an unreadable entry ends the listing
      // instead of throwing out of the parser.
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
      }
    }
    std::sort(names.begin(), names.end());
    std::vector<std::string_view> views(names.begin(), names.end());
    return r.Error(
        n, key,
        absl::StrFormat("unknown %s '%s'%s (catalogue %s: %s)", folder, name,
                        DidYouMean(name, views), dir.string(),
                        names.empty() ? "empty or missing" : absl::StrJoin(names, ", ")));
  }
  absl::StatusOr<YAML::Node> root = LoadYamlFile(file.string());
  if (!root.ok()) return root.status();
  return parse(Reader(file.string()), *root, "", out);
}

absl::Status ParseParallel(const Reader& r, const YAML::Node& n, ParallelConfig* p) {
  static constexpr std::string_view kKeys[] = {"tp",     "pp",      "dp",    "attn_dp",     "ep",
                                               "moe_dp", "attn_cp", "world", "dp_attention"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, "parallel", kKeys));
  LS_RETURN_IF_ERROR(r.Require(n, "parallel", "tp"));
  for (auto [key, field] : {std::pair<std::string_view, int*>{"tp", &p->tp},
                            {"pp", &p->pp},
                            {"dp", &p->dp},
                            {"attn_dp", &p->attn_dp},
                            {"ep", &p->ep},
                            {"moe_dp", &p->moe_dp},
                            {"attn_cp", &p->attn_cp}}) {
    LS_RETURN_IF_ERROR(r.Int(n, "parallel", key, field, 1, kMaxWorldSize));
  }
  LS_RETURN_IF_ERROR(r.Int(n, "parallel", "world", &p->world, 1, kMaxWorldSize));
  LS_RETURN_IF_ERROR(r.Bool(n, "parallel", "dp_attention", &p->dp_attention));
  if (absl::Status s = ValidateParallelConfig(*p); !s.ok()) {
    return r.Error(n, "parallel", std::string(s.message()));
  }
  return absl::OkStatus();
}

absl::Status ParseDispatch(const Reader& r, const YAML::Node& n, DispatchSpec* d) {
  static constexpr std::string_view kKeys[] = {
      "fused_backend",       "max_tokens",       "dtype",  "custom_allreduce",
      "custom_allreduce_v2", "custom_max_bytes", "policy", "max_fused_norm_tokens",
      "boundary_reduction"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, "dispatch", kKeys));
  if (const YAML::Node f = n["fused_backend"]) {
    // true / false (as --enable-flashinfer-allreduce-fusion and its absence
    // once were), or the backend's name as --flashinfer-allreduce-fusion-backend takes it.
    bool on = false;
    if (f.IsScalar() && YAML::convert<bool>::decode(f, on)) {
      d->fused_backend = on ? FusionBackendFlag::kAuto : FusionBackendFlag::kNone;
    } else {
      absl::StatusOr<FusionBackendFlag> flag = f.IsScalar() && f.Scalar() != "unset"
                                                   ? ParseFusionBackendFlag(f.Scalar())
                                                   : absl::InvalidArgumentError(
                                                         "expected true, false, auto, trtllm, "
                                                         "mnnvl, cutedsl or none");
      if (!flag.ok()) {
        return r.Error(f, "dispatch.fused_backend", std::string(flag.status().message()));
      }
      d->fused_backend = *flag;
    }
  }
  LS_RETURN_IF_ERROR(r.Bool(n, "dispatch", "custom_allreduce_v2", &d->custom_allreduce_v2));
  if (const YAML::Node b = n["boundary_reduction"]) {
    absl::StatusOr<BoundaryReduction> reduction =
        b.IsScalar() ? ParseBoundaryReduction(b.Scalar())
                     : absl::InvalidArgumentError("expected auto, ar, rs, rsv or rs+rsv");
    if (!reduction.ok()) {
      return r.Error(b, "dispatch.boundary_reduction", std::string(reduction.status().message()));
    }
    d->boundary_reduction = *reduction;
  }
  LS_RETURN_IF_ERROR(r.Int(n, "dispatch", "max_tokens", &d->max_tokens, 1, kMaxTokens));
  LS_RETURN_IF_ERROR(r.Bool(n, "dispatch", "custom_allreduce", &d->custom_allreduce));
  LS_RETURN_IF_ERROR(
      r.Int(n, "dispatch", "custom_max_bytes", &d->custom_max_bytes, 16, int64_t{1} << 40));
  LS_RETURN_IF_ERROR(r.String(n, "dispatch", "policy", &d->policy));
  if (const YAML::Node p = n["policy"]; p && p.Mark().line >= 0) d->policy_line = p.Mark().line + 1;
  LS_RETURN_IF_ERROR(
      r.Int(n, "dispatch", "max_fused_norm_tokens", &d->max_fused_norm_tokens, 0, kMaxTokens));
  if (n["dtype"]) {
    absl::StatusOr<DType> dtype = ParseDType(n["dtype"].Scalar());
    if (!dtype.ok()) {
      return r.Error(n["dtype"], "dispatch.dtype", std::string(dtype.status().message()));
    }
    d->dtype = *dtype;
  }
  return absl::OkStatus();
}

absl::Status ParseTokenList(const Reader& r, const YAML::Node& n, const std::string& key,
                            std::vector<int64_t>* out) {
  out->clear();
  if (n.IsScalar()) {
    int64_t v = 0;
    if (!YAML::convert<int64_t>::decode(n, v)) {
      return r.Error(n, key,
                     absl::StrFormat("expected an integer or a list, got '%s'", n.Scalar()));
    }
    out->push_back(v);
  } else if (n.IsSequence() && n.size() > 0) {
    for (const YAML::Node& item : n) {
      int64_t v = 0;
      if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, v)) {
        return r.Error(item, key,
                       absl::StrFormat("expected integers, got '%s'", Reader::Text(item)));
      }
      out->push_back(v);
    }
  } else {
    return r.Error(n, key, "expected a token count or a non-empty list of them");
  }
  for (int64_t v : *out) {
    if (v < 1 || v > kMaxTokens) {
      return r.Error(n, key,
                     absl::StrFormat("token count %d is out of range [1, %d]", v, kMaxTokens));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseWorkload(const Reader& r, const YAML::Node& n, WorkloadSpec* w) {
  static constexpr std::string_view kKeys[] = {
      "steps",        "tokens",         "dp_tokens",
      "layers",       "embedding",      "speculative",
      "extend",       "data",           "ftz",
      "autotune",     "max_model_len",  "prompt_len",
      "draft_tokens", "abort_after_us", "cuda_graph_tokens",
      "sample_stride"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, "workload", kKeys));
  LS_RETURN_IF_ERROR(r.Int(n, "workload", "steps", &w->steps, 1, 1000000));
  LS_RETURN_IF_ERROR(r.Int(n, "workload", "layers", &w->layers, 1, 10000));
  LS_RETURN_IF_ERROR(r.Bool(n, "workload", "embedding", &w->embedding));
  LS_RETURN_IF_ERROR(r.Bool(n, "workload", "speculative", &w->speculative));
  LS_RETURN_IF_ERROR(r.Bool(n, "workload", "extend", &w->extend));
  LS_RETURN_IF_ERROR(r.Bool(n, "workload", "ftz", &w->ftz));
  LS_RETURN_IF_ERROR(r.Bool(n, "workload", "autotune", &w->autotune));
  LS_RETURN_IF_ERROR(r.Int(n, "workload", "max_model_len", &w->max_model_len, 0, int64_t{1} << 30));
  LS_RETURN_IF_ERROR(r.Int(n, "workload", "prompt_len", &w->prompt_len, 0, int64_t{1} << 30));
  LS_RETURN_IF_ERROR(r.Int(n, "workload", "draft_tokens", &w->draft_tokens, 1, 64));
  LS_RETURN_IF_ERROR(
      r.Int(n, "workload", "abort_after_us", &w->abort_after_us, 0, int64_t{3600} * 1000 * 1000));
  for (std::string_view key : {"max_model_len", "prompt_len", "draft_tokens"}) {
    if (n[std::string(key)] && !w->speculative) {
      return r.Error(n[std::string(key)], Reader::Join("workload", key),
                     "only the speculative draft step reads it: set workload.speculative: true "
                     "or drop it");
    }
  }
  if (n["tokens"])
    LS_RETURN_IF_ERROR(ParseTokenList(r, n["tokens"], "workload.tokens", &w->tokens));
  if (const YAML::Node g = n["cuda_graph_tokens"]) {
    LS_RETURN_IF_ERROR(ParseTokenList(r, g, "workload.cuda_graph_tokens", &w->cuda_graph_tokens));
    constexpr size_t kMaxGraphs = 64;
    if (w->cuda_graph_tokens.size() > kMaxGraphs) {
      return r.Error(g, "workload.cuda_graph_tokens",
                     absl::StrFormat("%d graph sizes; at most %d are captured (SGLang captures "
                                     "a few dozen)",
                                     w->cuda_graph_tokens.size(), kMaxGraphs));
    }
    for (size_t i = 1; i < w->cuda_graph_tokens.size(); ++i) {
      if (w->cuda_graph_tokens[i] <= w->cuda_graph_tokens[i - 1]) {
        return r.Error(g, "workload.cuda_graph_tokens",
                       "list the captured batch sizes once each, ascending (as "
                       "--cuda-graph-bs does)");
      }
    }
  }
  if (const YAML::Node dp = n["dp_tokens"]) {
    if (!dp.IsSequence() || dp.size() == 0) {
      return r.Error(dp, "workload.dp_tokens", "expected a list with one token list per DP group");
    }
    w->dp_tokens.clear();
    for (const YAML::Node& group : dp) {
      std::vector<int64_t> tokens;
      LS_RETURN_IF_ERROR(ParseTokenList(r, group, "workload.dp_tokens", &tokens));
      w->dp_tokens.push_back(std::move(tokens));
    }
  }
  if (const YAML::Node d = n["data"]) {
    if (d.IsScalar() && d.Scalar() == "provenance") {
      w->data = DataMode::kProvenance;
    } else if (d.IsScalar() && d.Scalar() == "numeric") {
      w->data = DataMode::kNumeric;
    } else if (d.IsScalar() && d.Scalar() == "sampled") {
      w->data = DataMode::kSampled;
    } else {
      return r.Error(
          d, "workload.data",
          absl::StrFormat("expected provenance, numeric or sampled, got '%s'", Reader::Text(d)));
    }
  }
  if (const YAML::Node stride = n["sample_stride"]) {
    LS_RETURN_IF_ERROR(
        r.Int(n, "workload", "sample_stride", &w->sample_stride, 8, int64_t{1} << 20));
    if ((w->sample_stride & (w->sample_stride - 1)) != 0) {
      return r.Error(stride, "workload.sample_stride",
                     absl::StrFormat("expected a power of two, got %d (try %d)", w->sample_stride,
                                     std::bit_floor(static_cast<uint64_t>(w->sample_stride))));
    }
    if (w->data != DataMode::kSampled) {
      return r.Error(stride, "workload.sample_stride",
                     "only sampled data reads it: set workload.data: sampled or drop it");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseFaults(const Reader& r, const YAML::Node& n, int world,
                         std::vector<FaultSpec>* faults) {
  if (!n.IsSequence()) return r.Error(n, "faults", "expected a list of faults");
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node f = n[i];
    const std::string key = absl::StrFormat("faults[%d]", i);
    if (!f.IsMap()) return r.Error(f, key, "expected a mapping with at least 'kind'");
    LS_RETURN_IF_ERROR(r.Require(f, key, "kind"));
    FaultSpec spec;
    spec.line = f.Mark().line + 1;
    std::vector<std::string> seen;
    for (const auto& kv : f) {
      if (!kv.first.IsScalar()) return r.Error(kv.first, key, "expected a key name");
      const std::string k = kv.first.Scalar();
      const std::string path = Reader::Join(key, k);
      LS_RETURN_IF_ERROR(r.Utf8(kv.first, key));
      // A repeated key, or rank beside ranks, would be merged or dropped
      // silently (issue 11): refused, as duplicates are everywhere else.
      const bool rank_key = k == "rank" || k == "ranks";
      for (const std::string& other : seen) {
        if (other == k) {
          return r.Error(kv.first, path, "duplicate key (each key may appear once)");
        }
        if (rank_key && (other == "rank" || other == "ranks")) {
          return r.Error(
              kv.first, path,
              absl::StrFormat("given with '%s' too: list every rank under 'ranks'", other));
        }
      }
      seen.push_back(k);
      if (k == "kind") {
        if (!kv.second.IsScalar()) return r.Error(kv.second, path, "expected a fault kind name");
        LS_RETURN_IF_ERROR(r.Utf8(kv.second, path));
        spec.kind = kv.second.Scalar();
      } else if (k == "ranks" || k == "rank") {
        std::vector<int64_t> ranks;
        if (kv.second.IsScalar()) {
          int64_t v = 0;
          if (!YAML::convert<int64_t>::decode(kv.second, v)) {
            return r.Error(kv.second, path, "expected a rank number or a list of them");
          }
          ranks.push_back(v);
        } else if (kv.second.IsSequence()) {
          for (const YAML::Node& item : kv.second) {
            int64_t v = 0;
            if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, v)) {
              return r.Error(item, path, "expected rank numbers");
            }
            ranks.push_back(v);
          }
        } else {
          return r.Error(kv.second, path, "expected a rank number or a list of them");
        }
        for (int64_t v : ranks) {
          if (v < 0 || v >= world) {
            return r.Error(kv.second, path,
                           absl::StrFormat("rank %d is outside the world of %d ranks", v, world));
          }
          spec.ranks.push_back(static_cast<int>(v));
        }
      } else if (k == "at_call") {
        LS_RETURN_IF_ERROR(r.Int(f, key, "at_call", &spec.at_call, 0, int64_t{1} << 40));
      } else if (k == "at_step") {
        LS_RETURN_IF_ERROR(r.Int(f, key, "at_step", &spec.at_step, 0, int64_t{1} << 40));
      } else if (k == "at_layer") {
        LS_RETURN_IF_ERROR(r.Int(f, key, "at_layer", &spec.at_layer, 0, int64_t{1} << 40));
      } else if (k == "at_site") {
        if (!kv.second.IsScalar()) {
          return r.Error(kv.second, path, "expected a call-site name (attn_out, moe, ...)");
        }
        LS_RETURN_IF_ERROR(r.Utf8(kv.second, path));
        spec.at_site = kv.second.Scalar();
      } else if (k == "at_phase") {
        if (!kv.second.IsScalar()) {
          return r.Error(kv.second, path, "expected eager, capture or replay");
        }
        LS_RETURN_IF_ERROR(r.Utf8(kv.second, path));
        spec.at_phase = kv.second.Scalar();
      } else {
        if (!kv.second.IsScalar()) return r.Error(kv.second, path, "expected a scalar parameter");
        LS_RETURN_IF_ERROR(r.Utf8(kv.second, path));
        spec.params[k] = kv.second.Scalar();
      }
    }
    faults->push_back(std::move(spec));
  }
  return absl::OkStatus();
}

}  // namespace

std::string FindCatalogue(const std::string& scenario_path) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(scenario_path), ec).parent_path();
  for (int depth = 0; depth < 8 && !dir.empty(); ++depth) {
    if (fs::is_directory(dir / "hardware", ec) && fs::is_directory(dir / "models", ec)) {
      return dir.string();
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return LOCKSTEP_TOPOLOGIES_DIR;
}

absl::StatusOr<Scenario> ParseScenario(std::string_view text, const std::string& path,
                                       const std::string& catalogue) {
  LS_RETURN_IF_ERROR(CheckUtf8(text, path, "scenario"));
  absl::StatusOr<YAML::Node> root = LoadYaml(text, path);
  if (!root.ok()) return root.status();
  const Reader r(path);
  const YAML::Node& n = *root;
  if (!n.IsMap()) return r.Error(n, "(top level)", "a scenario is a mapping of keys to values");
  static constexpr std::string_view kKeys[] = {"version",  "name",     "description", "hardware",
                                               "parallel", "model",    "dispatch",    "workload",
                                               "faults",   "timeouts", "memory",      "expect"};
  LS_RETURN_IF_ERROR(r.CheckKeys(n, "", kKeys));
  for (std::string_view k : {"name", "hardware", "parallel", "model"}) {
    LS_RETURN_IF_ERROR(r.Require(n, "", k));
  }
  Scenario s;
  s.path = path;
  s.source = std::string(text);
  LS_RETURN_IF_ERROR(r.Int(n, "", "version", &s.version, 1, 1));
  LS_RETURN_IF_ERROR(r.String(n, "", "name", &s.name));
  LS_RETURN_IF_ERROR(r.String(n, "", "description", &s.description));
  LS_RETURN_IF_ERROR(ResolveEntry(r, n["hardware"], "hardware", catalogue, "hardware",
                                  ParseHardwareNode, &s.hardware));
  LS_RETURN_IF_ERROR(ParseParallel(r, n["parallel"], &s.parallel));
  const int64_t world = s.parallel.WorldSize();
  if (world > s.hardware.max_gpus) {
    return r.Error(n["parallel"], "parallel",
                   absl::StrFormat("the layout needs %d GPUs but hardware '%s' has %d", world,
                                   s.hardware.name, s.hardware.max_gpus));
  }
  LS_RETURN_IF_ERROR(
      ResolveEntry(r, n["model"], "model", catalogue, "models", ParseModelNode, &s.model));
  if (absl::Status h = ValidateAttentionHeads(s.parallel, s.model.attention_heads); !h.ok()) {
    return r.Error(n["parallel"], "parallel", std::string(h.message()));
  }
  if (s.model.moe) {
    if (absl::Status m = ValidateMoeModelConstruction(s.parallel); !m.ok()) {
      return r.Error(n["parallel"], "parallel", std::string(m.message()));
    }
  }
  if (n["dispatch"]) LS_RETURN_IF_ERROR(ParseDispatch(r, n["dispatch"], &s.dispatch));
  if (n["workload"]) LS_RETURN_IF_ERROR(ParseWorkload(r, n["workload"], &s.workload));
  // A row must keep elements: a fault's rows and a rank's rows carry their
  // element classes and values only on kept elements.
  if (const int64_t row = std::max<int64_t>(s.model.hidden, 8); s.workload.sample_stride > row) {
    return r.Error(n["workload"]["sample_stride"], "workload.sample_stride",
                   absl::StrFormat("%d is wider than a row (model.hidden %d), so some rows "
                                   "would keep no element: use at most %d",
                                   s.workload.sample_stride, s.model.hidden,
                                   std::bit_floor(static_cast<uint64_t>(row))));
  }
  if (s.workload.abort_after_us > 0 && s.parallel.pp > 1) {
    return r.Error(n["workload"]["abort_after_us"], "workload.abort_after_us",
                   "request timeouts are modelled for one pipeline stage (later stages take "
                   "their batch from the first stage's scheduler, which lockstep does not "
                   "model yet): use pp: 1 or drop it");
  }
  if (!s.workload.cuda_graph_tokens.empty()) {
    const YAML::Node at = n["workload"]["cuda_graph_tokens"];
    if (s.workload.extend) {
      return r.Error(at, "workload.cuda_graph_tokens",
                     "CUDA graphs are captured for decode batches (SGLang's "
                     "cuda_graph_runner); an extend workload runs eagerly: drop one of them");
    }
    if (s.parallel.pp > 1) {
      return r.Error(at, "workload.cuda_graph_tokens",
                     "CUDA graphs are modelled for one pipeline stage (each stage's graph and "
                     "its activation hand-off are not modelled yet): use pp: 1 or drop it");
    }
  }
  if (!s.workload.dp_tokens.empty()) {
    // Per-group token counts mean attention-DP groups: one list per group.
    const int attn_dp = DeriveWidths(s.parallel).attn_dp;
    const YAML::Node at = n["workload"]["dp_tokens"];
    if (attn_dp <= 1) {
      return r.Error(at, "workload.dp_tokens",
                     "per-DP-group token counts need attention DP (parallel.attn_dp > 1, or "
                     "the deprecated dp > 1 with dp_attention: true); use workload.tokens "
                     "otherwise");
    }
    if (static_cast<int>(s.workload.dp_tokens.size()) != attn_dp) {
      return r.Error(at, "workload.dp_tokens",
                     absl::StrFormat("%d token lists for %d attention-DP groups: give one list "
                                     "per group",
                                     s.workload.dp_tokens.size(), attn_dp));
    }
  }
  if (const int layers = s.workload.layers > 0 ? s.workload.layers : s.model.layers;
      layers < s.parallel.pp) {
    return r.Error(n["parallel"], "parallel.pp",
                   absl::StrFormat("pp=%d stages but only %d layers: every stage needs a layer",
                                   s.parallel.pp, layers));
  }
  if (n["faults"]) {
    LS_RETURN_IF_ERROR(ParseFaults(r, n["faults"], static_cast<int>(world), &s.faults));
  }
  if (const YAML::Node t = n["timeouts"]) {
    static constexpr std::string_view kTimeoutKeys[] = {"kernel_wait_ms", "watchdog_ms"};
    LS_RETURN_IF_ERROR(r.CheckKeys(t, "timeouts", kTimeoutKeys));
    LS_RETURN_IF_ERROR(
        r.Double(t, "timeouts", "kernel_wait_ms", &s.timeouts.kernel_wait_ms, 1e-3, 1e9));
    LS_RETURN_IF_ERROR(r.Double(t, "timeouts", "watchdog_ms", &s.timeouts.watchdog_ms, 1e-3, 1e9));
  }
  if (const YAML::Node m = n["memory"]) {
    absl::StatusOr<MemoryModel> model = ParseMemoryModel(Reader::Text(m));
    if (!model.ok()) return r.Error(m, "memory", std::string(model.status().message()));
    s.memory = *model;
  }
  if (const YAML::Node e = n["expect"]) {
    if (!e.IsScalar()) return r.Error(e, "expect", "expected a verdict name");
    absl::StatusOr<Verdict> v = ParseVerdict(e.Scalar());
    if (!v.ok()) return r.Error(e, "expect", std::string(v.status().message()));
    s.expect = *v;
  }
  return s;
}

absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path, const std::string& catalogue) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseScenario(*text, path, catalogue.empty() ? FindCatalogue(path) : catalogue);
}

absl::StatusOr<HardwareSpec> LoadHardwareFile(const std::string& path) {
  absl::StatusOr<YAML::Node> root = LoadYamlFile(path);
  if (!root.ok()) return root.status();
  HardwareSpec hw;
  LS_RETURN_IF_ERROR(ParseHardwareNode(Reader(path), *root, "", &hw));
  return hw;
}

absl::StatusOr<ModelSpec> LoadModelFile(const std::string& path) {
  absl::StatusOr<YAML::Node> root = LoadYamlFile(path);
  if (!root.ok()) return root.status();
  ModelSpec m;
  LS_RETURN_IF_ERROR(ParseModelNode(Reader(path), *root, "", &m));
  return m;
}

namespace {

// `out << Text{s}`: free text (names, the description, fault parameters) as
// a scalar that reads back to the same bytes. yaml-cpp writes a plain scalar
// when its characters allow one, and a plain scalar loses some control
// characters on the way back: "a\r" then a line break reads back as "a" then
// a CRLF break, one carriage return fewer per write (the scenario parser
// fuzzer found it). Such text is written double-quoted, where yaml-cpp
// escapes every control character; other text keeps the style yaml-cpp
// picks, so the catalogue's YAML is unchanged.
struct Text {
  const std::string& text;
};
YAML::Emitter& operator<<(YAML::Emitter& out, Text t) {
  const bool control = std::any_of(t.text.begin(), t.text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\n') || byte == 0x7f;
  });
  if (control) out << YAML::DoubleQuoted;
  return out << t.text;
}

}  // namespace

std::string ScenarioToYaml(const Scenario& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << 1;
  out << YAML::Key << "name" << YAML::Value << Text{s.name};
  if (!s.description.empty()) {
    out << YAML::Key << "description" << YAML::Value << Text{s.description};
  }
  auto hop = [&](const char* key, const HopSpec& h) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
        << "latency_us" << YAML::Value << h.latency_us << YAML::Key << "bandwidth_gbps"
        << YAML::Value << h.bandwidth_gbps << YAML::EndMap;
  };
  const HardwareSpec& hw = s.hardware;
  out << YAML::Key << "hardware" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << Text{hw.name};
  out << YAML::Key << "gpus_per_node" << YAML::Value << hw.gpus_per_node;
  out << YAML::Key << "nodes_per_domain" << YAML::Value << hw.nodes_per_domain;
  out << YAML::Key << "max_gpus" << YAML::Value << hw.max_gpus;
  out << YAML::Key << "nvlink" << YAML::Value << hw.nvlink;
  out << YAML::Key << "sm" << YAML::Value << hw.sm;
  out << YAML::Key << "tflops" << YAML::Value << hw.tflops;
  out << YAML::Key << "hops" << YAML::Value << YAML::BeginMap;
  hop("intra_node", hw.intra_node);
  hop("intra_domain", hw.intra_domain);
  hop("network", hw.network);
  out << YAML::EndMap << YAML::EndMap;
  const ParallelConfig& p = s.parallel;
  out << YAML::Key << "parallel" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "tp" << YAML::Value << p.tp << YAML::Key << "pp" << YAML::Value << p.pp;
  out << YAML::Key << "dp" << YAML::Value << p.dp << YAML::Key << "attn_dp" << YAML::Value
      << p.attn_dp << YAML::Key << "ep" << YAML::Value << p.ep;
  out << YAML::Key << "moe_dp" << YAML::Value << p.moe_dp << YAML::Key << "attn_cp" << YAML::Value
      << p.attn_cp;
  out << YAML::Key << "dp_attention" << YAML::Value << p.dp_attention << YAML::EndMap;
  const ModelSpec& m = s.model;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << Text{m.name};
  out << YAML::Key << "hidden" << YAML::Value << m.hidden;
  out << YAML::Key << "layers" << YAML::Value << m.layers;
  out << YAML::Key << "moe" << YAML::Value << m.moe;
  if (m.attention_heads > 0)
    out << YAML::Key << "attention_heads" << YAML::Value << m.attention_heads;
  out << YAML::Key << "first_moe_layer" << YAML::Value << m.first_moe_layer;
  out << YAML::Key << "ar_norm_fusion" << YAML::Value << m.ar_norm_fusion;
  if (!m.architecture.empty()) {
    out << YAML::Key << "architecture" << YAML::Value << Text{m.architecture};
  }
  out << YAML::Key << "embedding_attn_tp_under_dp" << YAML::Value << m.embedding_attn_tp_under_dp;
  out << YAML::Key << "draft_projection" << YAML::Value
      << (m.draft_projection ? std::string(GroupRoleName(*m.draft_projection)) : "none");
  if (m.layer_gflops_per_token > 0) {
    out << YAML::Key << "layer_gflops_per_token" << YAML::Value << m.layer_gflops_per_token;
  }
  out << YAML::EndMap;
  const DispatchSpec& d = s.dispatch;
  out << YAML::Key << "dispatch" << YAML::Value << YAML::BeginMap;
  if (d.fused_backend != FusionBackendFlag::kUnset) {
    out << YAML::Key << "fused_backend" << YAML::Value
        << std::string(FusionBackendFlagName(d.fused_backend));
  }
  out << YAML::Key << "max_tokens" << YAML::Value << d.max_tokens;
  out << YAML::Key << "dtype" << YAML::Value << std::string(DTypeName(d.dtype));
  out << YAML::Key << "custom_allreduce" << YAML::Value << d.custom_allreduce;
  out << YAML::Key << "custom_allreduce_v2" << YAML::Value << d.custom_allreduce_v2;
  out << YAML::Key << "boundary_reduction" << YAML::Value
      << std::string(BoundaryReductionName(d.boundary_reduction));
  if (d.custom_max_bytes > 0) {
    out << YAML::Key << "custom_max_bytes" << YAML::Value << d.custom_max_bytes;
  }
  out << YAML::Key << "policy" << YAML::Value << Text{d.policy};
  out << YAML::Key << "max_fused_norm_tokens" << YAML::Value << d.max_fused_norm_tokens;
  out << YAML::EndMap;
  const WorkloadSpec& w = s.workload;
  out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "steps" << YAML::Value << w.steps;
  out << YAML::Key << "tokens" << YAML::Value << YAML::Flow << w.tokens;
  if (!w.dp_tokens.empty()) {
    out << YAML::Key << "dp_tokens" << YAML::Value << YAML::Flow << w.dp_tokens;
  }
  if (w.layers > 0) out << YAML::Key << "layers" << YAML::Value << w.layers;
  out << YAML::Key << "embedding" << YAML::Value << w.embedding;
  out << YAML::Key << "speculative" << YAML::Value << w.speculative;
  out << YAML::Key << "extend" << YAML::Value << w.extend;
  out << YAML::Key << "data" << YAML::Value
      << (w.data == DataMode::kNumeric   ? "numeric"
          : w.data == DataMode::kSampled ? "sampled"
                                         : "provenance");
  if (w.sample_stride > 0) out << YAML::Key << "sample_stride" << YAML::Value << w.sample_stride;
  out << YAML::Key << "ftz" << YAML::Value << w.ftz;
  if (w.autotune) out << YAML::Key << "autotune" << YAML::Value << w.autotune;
  if (w.abort_after_us > 0) {
    out << YAML::Key << "abort_after_us" << YAML::Value << w.abort_after_us;
  }
  if (!w.cuda_graph_tokens.empty()) {
    out << YAML::Key << "cuda_graph_tokens" << YAML::Value << YAML::Flow << w.cuda_graph_tokens;
  }
  if (w.speculative) {
    if (w.max_model_len > 0) out << YAML::Key << "max_model_len" << YAML::Value << w.max_model_len;
    if (w.prompt_len > 0) out << YAML::Key << "prompt_len" << YAML::Value << w.prompt_len;
    if (w.draft_tokens != 1) out << YAML::Key << "draft_tokens" << YAML::Value << w.draft_tokens;
  }
  out << YAML::EndMap;
  out << YAML::Key << "timeouts" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "kernel_wait_ms" << YAML::Value << s.timeouts.kernel_wait_ms;
  out << YAML::Key << "watchdog_ms" << YAML::Value << s.timeouts.watchdog_ms << YAML::EndMap;
  if (!s.faults.empty()) {
    out << YAML::Key << "faults" << YAML::Value << YAML::BeginSeq;
    for (const FaultSpec& f : s.faults) {
      out << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "kind" << YAML::Value << Text{f.kind};
      if (!f.ranks.empty()) out << YAML::Key << "ranks" << YAML::Value << YAML::Flow << f.ranks;
      if (f.at_call >= 0) out << YAML::Key << "at_call" << YAML::Value << f.at_call;
      if (f.at_step >= 0) out << YAML::Key << "at_step" << YAML::Value << f.at_step;
      if (f.at_layer >= 0) out << YAML::Key << "at_layer" << YAML::Value << f.at_layer;
      if (!f.at_site.empty()) out << YAML::Key << "at_site" << YAML::Value << Text{f.at_site};
      if (!f.at_phase.empty()) out << YAML::Key << "at_phase" << YAML::Value << Text{f.at_phase};
      for (const auto& [k, v] : f.params) out << YAML::Key << Text{k} << YAML::Value << Text{v};
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (s.memory != MemoryModel::kImmediate) {
    out << YAML::Key << "memory" << YAML::Value << std::string(MemoryModelName(s.memory));
  }
  if (s.expect) out << YAML::Key << "expect" << YAML::Value << std::string(VerdictName(*s.expect));
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string_view MemoryModelName(MemoryModel model) {
  return model == MemoryModel::kRelaxed ? "relaxed" : "immediate";
}

absl::StatusOr<MemoryModel> ParseMemoryModel(std::string_view name) {
  if (name == "immediate") return MemoryModel::kImmediate;
  if (name == "relaxed") return MemoryModel::kRelaxed;
  return absl::InvalidArgumentError(
      "expected immediate (a store is visible to its peer at once) or relaxed (stores reach "
      "peers late and out of order, docs/SIMULATOR.md), got '" +
      std::string(name) + "'");
}

}  // namespace lockstep
