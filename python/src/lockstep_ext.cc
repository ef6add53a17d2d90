// lockstep._lockstep_ext: the C++ types of lockstep, seen from Python.
//
// A thin layer: every answer comes from the dispatch core, the simulator and
// faults/ exactly as the command line gets it (the same functions, the same
// JSON); this file only converts values and errors. The pure-Python package
// (python/lockstep/) re-exports it and adds the errors, the pytest plugin and
// DecisionRecorder. API: docs/PYTHON.md.

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/budget.h"
#include "cli/build_info.h"
#include "dispatch/decision.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"
#include "dispatch/policy.h"
#include "dispatch/serving_args.h"
#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "nlohmann/json.hpp"
#include "sim/report/decision_log.h"
#include "sim/report/layout_report.h"
#include "sim/report/report.h"
#include "sim/run_estimate.h"
#include "sim/scenario/did_you_mean.h"
#include "sim/scenario/finding.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/serving_import.h"
#include "sim/simulation.h"

#ifndef LOCKSTEP_SOURCE_TOPOLOGIES
#define LOCKSTEP_SOURCE_TOPOLOGIES ""
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace lockstep::python {
namespace {

// ---- Errors: C++ exceptions the translator turns into lockstep.errors.* ----

enum class ErrorKind { kScenario, kConfig, kPolicy, kBudget, kInternal };

struct Error : std::runtime_error {
  Error(ErrorKind k, const std::string& message) : std::runtime_error(message), kind(k) {}
  ErrorKind kind;
};

[[noreturn]] void Raise(ErrorKind kind, const absl::Status& status) {
  // InvalidArgument and NotFound are bad input; anything else is lockstep's.
  const bool input = status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kNotFound ||
                     status.code() == absl::StatusCode::kOutOfRange ||
                     status.code() == absl::StatusCode::kFailedPrecondition;
  throw Error(input ? kind : ErrorKind::kInternal, std::string(status.message()));
}

template <typename T>
T Unwrap(absl::StatusOr<T> value, ErrorKind kind) {
  if (!value.ok()) Raise(kind, value.status());
  return *std::move(value);
}

void Check(const absl::Status& status, ErrorKind kind) {
  if (!status.ok()) Raise(kind, status);
}

const char* ErrorClassName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kScenario:
      return "ScenarioError";
    case ErrorKind::kConfig:
      return "ConfigError";
    case ErrorKind::kPolicy:
      return "PolicyError";
    case ErrorKind::kBudget:
      return "BudgetError";
    case ErrorKind::kInternal:
      break;
  }
  return "LockstepError";
}

// ---- JSON and YAML as Python values ---------------------------------------

nb::object ToPython(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::boolean:
      return nb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return nb::cast(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return nb::cast(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return nb::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return nb::cast(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      nb::list out;
      for (const nlohmann::json& v : j) out.append(ToPython(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      nb::dict out;
      for (const auto& [k, v] : j.items()) out[nb::cast(k)] = ToPython(v);
      return out;
    }
    default:
      return nb::none();
  }
}

// Python data (dict, list, tuple, str, int, float, bool, None) as JSON;
// anything else is a ScenarioError naming where it was met.
nlohmann::json FromPython(nb::handle h, const std::string& where, int depth = 0) {
  if (depth > 64) throw Error(ErrorKind::kScenario, where + ": nested more than 64 deep");
  if (h.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::int_>(h)) {
    int64_t v = 0;
    if (!nb::try_cast<int64_t>(h, v)) {
      throw Error(ErrorKind::kScenario, where + ": integer out of the 64-bit range");
    }
    return v;
  }
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::dict>(h)) {
    nlohmann::json out = nlohmann::json::object();
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(k)) {
        throw Error(ErrorKind::kScenario, absl::StrFormat("%s: key %s is not a string", where,
                                                          nb::cast<std::string>(nb::repr(k))));
      }
      const std::string key = nb::cast<std::string>(k);
      out[key] = FromPython(v, where.empty() ? key : where + "." + key, depth + 1);
    }
    return out;
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    nlohmann::json out = nlohmann::json::array();
    size_t i = 0;
    for (nb::handle v : h) {
      out.push_back(FromPython(v, absl::StrFormat("%s[%d]", where, i), depth + 1));
      ++i;
    }
    return out;
  }
  throw Error(ErrorKind::kScenario,
              absl::StrFormat("%s: a value of type %s is not scenario data (dict, list, str, "
                              "int, float, bool or None)",
                              where.empty() ? "(top level)" : where,
                              nb::cast<std::string>(nb::str(h.type().attr("__name__")))));
}

// JSON as block YAML; strings always quoted, so that "true" or "4" stay
// strings when the scenario parser reads them back.
void EmitYaml(YAML::Emitter& out, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    case nlohmann::json::value_t::boolean:
      out << j.get<bool>();
      break;
    case nlohmann::json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case nlohmann::json::value_t::number_float:
      out << YAML::DoublePrecision(17) << j.get<double>();
      break;
    case nlohmann::json::value_t::string:
      out << YAML::DoubleQuoted << j.get<std::string>();
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const nlohmann::json& v : j) EmitYaml(out, v);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key << k << YAML::Value;
        EmitYaml(out, v);
      }
      out << YAML::EndMap;
      break;
    default:
      out << YAML::Null;
  }
}

// A YAML scalar as the scenario parser would read it: quoted text is a
// string; plain text a bool, null, integer or number when it reads as one.
nb::object ScalarToPython(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return nb::cast(s);
  if (s == "true") return nb::bool_(true);
  if (s == "false") return nb::bool_(false);
  if (s == "~" || s == "null" || s.empty()) return nb::none();
  int64_t i = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && end == s.data() + s.size()) return nb::cast(i);
  char* stop = nullptr;
  const double d = std::strtod(s.c_str(), &stop);
  if (stop == s.c_str() + s.size() && s.find_first_of("0123456789") != std::string::npos) {
    return nb::float_(d);
  }
  return nb::cast(s);
}

nb::object YamlToPython(const YAML::Node& n) {
  if (n.IsMap()) {
    nb::dict out;
    for (const auto& kv : n) out[nb::cast(kv.first.Scalar())] = YamlToPython(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    nb::list out;
    for (const auto& v : n) out.append(YamlToPython(v));
    return out;
  }
  if (n.IsScalar()) return ScalarToPython(n);
  return nb::none();
}

// ---- The catalogue (hardware/, models/) -----------------------------------

std::string& PackagedCatalogue() {
  static std::string dir;
  return dir;
}

bool IsCatalogue(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() &&
         std::filesystem::is_directory(std::filesystem::path(dir) / "hardware", ec) &&
         std::filesystem::is_directory(std::filesystem::path(dir) / "models", ec);
}

// The catalogue a scenario given as text names its hardware and models in:
// the one installed with the package, else the source tree's.
std::string DefaultCatalogue() {
  if (IsCatalogue(PackagedCatalogue())) return PackagedCatalogue();
  return LOCKSTEP_SOURCE_TOPOLOGIES;
}

std::string CatalogueFor(const std::optional<std::string>& catalogue, const std::string& path) {
  if (catalogue && !catalogue->empty()) return *catalogue;
  if (!path.empty()) {
    std::string found = FindCatalogue(path);
    if (IsCatalogue(found)) return found;
  }
  return DefaultCatalogue();
}

// ---- Scenarios -------------------------------------------------------------

Scenario ScenarioFromFile(const std::string& path, const std::optional<std::string>& catalogue) {
  return Unwrap(LoadScenarioFile(path, CatalogueFor(catalogue, path)), ErrorKind::kScenario);
}

Scenario ScenarioFromYaml(const std::string& text, const std::string& path,
                          const std::optional<std::string>& catalogue) {
  return Unwrap(ParseScenario(text, path, CatalogueFor(catalogue, "")), ErrorKind::kScenario);
}

std::string DictToYaml(nb::handle data) {
  if (!nb::isinstance<nb::dict>(data)) {
    throw Error(ErrorKind::kScenario,
                "<dict>: (top level): a scenario is a dict of keys to values");
  }
  const nlohmann::json j = FromPython(data, "");
  YAML::Emitter out;
  EmitYaml(out, j);
  return std::string(out.c_str()) + "\n";
}

Scenario ScenarioFromDict(nb::handle data, const std::optional<std::string>& catalogue) {
  return Unwrap(ParseScenario(DictToYaml(data), "<dict>", CatalogueFor(catalogue, "")),
                ErrorKind::kScenario);
}

nb::object ScenarioToDict(const Scenario& s) {
  YAML::Node root;
  try {
    root = YAML::Load(ScenarioToYaml(s));
  } catch (const YAML::Exception& e) {
    throw Error(ErrorKind::kInternal, std::string("scenario YAML does not read back: ") + e.what());
  }
  return YamlToPython(root);
}

// A scenario edited field by field from Python is checked the way a file is:
// its YAML must parse back (file, line and key in the error).
void Revalidate(const Scenario& s) {
  const std::string label = (s.path.empty() ? s.name : s.path) + " (as edited)";
  Unwrap(ParseScenario(ScenarioToYaml(s), label, ""), ErrorKind::kScenario);
}

// ---- Simulation ------------------------------------------------------------

const PolicyRegistry& Registry() {
  static const PolicyRegistry* registry = new PolicyRegistry(faults::MakePolicyRegistry());
  return *registry;
}

void CheckPolicy(const std::string& name) {
  if (name.empty()) return;
  Unwrap(Registry().Create(name), ErrorKind::kPolicy);
}

struct SimReport {
  Scenario scenario;
  SimOptions options;
  SimResult result;
  nlohmann::json report;

  std::string verdict() const { return std::string(VerdictName(result.verdict)); }
  std::optional<std::string> expected() const {
    if (!scenario.expect) return std::nullopt;
    return std::string(VerdictName(*scenario.expect));
  }
  bool as_expected() const { return AsExpected(scenario, result.verdict); }
  std::string explanation() const { return FormatResult(scenario, options, result); }
  std::optional<std::string> detector() const {
    if (!result.detector) return std::nullopt;
    return std::string(DetectorOf(*result.detector).name);
  }
  nb::object details_key(const char* key) const {
    if (result.details.is_object() && result.details.contains(key)) {
      return ToPython(result.details[key]);
    }
    return nb::none();
  }
};

SimReport RunSimulation(const Scenario& scenario, uint64_t seed,
                        const std::optional<std::string>& policy, const std::string& schedule,
                        bool swarm, bool exact, bool keep_trace,
                        const std::optional<std::string>& max_memory) {
  Revalidate(scenario);
  SimReport r;
  r.scenario = scenario;
  r.options.seed = seed;
  r.options.policy = policy.value_or("");
  r.options.schedule = schedule;
  r.options.exact_provenance = exact;
  r.options.keep_trace = keep_trace;
  CheckPolicy(r.options.policy);
  const cli::MemoryBudget budget =
      Unwrap(cli::ResolveMemoryBudget(max_memory.value_or("")), ErrorKind::kBudget);
  {
    // Errors below are C++ exceptions, translated once the GIL is back.
    nb::gil_scoped_release release;
    if (swarm) {
      absl::StatusOr<Scenario> drawn = faults::WithSwarmFaults(r.scenario, seed);
      if (!drawn.ok()) Raise(ErrorKind::kScenario, drawn.status());
      r.scenario = *std::move(drawn);
    } else if (absl::Status s = faults::CheckFaultsFire(r.scenario, Registry(), r.options.policy);
               !s.ok()) {
      Raise(ErrorKind::kScenario, s);
    }
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(r.scenario.parallel);
    if (!layout.ok()) Raise(ErrorKind::kScenario, layout.status());
    const std::string what = r.scenario.path.empty() ? r.scenario.name : r.scenario.path;
    if (absl::Status s = cli::CheckMemory(what, EstimateRunMemory(r.scenario, *layout, r.options),
                                          1, 0, "", budget);
        !s.ok()) {
      Raise(ErrorKind::kBudget, s);
    }
    absl::StatusOr<SimResult> result =
        faults::SimulateWithFaults(r.scenario, r.options, Registry());
    if (!result.ok()) Raise(ErrorKind::kScenario, result.status());
    r.result = *std::move(result);
    r.report = MakeReport(r.scenario, r.options, r.result);
    r.report["lockstep"]["build"] = cli::ThisBuild();
  }
  return r;
}

// ---- Exploration -----------------------------------------------------------

struct ExploreReport {
  std::vector<Scenario> scenarios;
  faults::ExploreOptions options;
  faults::ExploreResult result;

  nlohmann::json Outcome(const faults::SeedOutcome& o) const {
    const Scenario& s = scenarios[o.scenario];
    return {{"scenario", s.name},
            {"seed", o.seed},
            {"verdict", std::string(VerdictName(o.verdict))},
            {"acceptable", o.acceptable},
            {"summary", o.summary},
            {"policy", o.policy},
            {"signature", o.signature},
            {"trace_hash", HexHash(o.trace_hash)},
            {"replay", faults::ReplayCommand(s, o, options)}};
  }

  nlohmann::json Json() const {
    nlohmann::json summaries = nlohmann::json::array();
    for (const faults::ScenarioSummary& s : result.scenarios) {
      nlohmann::json counts = nlohmann::json::object();
      for (int v = 0; v < kNumVerdicts; ++v) {
        counts[std::string(VerdictName(static_cast<Verdict>(v)))] =
            s.counts[static_cast<size_t>(v)];
      }
      summaries.push_back({{"name", s.name},
                           {"path", s.path},
                           {"counts", counts},
                           {"first_failure", s.first_failure ? Outcome(*s.first_failure)
                                                             : nlohmann::json(nullptr)}});
    }
    nlohmann::json outcomes = nlohmann::json::array();
    for (const faults::SeedOutcome& o : result.outcomes) outcomes.push_back(Outcome(o));
    return {{"start", options.start},       {"seeds", options.seeds},
            {"swarm", options.swarm},       {"policy", options.policy},
            {"schedule", options.schedule}, {"all_acceptable", result.all_acceptable},
            {"scenarios", summaries},       {"outcomes", outcomes}};
  }
};

std::vector<Scenario> ScenariosOf(nb::handle what, const std::optional<std::string>& catalogue) {
  std::vector<Scenario> out;
  if (nb::isinstance<Scenario>(what)) {
    out.push_back(nb::cast<Scenario>(what));
  } else if (nb::isinstance<nb::str>(what) || nb::hasattr(what, "__fspath__")) {
    const std::string path = nb::cast<std::string>(nb::str(what));
    out = Unwrap(faults::LoadScenarios(path, catalogue.value_or("")), ErrorKind::kScenario);
  } else {
    for (nb::handle item : what) {
      if (!nb::isinstance<Scenario>(item)) {
        throw nb::type_error("explore(): expected a Scenario, a path, or a list of Scenarios");
      }
      out.push_back(nb::cast<Scenario>(item));
    }
  }
  for (const Scenario& s : out) Revalidate(s);
  return out;
}

ExploreReport RunExplore(nb::handle what, uint64_t seeds, uint64_t start, bool swarm,
                         const std::optional<std::string>& policy, const std::string& schedule,
                         int jobs, const std::optional<std::string>& catalogue) {
  if (seeds == 0 || seeds > 10'000'000 || jobs < 1 || jobs > 1024) {
    throw Error(ErrorKind::kConfig, "seeds must be in [1, 10000000] and jobs in [1, 1024]");
  }
  if (start > std::numeric_limits<uint64_t>::max() - (seeds - 1)) {
    throw Error(ErrorKind::kConfig, "start + seeds - 1 would pass the largest seed, 2^64-1");
  }
  ExploreReport r;
  r.scenarios = ScenariosOf(what, catalogue);
  r.options.seeds = seeds;
  r.options.start = start;
  r.options.swarm = swarm;
  r.options.policy = policy.value_or("");
  r.options.schedule = schedule;
  r.options.jobs = jobs;
  CheckPolicy(r.options.policy);
  absl::StatusOr<faults::ExploreResult> result;
  {
    nb::gil_scoped_release release;
    result = faults::Explore(r.scenarios, r.options, Registry());
  }
  r.result = Unwrap(std::move(result), ErrorKind::kScenario);
  return r;
}

// ---- Layouts ---------------------------------------------------------------

struct Layout {
  ParallelLayout layout;
  std::string policy;
  bool fused = true;

  nlohmann::json Json() const {
    std::unique_ptr<DispatchPolicy> p = Unwrap(Registry().Create(policy), ErrorKind::kPolicy);
    LayoutReportOptions options;
    options.fused_enabled = fused;
    return LayoutToJson(layout, *p, options);
  }
  std::string Text() const {
    std::unique_ptr<DispatchPolicy> p = Unwrap(Registry().Create(policy), ErrorKind::kPolicy);
    LayoutReportOptions options;
    options.fused_enabled = fused;
    options.max_subgroups = std::numeric_limits<int>::max();
    return FormatLayout(layout, *p, options);
  }
  GroupRole Role(const std::string& name) const {
    return Unwrap(ParseGroupRole(name), ErrorKind::kConfig);
  }
  void CheckRank(int rank) const {
    if (rank < 0 || rank >= layout.world_size()) {
      throw Error(ErrorKind::kConfig, absl::StrFormat("rank %d is outside the world [0, %d)", rank,
                                                      layout.world_size()));
    }
  }
  std::vector<int> Peers(const std::string& role, int rank) const {
    CheckRank(rank);
    auto peers = layout.Peers(layout.GroupOf(Role(role), rank));
    return {peers.begin(), peers.end()};
  }
};

Layout MakeLayout(const ParallelConfig& config, const std::string& policy, bool fused) {
  Layout l{Unwrap(ParallelLayout::Build(config), ErrorKind::kConfig), policy, fused};
  // A layout SGLang refuses when it builds a MoE model is refused here too,
  // as `lockstep layout` does.
  Check(ValidateMoeModelConstruction(config), ErrorKind::kConfig);
  CheckPolicy(policy);
  return l;
}

// ---- One decision ----------------------------------------------------------

// Backends that only decide: Decide() never executes one.
struct DecideOnlyFused : FusedAllReduceBackend {
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override {
    return absl::UnimplementedError("lockstep.decide does not execute");
  }
};
struct DecideOnlyCustom : CustomAllReduceBackend {
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override {
    return absl::UnimplementedError("lockstep.decide does not execute");
  }
};
struct DecideOnlyNccl : NcclBackend {
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override {
    return absl::UnimplementedError("lockstep.decide does not execute");
  }
};

struct Decision {
  std::shared_ptr<ParallelLayout> layout;
  std::string policy;
  std::string group_name;
  DecisionRecord record;
  nlohmann::json inputs;

  std::string backend() const { return std::string(BackendKindName(record.backend)); }
  std::optional<std::string> algorithm() const {
    if (record.algorithm == Algorithm::kNone) return std::nullopt;
    return std::string(AlgorithmName(record.algorithm));
  }
  std::vector<int> peers() const {
    auto p = layout->Peers(record.group);
    return {p.begin(), p.end()};
  }
  nlohmann::json Predicates() const {
    nlohmann::json out = nlohmann::json::array();
    for (int i = 0; i < kNumPredicates; ++i) {
      const auto p = static_cast<Predicate>(i);
      if (!record.Evaluated(p)) continue;
      out.push_back({{"name", std::string(PredicateName(p))},
                     {"backend", std::string(BackendKindName(PredicateBackend(p)))},
                     {"held", record.Held(p)},
                     {"text", DescribePredicate(record, p, layout.get())}});
    }
    return out;
  }
  std::optional<std::string> FirstFailed(const std::string& backend_name) const {
    for (int k = 0; k < kNumBackendKinds; ++k) {
      const auto kind = static_cast<BackendKind>(k);
      if (BackendKindName(kind) != backend_name) continue;
      std::optional<Predicate> p = FirstFailedPredicate(record, kind);
      if (!p) return std::nullopt;
      return std::string(PredicateName(*p));
    }
    throw Error(ErrorKind::kConfig,
                absl::StrFormat("unknown backend '%s' (skip, fused, custom, nccl)", backend_name));
  }
  nlohmann::json Json() const {
    return {{"policy", policy},
            {"group", group_name},
            {"peers", peers()},
            {"seq", record.seq},
            {"backend", backend()},
            {"algorithm", algorithm() ? nlohmann::json(*algorithm()) : nlohmann::json(nullptr)},
            {"blocks", record.blocks},
            {"fp32_acc", record.fp32_acc},
            {"norm_fused", record.norm_fused},
            {"predicates", Predicates()},
            {"explanation", ExplainDecision(record, layout.get())},
            {"fingerprint", HexHash(DecisionFingerprint(record))},
            {"inputs", inputs}};
  }
};

// The decision inputs and their defaults (docs/PYTHON.md lists them).
struct DecisionInputs {
  int64_t tokens = -1;
  int64_t hidden = -1;
  std::string dtype = "bf16";
  int64_t ndim = 2;
  bool contiguous = true;
  std::string pattern = "allreduce";
  std::string norm_workspace = "none";
  bool norm_fusable = true;
  bool tracing = false;
  bool graph_capture = false;
  std::optional<std::string> hint;  // default: the policy's tag of the group object
  std::string fusion_backend = "trtllm";
  bool fused_enabled = true;
  bool library_available = true;
  bool workspace_initialized = true;
  std::optional<std::vector<int>> workspace_peers;  // default: the group's
  int64_t workspace_max_tokens = 2048;
  std::optional<int64_t> workspace_hidden;     // default: hidden
  std::optional<std::string> workspace_dtype;  // default: dtype
  int64_t workspace_generation = 0;
  std::optional<bool> norm_path;  // default: a trtllm/mnnvl backend and no attention DP
  int64_t norm_max_tokens = 2048;
  bool custom_available = true;
  std::optional<int64_t> custom_max_bytes;  // default: the policy's limit
  bool full_nvlink = true;
  bool same_node = true;
  int64_t custom_generation = 2;
};

constexpr const char* kInputNames[] = {"tokens",
                                       "hidden",
                                       "dtype",
                                       "ndim",
                                       "contiguous",
                                       "pattern",
                                       "norm_workspace",
                                       "norm_fusable",
                                       "tracing",
                                       "graph_capture",
                                       "hint",
                                       "fusion_backend",
                                       "fused_enabled",
                                       "library_available",
                                       "workspace_initialized",
                                       "workspace_peers",
                                       "workspace_max_tokens",
                                       "workspace_hidden",
                                       "workspace_dtype",
                                       "workspace_generation",
                                       "norm_path",
                                       "norm_max_tokens",
                                       "custom_available",
                                       "custom_max_bytes",
                                       "full_nvlink",
                                       "same_node",
                                       "custom_generation"};

DecisionInputs ParseInputs(const nb::dict& d) {
  DecisionInputs in;
  std::vector<std::string_view> names(std::begin(kInputNames), std::end(kInputNames));
  for (auto [k, v] : d) {
    const std::string key = nb::cast<std::string>(nb::str(k));
    auto as_bool = [&](bool* out) {
      if (!nb::isinstance<nb::bool_>(v)) {
        throw Error(ErrorKind::kConfig, absl::StrFormat("input %s: expected true or false, got %s",
                                                        key, nb::cast<std::string>(nb::repr(v))));
      }
      *out = nb::cast<bool>(v);
    };
    auto as_int = [&](int64_t* out) {
      if (nb::isinstance<nb::bool_>(v) || !nb::isinstance<nb::int_>(v) ||
          !nb::try_cast<int64_t>(v, *out)) {
        throw Error(ErrorKind::kConfig, absl::StrFormat("input %s: expected an integer, got %s",
                                                        key, nb::cast<std::string>(nb::repr(v))));
      }
    };
    auto as_str = [&](std::string* out) {
      if (!nb::isinstance<nb::str>(v)) {
        throw Error(ErrorKind::kConfig, absl::StrFormat("input %s: expected a string, got %s", key,
                                                        nb::cast<std::string>(nb::repr(v))));
      }
      *out = nb::cast<std::string>(v);
    };
    if (v.is_none()) {
      // None: the input's default.
      if (key == "tokens" || key == "hidden") {
        throw Error(ErrorKind::kConfig, absl::StrFormat("input %s is required", key));
      }
    } else if (key == "tokens") {
      as_int(&in.tokens);
    } else if (key == "hidden") {
      as_int(&in.hidden);
    } else if (key == "dtype") {
      as_str(&in.dtype);
    } else if (key == "ndim") {
      as_int(&in.ndim);
    } else if (key == "contiguous") {
      as_bool(&in.contiguous);
    } else if (key == "pattern") {
      as_str(&in.pattern);
    } else if (key == "norm_workspace") {
      as_str(&in.norm_workspace);
    } else if (key == "norm_fusable") {
      as_bool(&in.norm_fusable);
    } else if (key == "tracing") {
      as_bool(&in.tracing);
    } else if (key == "graph_capture") {
      as_bool(&in.graph_capture);
    } else if (key == "hint") {
      std::string s;
      as_str(&s);
      in.hint = s;
    } else if (key == "fusion_backend") {
      as_str(&in.fusion_backend);
    } else if (key == "fused_enabled") {
      as_bool(&in.fused_enabled);
    } else if (key == "library_available") {
      as_bool(&in.library_available);
    } else if (key == "workspace_initialized") {
      as_bool(&in.workspace_initialized);
    } else if (key == "workspace_peers") {
      std::vector<int> peers;
      if (!nb::try_cast<std::vector<int>>(v, peers)) {
        throw Error(ErrorKind::kConfig, "input workspace_peers: expected a list of ranks");
      }
      in.workspace_peers = peers;
    } else if (key == "workspace_max_tokens") {
      as_int(&in.workspace_max_tokens);
    } else if (key == "workspace_hidden") {
      int64_t h = 0;
      as_int(&h);
      in.workspace_hidden = h;
    } else if (key == "workspace_dtype") {
      std::string s;
      as_str(&s);
      in.workspace_dtype = s;
    } else if (key == "workspace_generation") {
      as_int(&in.workspace_generation);
    } else if (key == "norm_path") {
      bool b = false;
      as_bool(&b);
      in.norm_path = b;
    } else if (key == "norm_max_tokens") {
      as_int(&in.norm_max_tokens);
    } else if (key == "custom_available") {
      as_bool(&in.custom_available);
    } else if (key == "custom_max_bytes") {
      int64_t b = 0;
      as_int(&b);
      in.custom_max_bytes = b;
    } else if (key == "full_nvlink") {
      as_bool(&in.full_nvlink);
    } else if (key == "same_node") {
      as_bool(&in.same_node);
    } else if (key == "custom_generation") {
      as_int(&in.custom_generation);
    } else {
      throw Error(ErrorKind::kConfig,
                  absl::StrFormat("unknown decision input '%s'%s (known: %s)", key,
                                  DidYouMean(key, names), absl::StrJoin(kInputNames, ", ")));
    }
  }
  if (in.tokens < 0 || in.hidden < 0) {
    throw Error(ErrorKind::kConfig,
                "inputs tokens and hidden are required (non-negative integers)");
  }
  if (in.ndim < 1 || in.ndim > TensorDesc::kMaxDims) {
    throw Error(ErrorKind::kConfig, absl::StrFormat("input ndim: %d is out of range [1, %d]",
                                                    in.ndim, TensorDesc::kMaxDims));
  }
  return in;
}

WorkspaceKind ParseWorkspaceKind(const std::string& name, const char* key) {
  for (WorkspaceKind k : {WorkspaceKind::kNone, WorkspaceKind::kAttnTp, WorkspaceKind::kMoe}) {
    if (WorkspaceKindName(k) == name) return k;
  }
  throw Error(ErrorKind::kConfig,
              absl::StrFormat("input %s: '%s' is not a workspace (none, attn_tp, moe)", key, name));
}

Decision Decide(const ParallelConfig& config, const std::string& role_name, int rank,
                const std::string& policy_name, const nb::dict& raw_inputs) {
  const DecisionInputs in = ParseInputs(raw_inputs);
  auto layout =
      std::make_shared<ParallelLayout>(Unwrap(ParallelLayout::Build(config), ErrorKind::kConfig));
  std::unique_ptr<DispatchPolicy> policy =
      Unwrap(Registry().Create(policy_name), ErrorKind::kPolicy);
  const GroupRole role = Unwrap(ParseGroupRole(role_name), ErrorKind::kConfig);
  if (rank < 0 || rank >= layout->world_size()) {
    throw Error(ErrorKind::kConfig, absl::StrFormat("rank %d is outside the world [0, %d)", rank,
                                                    layout->world_size()));
  }
  const GroupId group = layout->GroupOf(role, rank);
  const int world = layout->GroupSize(group);

  const DType dtype = Unwrap(ParseDType(in.dtype), ErrorKind::kConfig);
  TensorDesc tensor;
  tensor.ndim = static_cast<int>(in.ndim);
  tensor.dims = {};
  // [tokens, ..., hidden]: the middle dimensions (when ndim > 2) are 1.
  for (int i = 0; i < tensor.ndim; ++i) tensor.dims[static_cast<size_t>(i)] = 1;
  tensor.dims[0] = in.tokens;
  tensor.dims[static_cast<size_t>(tensor.ndim - 1)] = tensor.ndim == 1 ? in.tokens : in.hidden;
  tensor.contiguous = in.contiguous;
  tensor.dtype = dtype;
  CallDesc call;
  call.tensor = tensor;
  if (in.pattern == "allreduce") {
    call.context.pattern = FusionPattern::kAllReduce;
  } else if (in.pattern == "allreduce_residual_rmsnorm") {
    call.context.pattern = FusionPattern::kAllReduceResidualRmsNorm;
  } else {
    throw Error(ErrorKind::kConfig,
                absl::StrFormat("input pattern: '%s' is not a pattern (allreduce, "
                                "allreduce_residual_rmsnorm)",
                                in.pattern));
  }
  call.context.norm_workspace = ParseWorkspaceKind(in.norm_workspace, "norm_workspace");
  call.context.norm_fusable = in.norm_fusable;
  call.context.tracing = in.tracing;
  call.context.graph_capture = in.graph_capture;

  const FusionBackend fusion = [&] {
    for (FusionBackend b : {FusionBackend::kNone, FusionBackend::kTrtllm, FusionBackend::kMnnvl,
                            FusionBackend::kCutedsl}) {
      if (FusionBackendName(b) == in.fusion_backend) return b;
    }
    throw Error(ErrorKind::kConfig,
                absl::StrFormat("input fusion_backend: '%s' is not a backend (none, trtllm, "
                                "mnnvl, cutedsl)",
                                in.fusion_backend));
  }();

  // The group's tag: as given, else the policy's tagging of its object.
  const WorkspaceKind hint =
      in.hint ? ParseWorkspaceKind(*in.hint, "hint")
              : policy->TagGroups(*layout, in.fused_enabled).ForObject(layout->ObjectIndex(role));

  Workspace workspace;
  workspace.kind = hint != WorkspaceKind::kNone ? hint : call.context.norm_workspace;
  if (in.workspace_peers) {
    workspace.group = Unwrap(layout->Intern(*in.workspace_peers), ErrorKind::kConfig);
  } else {
    workspace.group = group;
  }
  workspace.world_size = layout->GroupSize(workspace.group);
  workspace.capacity.max_tokens = in.workspace_max_tokens;
  workspace.capacity.hidden = in.workspace_hidden.value_or(in.hidden);
  workspace.capacity.dtype =
      in.workspace_dtype ? Unwrap(ParseDType(*in.workspace_dtype), ErrorKind::kConfig) : dtype;
  workspace.initialized = in.workspace_initialized;
  workspace.generation = static_cast<uint32_t>(in.workspace_generation);

  FusedAgreedState fused_state;
  fused_state.library_available = in.library_available;
  fused_state.workspace = hint != WorkspaceKind::kNone ? &workspace : nullptr;
  fused_state.group = group;
  fused_state.group_world_size = world;
  fused_state.capacity_rule = policy->CapacityRule(fusion);
  fused_state.norm_path =
      in.norm_path.value_or((fusion == FusionBackend::kTrtllm || fusion == FusionBackend::kMnnvl) &&
                            !layout->widths().DpAttention());
  fused_state.norm_max_tokens = in.norm_max_tokens;

  DecideOnlyFused fused;
  fused.set_agreed(fused_state);
  FusedAgreedState norm_state = fused_state;
  norm_state.workspace = &workspace;
  DecideOnlyFused norm;
  norm.set_agreed(norm_state);

  ServingArgs args;
  Platform platform;
  CustomAgreedState custom_state =
      policy->CustomLimits(args, platform, in.custom_max_bytes.value_or(0));
  custom_state.available = in.custom_available;
  if (in.custom_max_bytes) custom_state.max_bytes = *in.custom_max_bytes;
  custom_state.group_world_size = world;
  custom_state.full_nvlink = in.full_nvlink;
  custom_state.same_node = in.same_node;
  custom_state.generation = static_cast<int>(in.custom_generation);
  DecideOnlyCustom custom;
  custom.set_agreed(custom_state);
  DecideOnlyNccl nccl;

  GroupBackends backends;
  backends.fused = in.fused_enabled ? &fused : nullptr;
  backends.custom = policy->ObjectHasCustomAllReduce(layout->Object(role)) ? &custom : nullptr;
  backends.nccl = &nccl;
  if (in.fused_enabled && call.context.norm_workspace == WorkspaceKind::kAttnTp) {
    backends.norm_on_attn_workspace = &norm;
  }
  if (in.fused_enabled && call.context.norm_workspace == WorkspaceKind::kMoe) {
    backends.norm_on_moe_workspace = &norm;
  }

  const std::string object_name = layout->Object(role).name;
  GroupCoordinator coordinator(object_name, group, world, layout->RankInGroup(group, rank), hint,
                               backends, policy.get());
  Decision d;
  d.layout = layout;
  d.policy = std::string(policy->name());
  d.group_name = object_name;
  coordinator.Decide(call, d.record);
  d.inputs = FromPython(raw_inputs, "inputs");
  return d;
}

// ---- Catalogues of kinds, mutants, policies --------------------------------

nb::list FaultKinds() {
  nb::list out;
  for (const faults::FaultKindInfo& k : faults::AllFaultKinds()) {
    nlohmann::json keys = nlohmann::json::array();
    for (faults::FaultKey key : k.keys) keys.push_back(std::string(faults::FaultKeyName(key)));
    nlohmann::json params = nlohmann::json::array();
    for (const faults::FaultParam& p : k.params) {
      params.push_back({{"name", std::string(p.name)}, {"help", std::string(p.help)}});
    }
    out.append(ToPython({{"name", std::string(k.name)},
                         {"category", std::string(faults::FaultCategoryName(k.category))},
                         {"outcome", std::string(VerdictName(k.outcome))},
                         {"summary", std::string(k.summary)},
                         {"why", std::string(k.why)},
                         {"stage", std::string(faults::FaultStageName(k.stage))},
                         {"keys", keys},
                         {"params", params},
                         {"gpu_injectable", k.gpu_injectable}}));
  }
  return out;
}

nb::list Mutants() {
  nb::list out;
  for (const faults::MutantInfo& m : faults::AllMutants()) {
    out.append(ToPython({{"name", std::string(m.name)},
                         {"summary", std::string(m.summary)},
                         {"source", std::string(m.source)},
                         {"expected", std::string(VerdictName(m.expected))},
                         {"exposed_by", std::string(m.exposed_by)}}));
  }
  return out;
}

nb::list Policies() {
  nb::list out;
  for (const PolicyRegistry::Entry& e : Registry().entries()) {
    out.append(ToPython({{"name", e.name}, {"summary", e.summary}, {"source", e.source}}));
  }
  return out;
}

nb::object Dumps(const nlohmann::json& j, int indent) { return nb::cast(j.dump(indent)); }

}  // namespace
}  // namespace lockstep::python

NB_MODULE(_lockstep_ext, m) {
  using namespace lockstep;
  using namespace lockstep::python;
  m.doc() = "lockstep's C++ core: layouts, decisions, scenarios, simulation, exploration";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      nb::object cls = nb::module_::import_("lockstep.errors").attr(ErrorClassName(e.kind));
      PyErr_SetString(cls.ptr(), e.what());
    }
  });

  m.attr("BUILD") = std::string(cli::ThisBuild());
  m.def(
      "_set_packaged_catalogue", [](const std::string& dir) { PackagedCatalogue() = dir; },
      "dir"_a);
  m.def("default_catalogue", &DefaultCatalogue,
        "The catalogue (hardware/, models/) scenarios given as text or dicts name their hardware "
        "and models in: the one installed with the package, else the source tree's.");

  // ParallelConfig and its layout.
  nb::class_<ParallelWidths>(m, "ParallelWidths", "Group widths derived from a ParallelConfig.")
      .def_ro("world", &ParallelWidths::world)
      .def_ro("tp", &ParallelWidths::tp)
      .def_ro("pp", &ParallelWidths::pp)
      .def_ro("replicas", &ParallelWidths::replicas)
      .def_ro("attn_dp", &ParallelWidths::attn_dp)
      .def_ro("attn_tp", &ParallelWidths::attn_tp)
      .def_ro("attn_cp", &ParallelWidths::attn_cp)
      .def_ro("moe_ep", &ParallelWidths::moe_ep)
      .def_ro("moe_tp", &ParallelWidths::moe_tp)
      .def_ro("moe_dp", &ParallelWidths::moe_dp)
      .def_prop_ro("hybrid_ep_tp", &ParallelWidths::IsHybridEpTp)
      .def_prop_ro("merges_post_experts", &ParallelWidths::MergesPostExperts);

  nb::class_<ParallelConfig>(m, "ParallelConfig",
                             "SGLang's parallel arguments (--tp-size, --ep-size, ...).")
      .def(
          "__init__",
          [](ParallelConfig* c, int tp, int pp, int dp, int attn_dp, int ep, int moe_dp,
             int attn_cp, bool dp_attention, int world) {
            new (c) ParallelConfig{tp, pp, dp, attn_dp, ep, moe_dp, attn_cp, dp_attention, world};
          },
          nb::kw_only(), "tp"_a = 1, "pp"_a = 1, "dp"_a = 1, "attn_dp"_a = 1, "ep"_a = 1,
          "moe_dp"_a = 1, "attn_cp"_a = 1, "dp_attention"_a = false, "world"_a = 0)
      .def_rw("tp", &ParallelConfig::tp)
      .def_rw("pp", &ParallelConfig::pp)
      .def_rw("dp", &ParallelConfig::dp)
      .def_rw("attn_dp", &ParallelConfig::attn_dp)
      .def_rw("ep", &ParallelConfig::ep)
      .def_rw("moe_dp", &ParallelConfig::moe_dp)
      .def_rw("attn_cp", &ParallelConfig::attn_cp)
      .def_rw("dp_attention", &ParallelConfig::dp_attention)
      .def_rw("world", &ParallelConfig::world)
      .def_prop_ro("world_size", &ParallelConfig::WorldSize)
      .def_prop_ro("short_name", &ParallelConfig::ShortName)
      .def(
          "validate",
          [](const ParallelConfig& c) { Check(ValidateParallelConfig(c), ErrorKind::kConfig); },
          "Raises ConfigError with SGLang's rule when SGLang would refuse this configuration.")
      .def(
          "widths",
          [](const ParallelConfig& c) {
            Check(ValidateParallelConfig(c), ErrorKind::kConfig);
            return DeriveWidths(c);
          },
          "The derived group widths (validates first).")
      .def(
          "layout",
          [](const ParallelConfig& c, const std::string& policy, bool fused) {
            return MakeLayout(c, policy, fused);
          },
          "policy"_a = "reference", "fused"_a = true,
          "The groups SGLang builds for this configuration, as `lockstep layout` shows them.")
      .def("__eq__", [](const ParallelConfig& a, const ParallelConfig& b) { return a == b; })
      .def("__repr__", [](const ParallelConfig& c) {
        return absl::StrFormat(
            "ParallelConfig(tp=%d, pp=%d, dp=%d, attn_dp=%d, ep=%d, moe_dp=%d, attn_cp=%d, "
            "dp_attention=%s, world=%d)",
            c.tp, c.pp, c.dp, c.attn_dp, c.ep, c.moe_dp, c.attn_cp,
            c.dp_attention ? "True" : "False", c.world);
      });

  nb::class_<Layout>(m, "Layout",
                     "The process groups of one replica, their workspace tags, custom all-reduce "
                     "and FFN exit plan under a policy (`lockstep layout`).")
      .def_prop_ro("config", [](const Layout& l) { return l.layout.config(); })
      .def_prop_ro("widths", [](const Layout& l) { return l.layout.widths(); })
      .def_prop_ro("world_size", [](const Layout& l) { return l.layout.world_size(); })
      .def_ro("policy", &Layout::policy)
      .def_prop_ro(
          "groups", [](const Layout& l) { return ToPython(l.Json()["groups"]); },
          "Every group object: name, roles, subgroups (rank lists) and workspace tag.")
      .def_prop_ro(
          "tags",
          [](const Layout& l) {
            nb::dict out;
            const nlohmann::json j = l.Json();
            for (const auto& g : j["groups"]) {
              out[nb::cast(g["name"].get<std::string>())] =
                  nb::cast(g["workspace"].get<std::string>());
            }
            return out;
          },
          "Workspace tag of each group object: none, attn_tp or moe.")
      .def_prop_ro(
          "ffn_exit", [](const Layout& l) { return ToPython(l.Json()["ffn_exit"]); },
          "The post-experts (and dense) FFN exit plan.")
      .def_prop_ro("custom_all_reduce",
                   [](const Layout& l) { return ToPython(l.Json()["custom_all_reduce"]); })
      .def_prop_ro(
          "moe_workspace_group",
          [](const Layout& l) { return l.Json()["moe_workspace_group"].get<std::string>(); })
      .def("peers", &Layout::Peers, "role"_a, "rank"_a,
           "The ranks of `rank`'s group in `role` (tp, attn_tp, attn_cp, moe_ep, moe_tp, moe_dp, "
           "pp).")
      .def(
          "object_name",
          [](const Layout& l, const std::string& role) {
            return l.layout.Object(l.Role(role)).name;
          },
          "role"_a, "The name of the group object that serves `role`.")
      .def(
          "to_dict", [](const Layout& l) { return ToPython(l.Json()); },
          "The same JSON as `lockstep layout --json`.")
      .def(
          "to_json", [](const Layout& l, int indent) { return Dumps(l.Json(), indent); },
          "indent"_a = 2)
      .def("text", &Layout::Text, "The text `lockstep layout` prints.")
      .def("__repr__", [](const Layout& l) {
        return absl::StrFormat("<Layout %s world=%d policy=%s>", l.layout.config().ShortName(),
                               l.layout.world_size(), l.policy);
      });

  // Decisions.
  nb::class_<Decision>(m, "Decision",
                       "What the dispatch core chose for one all-reduce, and every predicate it "
                       "evaluated.")
      .def_prop_ro("backend", &Decision::backend)
      .def_prop_ro("algorithm", &Decision::algorithm)
      .def_prop_ro("blocks", [](const Decision& d) { return d.record.blocks; })
      .def_prop_ro("fp32_acc", [](const Decision& d) { return d.record.fp32_acc; })
      .def_prop_ro("norm_fused", [](const Decision& d) { return d.record.norm_fused; })
      .def_ro("group", &Decision::group_name)
      .def_ro("policy", &Decision::policy)
      .def_prop_ro("peers", &Decision::peers)
      .def_prop_ro(
          "predicates", [](const Decision& d) { return ToPython(d.Predicates()); },
          "Evaluated predicates in order: name, backend, held, text (inputs and result).")
      .def_prop_ro("explanation",
                   [](const Decision& d) { return ExplainDecision(d.record, d.layout.get()); })
      .def_prop_ro("fingerprint",
                   [](const Decision& d) { return HexHash(DecisionFingerprint(d.record)); })
      .def("first_failed", &Decision::FirstFailed, "backend"_a,
           "The predicate that refused `backend` (fused, custom), or None.")
      .def("to_dict", [](const Decision& d) { return ToPython(d.Json()); })
      .def(
          "to_json", [](const Decision& d, int indent) { return Dumps(d.Json(), indent); },
          "indent"_a = 2)
      .def("__repr__", [](const Decision& d) {
        return absl::StrFormat("<Decision %s>", ExplainDecision(d.record, d.layout.get()));
      });
  m.def("_decide", &Decide, "config"_a, "role"_a, "rank"_a, "policy"_a, "inputs"_a);

  // Scenarios.
  nb::class_<Scenario>(m, "Scenario",
                       "A scenario: hardware, layout, model, dispatch, workload, faults and "
                       "expected verdict (topologies/README.md).")
      .def_static("from_file", &ScenarioFromFile, "path"_a, "catalogue"_a = nb::none(),
                  "Reads a scenario YAML file; ScenarioError names file, line and key.")
      .def_static("from_yaml", &ScenarioFromYaml, "text"_a, "path"_a = "<string>",
                  "catalogue"_a = nb::none(),
                  "Parses scenario YAML text (`path` names it in errors).")
      .def_static("from_dict", &ScenarioFromDict, "data"_a, "catalogue"_a = nb::none(),
                  "Builds a scenario from a dict of the YAML schema (as to_dict() gives).")
      .def(
          "to_yaml", [](const Scenario& s) { return ScenarioToYaml(s); },
          "Self-contained YAML (hardware and model inline) that reads back to an equal scenario.")
      .def("to_dict", &ScenarioToDict, "The scenario as a dict of the YAML schema.")
      .def("copy", [](const Scenario& s) { return s; })
      .def("validate", &Revalidate, "Raises ScenarioError when the scenario would not parse back.")
      .def_rw("name", &Scenario::name)
      .def_rw("description", &Scenario::description)
      .def_rw("path", &Scenario::path)
      .def_rw("parallel", &Scenario::parallel)
      .def_prop_ro("world_size", [](const Scenario& s) { return s.parallel.WorldSize(); })
      .def_prop_ro("hardware", [](const Scenario& s) { return s.hardware.name; })
      .def_prop_ro("model", [](const Scenario& s) { return s.model.name; })
      .def_prop_rw(
          "policy", [](const Scenario& s) { return s.dispatch.policy; },
          [](Scenario& s, const std::string& p) { s.dispatch.policy = p; })
      .def_prop_rw(
          "steps", [](const Scenario& s) { return s.workload.steps; },
          [](Scenario& s, int steps) { s.workload.steps = steps; })
      .def_prop_rw(
          "tokens", [](const Scenario& s) { return s.workload.tokens; },
          [](Scenario& s, const std::vector<int64_t>& t) { s.workload.tokens = t; })
      .def_prop_rw(
          "expect",
          [](const Scenario& s) -> std::optional<std::string> {
            if (!s.expect) return std::nullopt;
            return std::string(VerdictName(*s.expect));
          },
          [](Scenario& s, const std::optional<std::string>& v) {
            if (!v) {
              s.expect.reset();
              return;
            }
            s.expect = Unwrap(ParseVerdict(*v), ErrorKind::kScenario);
          },
          "The expected verdict, or None (then clean or fail_stop are acceptable).")
      .def_prop_ro(
          "faults",
          [](const Scenario& s) {
            nb::object d = ScenarioToDict(s);
            nb::dict dict = nb::borrow<nb::dict>(d);
            return dict.contains("faults") ? nb::object(dict["faults"]) : nb::object(nb::list());
          },
          "The declared faults (edit through to_dict / from_dict).")
      .def("__eq__", [](const Scenario& a,
                        const Scenario& b) { return ScenarioToYaml(a) == ScenarioToYaml(b); })
      .def("__repr__", [](const Scenario& s) {
        return absl::StrFormat("<Scenario %s %s world=%d>", s.name, s.parallel.ShortName(),
                               s.parallel.WorldSize());
      });

  // Reports.
  nb::class_<SimReport>(m, "SimReport", "The report of one simulated run (`lockstep sim`).")
      .def_prop_ro("verdict", &SimReport::verdict)
      .def_prop_ro("expected", &SimReport::expected)
      .def_prop_ro("as_expected", &SimReport::as_expected)
      .def_prop_ro("silent_failure",
                   [](const SimReport& r) { return IsSilentFailure(r.result.verdict); })
      .def_prop_ro("summary", [](const SimReport& r) { return r.result.summary; })
      .def_prop_ro("explanation", &SimReport::explanation,
                   "The text `lockstep sim` prints: verdict, expectation, summary, blocked ranks.")
      .def_prop_ro("detector", &SimReport::detector)
      .def_prop_ro("policy", [](const SimReport& r) { return r.result.policy; })
      .def_prop_ro("seed", [](const SimReport& r) { return r.options.seed; })
      .def_prop_ro("schedule", [](const SimReport& r) { return r.options.schedule; })
      .def_prop_ro("trace_hash", [](const SimReport& r) { return HexHash(r.result.trace_hash); })
      .def_prop_ro("rank_calls", [](const SimReport& r) { return r.result.rank_calls; })
      .def_prop_ro("virtual_ns", [](const SimReport& r) { return r.result.virtual_ns; })
      .def_prop_ro("unmodelled", [](const SimReport& r) { return r.result.unmodelled; })
      .def_prop_ro("details", [](const SimReport& r) { return ToPython(r.report["details"]); })
      .def_prop_ro(
          "first_divergent_decision",
          [](const SimReport& r) { return r.details_key("first_divergent_decision"); },
          "On a hang: the first call ranks decided differently, or None.")
      .def_prop_ro(
          "blocked", [](const SimReport& r) { return r.details_key("blocked"); },
          "On a hang: what each blocked rank waits for (the wait-for graph's edges).")
      .def_prop_ro(
          "wait_for_dot", [](const SimReport& r) { return r.result.wait_for_dot; },
          "The wait-for graph (Graphviz DOT) of a hang; empty otherwise.")
      .def_prop_ro("scenario", [](const SimReport& r) { return r.scenario; })
      .def(
          "to_dict", [](const SimReport& r) { return ToPython(r.report); },
          "The JSON report `lockstep sim --report` writes.")
      .def(
          "to_json", [](const SimReport& r, int indent) { return Dumps(r.report, indent); },
          "indent"_a = 2)
      .def("__repr__", [](const SimReport& r) {
        return absl::StrFormat("<SimReport %s seed=%d verdict=%s trace_hash=%s>", r.scenario.name,
                               r.options.seed, VerdictName(r.result.verdict),
                               HexHash(r.result.trace_hash));
      });

  nb::class_<ExploreReport>(m, "ExploreReport", "Verdicts of many seeds (`lockstep explore`).")
      .def_prop_ro("all_acceptable", [](const ExploreReport& r) { return r.result.all_acceptable; })
      .def_prop_ro("scenarios",
                   [](const ExploreReport& r) { return ToPython(r.Json()["scenarios"]); })
      .def_prop_ro("outcomes",
                   [](const ExploreReport& r) { return ToPython(r.Json()["outcomes"]); })
      .def_prop_ro(
          "summary",
          [](const ExploreReport& r) {
            return faults::FormatExploreSummary(r.scenarios, r.result, r.options);
          },
          "The text `lockstep explore` prints.")
      .def_prop_ro("markdown",
                   [](const ExploreReport& r) {
                     return faults::FormatExploreMarkdown(r.scenarios, r.result, r.options);
                   })
      .def("to_dict", [](const ExploreReport& r) { return ToPython(r.Json()); })
      .def(
          "to_json", [](const ExploreReport& r, int indent) { return Dumps(r.Json(), indent); },
          "indent"_a = 2)
      .def("__repr__", [](const ExploreReport& r) {
        return absl::StrFormat("<ExploreReport %d scenarios, %d runs, all_acceptable=%s>",
                               r.scenarios.size(), r.result.outcomes.size(),
                               r.result.all_acceptable ? "True" : "False");
      });

  m.def("_simulate", &RunSimulation, "scenario"_a, "seed"_a, "policy"_a, "schedule"_a, "swarm"_a,
        "exact"_a, "keep_trace"_a, "max_memory"_a);
  m.def("_explore", &RunExplore, "scenarios"_a, "seeds"_a, "start"_a, "swarm"_a, "policy"_a,
        "schedule"_a, "jobs"_a, "catalogue"_a);
  // `lockstep import`: launch flags as a scenario (sim/scenario/serving_import.h).
  auto import_args =
      [](bool sglang, const std::vector<std::string>& args,
         const std::optional<std::string>& hardware, const std::optional<std::string>& model_config,
         const std::optional<std::string>& name, const std::optional<std::string>& catalogue) {
        ImportOptions o;
        o.catalogue = CatalogueFor(catalogue, "");
        o.hardware = hardware.value_or("");
        o.model_config = model_config.value_or("");
        o.name = name.value_or("");
        ImportedScenario imported;
        {
          nb::gil_scoped_release release;
          absl::StatusOr<ImportedScenario> r =
              sglang ? ImportSglangFlags(args, o) : ImportVllmFlags(args, o);
          if (!r.ok()) {
            nb::gil_scoped_acquire acquire;
            Raise(ErrorKind::kScenario, r.status());
          }
          imported = *std::move(r);
        }
        return nb::make_tuple(imported.scenario, imported.notes);
      };
  m.def(
      "_from_sglang_args",
      [import_args](const std::vector<std::string>& args, const std::optional<std::string>& hw,
                    const std::optional<std::string>& mc, const std::optional<std::string>& name,
                    const std::optional<std::string>& cat) {
        return import_args(true, args, hw, mc, name, cat);
      },
      "args"_a, "hardware"_a, "model_config"_a, "name"_a, "catalogue"_a);
  m.def(
      "_from_vllm_args",
      [import_args](const std::vector<std::string>& args, const std::optional<std::string>& hw,
                    const std::optional<std::string>& mc, const std::optional<std::string>& name,
                    const std::optional<std::string>& cat) {
        return import_args(false, args, hw, mc, name, cat);
      },
      "args"_a, "hardware"_a, "model_config"_a, "name"_a, "catalogue"_a);
  // `lockstep check-log`: every rank's decision log of DIR compared.
  m.def(
      "check_logs",
      [](const std::string& dir, const std::optional<std::string>& against) {
        DecisionLogCheck check;
        {
          nb::gil_scoped_release release;
          absl::StatusOr<std::vector<RankDecisionLog>> logs = ReadDecisionLogs(dir);
          absl::StatusOr<DecisionLogCheck> c =
              logs.ok() ? CheckDecisionLogs(*logs)
                        : absl::StatusOr<DecisionLogCheck>(logs.status());
          if (c.ok() && !c->diverged && against) {
            absl::StatusOr<std::vector<RankDecisionLog>> theirs = ReadDecisionLogs(*against);
            c = theirs.ok() ? CompareDecisionLogRuns(*logs, *theirs)
                            : absl::StatusOr<DecisionLogCheck>(theirs.status());
          }
          if (!c.ok()) {
            nb::gil_scoped_acquire acquire;
            Raise(ErrorKind::kScenario, c.status());
          }
          check = *std::move(c);
        }
        nb::dict out;
        out["diverged"] = check.diverged;
        out["summary"] = check.summary;
        out["details"] = ToPython(check.details);
        out["calls"] = check.calls;
        out["groups"] = check.groups;
        return out;
      },
      "dir"_a, "against"_a = nb::none(),
      "Compares the decision logs (rank-<R>.jsonl) of DIR as `lockstep check-log` does; returns "
      "{'diverged', 'summary', 'details', 'calls', 'groups'}. Raises ScenarioError on bad logs.");
  m.def("fault_kinds", &FaultKinds, "Every fault kind (`lockstep faults`), as dicts.");
  m.def("mutants", &Mutants, "Every mutant: a known-bad dispatch policy, as dicts.");
  m.def("policies", &Policies, "Every policy name simulate() and decide() accept, as dicts.");
  m.def(
      "verdicts",
      [] {
        std::vector<std::string> out;
        for (int v = 0; v < kNumVerdicts; ++v)
          out.emplace_back(VerdictName(static_cast<Verdict>(v)));
        return out;
      },
      "The verdicts, from clean to divergence.");
  m.def(
      "decision_inputs",
      [] { return std::vector<std::string>(std::begin(kInputNames), std::end(kInputNames)); },
      "The names decide() accepts as inputs.");
}
