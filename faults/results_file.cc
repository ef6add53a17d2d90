#include "faults/results_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "sim/report/report.h"
#include "sim/scenario/input_text.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::faults {
namespace {

namespace fs = std::filesystem;

// The longest line a result file may have: a header with many scenarios.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
// A result line lockstep wrote is nested three levels deep at most.
constexpr int kMaxJsonDepth = 8;
// Budgets --for accepts: up to 30 days.
constexpr int64_t kMaxBudgetSeconds = int64_t{30} * 24 * 3600;

// Reads lines of at most `max` bytes, in constant memory beyond that.
class LineReader {
 public:
  enum class Next { kLine, kEnd, kTooLong, kError };
  LineReader(std::istream& in, size_t max) : in_(in), max_(max) {}

  Next Read(std::string* line) {
    line->clear();
    bool any = false;
    while (true) {
      if (pos_ == len_) {
        in_.read(buf_, sizeof(buf_));
        len_ = static_cast<size_t>(in_.gcount());
        pos_ = 0;
        if (in_.bad()) return Next::kError;
        if (len_ == 0) {
          newline_ = false;
          return any ? Next::kLine : Next::kEnd;
        }
      }
      any = true;
      const char* begin = buf_ + pos_;
      const void* nl = std::memchr(begin, '\n', len_ - pos_);
      const size_t take =
          nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : len_ - pos_;
      if (line->size() + take > max_) return Next::kTooLong;
      line->append(begin, take);
      pos_ += take;
      if (nl != nullptr) {
        ++pos_;
        newline_ = true;
        return Next::kLine;
      }
    }
  }
  // Whether the line Read gave last ended with a newline (a line cut off by
  // the end of the file did not).
  bool newline() const { return newline_; }

 private:
  std::istream& in_;
  size_t max_;
  char buf_[1 << 16];
  size_t pos_ = 0;
  size_t len_ = 0;
  bool newline_ = true;
};

absl::Status LineError(const std::string& path, uint64_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s", path, line, what));
}

std::optional<uint64_t> ParseTraceHash(const nlohmann::json& j) {
  if (!j.is_string()) return std::nullopt;
  const std::string& s = j.get_ref<const std::string&>();
  if (s.size() != 18 || !s.starts_with("0x") ||
      s.find_first_not_of("0123456789abcdef", 2) != std::string::npos) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    v = (v << 4) | static_cast<uint64_t>(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
  }
  return v;
}

// The exploration's scenarios and options from a header's "exploration";
// the error says what is wrong, without file and line.
absl::Status ParseExploration(const nlohmann::json& e, const std::string& path,
                              std::vector<Scenario>* scenarios, ExploreOptions* options,
                              Unreadable* unreadable) {
  if (!e.is_object()) return absl::InvalidArgumentError("\"exploration\" is not an object");
  for (const char* key : {"scenarios", "policy", "schedule", "swarm"}) {
    if (!e.contains(key)) {
      return absl::InvalidArgumentError(absl::StrFormat("the exploration has no \"%s\"", key));
    }
  }
  if (!e["policy"].is_string() || !e["schedule"].is_string() || !e["swarm"].is_boolean() ||
      !e["scenarios"].is_array()) {
    return absl::InvalidArgumentError(
        "the exploration's policy, schedule, swarm or scenarios have the wrong types");
  }
  options->policy = e["policy"].get<std::string>();
  options->schedule = e["schedule"].get<std::string>();
  options->swarm = e["swarm"].get<bool>();
  if (e.contains("for_seconds")) {
    if (!e["for_seconds"].is_number_unsigned() || !e.contains("root_seed") ||
        !e["root_seed"].is_number_unsigned() || !e.contains("stop_on_failure") ||
        !e["stop_on_failure"].is_boolean()) {
      return absl::InvalidArgumentError(
          "a time-budgeted exploration needs for_seconds, root_seed (integers) and "
          "stop_on_failure (a bool)");
    }
    const uint64_t seconds = e["for_seconds"].get<uint64_t>();
    if (seconds == 0 || seconds > static_cast<uint64_t>(kMaxBudgetSeconds)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("for_seconds %d is not in [1, %d]", seconds, kMaxBudgetSeconds));
    }
    options->budget = std::chrono::seconds(static_cast<int64_t>(seconds));
    options->root_seed = e["root_seed"].get<uint64_t>();
    options->stop_on_failure = e["stop_on_failure"].get<bool>();
  } else {
    if (!e.contains("start") || !e["start"].is_number_unsigned() || !e.contains("seeds") ||
        !e["seeds"].is_number_unsigned()) {
      return absl::InvalidArgumentError("the exploration needs start and seeds (integers)");
    }
    options->start = e["start"].get<uint64_t>();
    options->seeds = e["seeds"].get<uint64_t>();
    if (options->seeds == 0 || options->seeds > 10'000'000 ||
        options->start > std::numeric_limits<uint64_t>::max() - (options->seeds - 1)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "seeds %d from %d is not an exploration lockstep runs", options->seeds, options->start));
    }
  }
  if (e.contains("unreadable")) {
    const nlohmann::json& u = e["unreadable"];
    if (!u.is_object() || !u.contains("under") || !u["under"].is_string() ||
        !u.contains("entries") || !u["entries"].is_array() || u["entries"].empty() ||
        u["entries"].size() > 100'000) {
      return absl::InvalidArgumentError(
          "the exploration's unreadable needs under (a string) and entries (1 to 100000 "
          "strings)");
    }
    unreadable->under = u["under"].get<std::string>();
    unreadable->entries.clear();
    for (const nlohmann::json& entry : u["entries"]) {
      if (!entry.is_string()) {
        return absl::InvalidArgumentError("the exploration's unreadable entries must be strings");
      }
      unreadable->entries.push_back(entry.get<std::string>());
    }
  }
  const nlohmann::json& list = e["scenarios"];
  if (list.empty() || list.size() > 100'000) {
    return absl::InvalidArgumentError("the exploration lists no scenario, or over 100000");
  }
  scenarios->clear();
  for (size_t k = 0; k < list.size(); ++k) {
    const nlohmann::json& s = list[k];
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !s.contains("path") ||
        !s["path"].is_string() || !s.contains("yaml") || !s["yaml"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("scenario %d of the exploration needs name, path and yaml (strings)", k));
    }
    const std::string& yaml = s["yaml"].get_ref<const std::string&>();
    if (yaml.size() > static_cast<size_t>(kMaxScenarioFileBytes)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("scenario %d's yaml is over %d bytes", k, kMaxScenarioFileBytes));
    }
    absl::StatusOr<Scenario> parsed =
        ParseScenario(yaml, absl::StrFormat("%s (scenario %d of the header)", path, k), "");
    if (!parsed.ok()) return parsed.status();
    if (parsed->name != s["name"].get<std::string>()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("scenario %d is named %s but its yaml names %s", k,
                          QuoteBytes(s["name"].get<std::string>()), QuoteBytes(parsed->name)));
    }
    parsed->path = s["path"].get<std::string>();
    scenarios->push_back(*std::move(parsed));
  }
  return absl::OkStatus();
}

// One run line of shard `file`; `prev` is the item of the line before.
absl::StatusOr<SeedOutcome> ParseRecord(const nlohmann::json& j, const ShardFile& file,
                                        std::optional<uint64_t> prev) {
  if (!j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  for (const char* key : {"i", "scenario", "seed", "verdict", "acceptable", "trace_hash"}) {
    if (!j.contains(key)) {
      return absl::InvalidArgumentError(absl::StrFormat("the run has no \"%s\"", key));
    }
  }
  if (!j["i"].is_number_unsigned() || !j["scenario"].is_string() ||
      !j["seed"].is_number_unsigned() || !j["verdict"].is_string() ||
      !j["acceptable"].is_boolean()) {
    return absl::InvalidArgumentError(
        "i and seed must be integers >= 0, scenario and verdict strings, acceptable a bool");
  }
  SeedOutcome o;
  o.index = j["i"].get<uint64_t>();
  o.seed = j["seed"].get<uint64_t>();
  o.acceptable = j["acceptable"].get<bool>();
  absl::StatusOr<Verdict> verdict = ParseVerdict(j["verdict"].get<std::string>());
  if (!verdict.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("verdict %s is not a verdict lockstep gives",
                                                      QuoteBytes(j["verdict"].get<std::string>())));
  }
  o.verdict = *verdict;
  const std::optional<uint64_t> hash = ParseTraceHash(j["trace_hash"]);
  if (!hash) {
    return absl::InvalidArgumentError("trace_hash is not a trace hash (0x and 16 hex digits)");
  }
  o.trace_hash = *hash;
  if (!o.acceptable) {
    for (const char* key : {"summary", "policy", "signature"}) {
      if (!j.contains(key) || !j[key].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("a failing run needs \"%s\" (a string)", key));
      }
    }
    o.summary = j["summary"].get<std::string>();
    o.policy = j["policy"].get<std::string>();
    o.signature = j["signature"].get<std::string>();
  }
  const ExploreOptions& options = file.options;
  const uint64_t shard = ShardOfItem(o.index, file.scenarios.size(), options);
  if (shard != options.shard_index) {
    return absl::InvalidArgumentError(
        absl::StrFormat("run %d belongs to shard %d of %d, not to this file's shard %d", o.index,
                        shard, options.shard_count, options.shard_index));
  }
  if (options.budget.count() == 0 && o.index >= ExplorationSize(file.scenarios.size(), options)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("run %d is past the exploration's %d runs", o.index,
                        ExplorationSize(file.scenarios.size(), options)));
  }
  if (prev && o.index <= *prev) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "run %d comes after run %d: runs are written once each, in order", o.index, *prev));
  }
  const ExploreItem item = ItemAt(o.index, file.scenarios.size(), options);
  o.scenario = item.scenario;
  const std::string& name = file.scenarios[item.scenario].name;
  if (j["scenario"].get<std::string>() != name || o.seed != item.seed) {
    return absl::InvalidArgumentError(
        absl::StrFormat("run %d is %s seed %d, but this exploration's run %d is %s seed %d",
                        o.index, QuoteBytes(j["scenario"].get<std::string>()), o.seed, o.index,
                        QuoteBytes(name), item.seed));
  }
  return o;
}

// "2, 5-9, 12" for sorted `values`, at most `max_ranges` ranges.
std::string Ranges(const std::vector<uint64_t>& values, size_t max_ranges = 20) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < values.size() && parts.size() < max_ranges) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(values[i]) : absl::StrCat(values[i], "-", values[j]));
    i = j + 1;
  }
  std::string text = absl::StrJoin(parts, ", ");
  if (i < values.size()) absl::StrAppendFormat(&text, " and %d more", values.size() - i);
  return text;
}

// The first scenario two headers' lists differ in, and how, for a message.
std::string ScenarioDifference(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_array() || !b.is_array()) return "their scenario lists differ";
  if (a.size() != b.size()) {
    return absl::StrFormat("%d scenarios vs %d (the scenario directory changed between shards)",
                           a.size(), b.size());
  }
  auto field = [](const nlohmann::json& s, const char* key) {
    return s.is_object() && s.contains(key) && s[key].is_string() ? s[key].get<std::string>()
                                                                  : std::string("?");
  };
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) continue;
    const std::string name = field(a[k], "name");
    if (name != field(b[k], "name")) {
      return absl::StrFormat("scenario %d is %s vs %s (the scenario directory changed)", k,
                             QuoteBytes(name), QuoteBytes(field(b[k], "name")));
    }
    if (field(a[k], "path") != field(b[k], "path")) {
      return absl::StrFormat(
          "scenario %s was read from %s vs %s: run every shard with the same scenario path, "
          "from the same directory (the summaries' replay commands name it)",
          QuoteBytes(name), QuoteBytes(field(a[k], "path")), QuoteBytes(field(b[k], "path")));
    }
    return absl::StrFormat(
        "scenario %s has different contents (its file, or the catalogue's hardware or model, "
        "changed between shards)",
        QuoteBytes(name));
  }
  return "their scenario lists differ";
}

}  // namespace

std::string ExplorationDifference(const nlohmann::json& a, const nlohmann::json& b) {
  if (!a.is_object() || !b.is_object()) return "their headers differ";
  std::vector<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.push_back(k);
  for (const auto& [k, v] : b.items()) {
    if (!a.contains(k)) keys.push_back(k);
  }
  for (const std::string& k : keys) {
    const nlohmann::json none = "(none)";
    const nlohmann::json& va = a.contains(k) ? a[k] : none;
    const nlohmann::json& vb = b.contains(k) ? b[k] : none;
    if (va == vb) continue;
    if (k == "scenarios") return ScenarioDifference(va, vb);
    return absl::StrFormat("%s %s vs %s", k, QuoteBytes(va.dump()), QuoteBytes(vb.dump()));
  }
  return "their headers differ";
}

std::string ShardFileName(uint64_t shard_index, uint64_t shard_count) {
  return absl::StrFormat("shard-%04d-of-%04d.jsonl", shard_index, shard_count);
}

bool IsShardFileName(const std::string& name) {
  // shard-DIGITS-of-DIGITS.jsonl
  auto digits = [](std::string_view t) {
    return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string_view t = name;
  if (!t.starts_with("shard-") || !t.ends_with(".jsonl")) return false;
  t = t.substr(6, t.size() - 6 - 6);
  const size_t of = t.find("-of-");
  return of != std::string_view::npos && digits(t.substr(0, of)) && digits(t.substr(of + 4));
}

std::string UnreadableMessage(const Unreadable& unreadable) {
  std::string text = absl::StrFormat(
      "%d entr%s under %s could not be read and did not run:\n", unreadable.entries.size(),
      unreadable.entries.size() == 1 ? "y" : "ies", unreadable.under);
  for (const std::string& u : unreadable.entries) absl::StrAppend(&text, "  ", u, "\n");
  return text;
}

nlohmann::json ExplorationJson(const std::vector<Scenario>& scenarios,
                               const ExploreOptions& options, const Unreadable& unreadable) {
  nlohmann::json list = nlohmann::json::array();
  for (const Scenario& s : scenarios) {
    list.push_back({{"name", s.name}, {"path", s.path}, {"yaml", ScenarioToYaml(s)}});
  }
  nlohmann::json e = {{"scenarios", list},
                      {"policy", options.policy},
                      {"schedule", options.schedule},
                      {"swarm", options.swarm}};
  if (options.budget.count() > 0) {
    e["for_seconds"] = static_cast<uint64_t>(options.budget.count());
    e["root_seed"] = options.root_seed;
    e["stop_on_failure"] = options.stop_on_failure;
  } else {
    e["start"] = options.start;
    e["seeds"] = options.seeds;
  }
  if (!unreadable.entries.empty()) {
    e["unreadable"] = {{"under", unreadable.under}, {"entries", unreadable.entries}};
  }
  return e;
}

void WriteResultFile(std::ostream& out, const std::vector<Scenario>& scenarios,
                     const ExploreOptions& options, const ExploreResult& result,
                     std::string_view build, const Unreadable& unreadable) {
  const nlohmann::json header = {
      {"lockstep_explore_results", kResultsFormat},
      {"build", build},
      {"shard", {{"index", options.shard_index}, {"count", options.shard_count}}},
      {"exploration", ExplorationJson(scenarios, options, unreadable)}};
  out << header.dump() << "\n";
  for (const SeedOutcome& o : result.outcomes) {
    nlohmann::json line = {{"i", o.index},
                           {"scenario", scenarios[o.scenario].name},
                           {"seed", o.seed},
                           {"verdict", std::string(VerdictName(o.verdict))},
                           {"acceptable", o.acceptable},
                           {"trace_hash", HexHash(o.trace_hash)}};
    if (!o.acceptable) {
      line["policy"] = o.policy;
      line["signature"] = o.signature;
      line["summary"] = o.summary;
    }
    out << line.dump() << "\n";
  }
  nlohmann::json end = {{"runs", result.outcomes.size()}};
  if (result.stopped) end["stopped"] = true;
  out << nlohmann::json({{"end", end}}).dump() << "\n";
}

absl::StatusOr<ShardFile> ReadResultFile(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot read (%s)", path, ec.message()));
  }
  if (!fs::is_regular_file(status)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: not a regular file; give a result file or a directory of them", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrFormat("%s: cannot open", path));
  }
  return ReadResultFile(in, path);
}

absl::StatusOr<ShardFile> ReadResultFile(std::istream& in, const std::string& path) {
  LineReader reader(in, kMaxLineBytes);
  ShardFile file;
  file.path = path;
  std::string text;
  uint64_t line = 0;
  bool ended = false;
  std::optional<uint64_t> prev;
  while (true) {
    const LineReader::Next next = reader.Read(&text);
    if (next == LineReader::Next::kEnd) break;
    ++line;
    if (next == LineReader::Next::kError) {
      return absl::FailedPreconditionError(absl::StrFormat("%s: reading failed", path));
    }
    if (next == LineReader::Next::kTooLong) {
      return LineError(path, line,
                       absl::StrFormat("line longer than %d MiB: not a result file lockstep wrote",
                                       kMaxLineBytes >> 20));
    }
    if (ended) {
      return LineError(path, line, "text after the end line: the file was edited or concatenated");
    }
    nlohmann::json j;
    if (JsonNestedAtMost(text, kMaxJsonDepth)) {
      j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    }
    if (!j.is_object()) {
      // Cut off by the end of the file: a run line, or a header that began
      // as one does (keys are written sorted).
      if (!reader.newline() && (line > 1 || std::string_view(text).starts_with("{\"build\""))) {
        return LineError(path, line,
                         "truncated: the file ends inside this line (the shard was stopped while "
                         "writing it; run the shard again)");
      }
      return LineError(path, line,
                       line == 1 ? "not a lockstep explore result file (write one with lockstep "
                                   "explore --out DIR)"
                                 : "not a JSON object (truncated or edited?)");
    }
    if (line == 1) {
      if (!j.contains("lockstep_explore_results") ||
          !j["lockstep_explore_results"].is_number_unsigned()) {
        return LineError(path, line,
                         "no result file header (write one with lockstep explore --out DIR)");
      }
      if (j["lockstep_explore_results"].get<uint64_t>() != kResultsFormat) {
        return LineError(path, line,
                         absl::StrFormat("result file format %s; this lockstep reads %d",
                                         j["lockstep_explore_results"].dump(), kResultsFormat));
      }
      if (!j.contains("shard") || !j["shard"].is_object() || !j["shard"].contains("index") ||
          !j["shard"].contains("count") || !j["shard"]["index"].is_number_unsigned() ||
          !j["shard"]["count"].is_number_unsigned()) {
        return LineError(path, line, "the header needs shard.index and shard.count (integers)");
      }
      if (!j.contains("build") || !j["build"].is_string() ||
          j["build"].get_ref<const std::string&>().size() > kMaxBuildBytes) {
        return LineError(path, line,
                         absl::StrFormat("the header needs build (a string of at most %d bytes)",
                                         kMaxBuildBytes));
      }
      file.build = j["build"].get<std::string>();
      file.shard_index = j["shard"]["index"].get<uint64_t>();
      file.shard_count = j["shard"]["count"].get<uint64_t>();
      if (file.shard_count == 0 || file.shard_count > kMaxShards ||
          file.shard_index >= file.shard_count) {
        return LineError(path, line,
                         absl::StrFormat("shard %d of %d does not exist (a count is in [1, %d] "
                                         "and an index below it)",
                                         file.shard_index, file.shard_count, kMaxShards));
      }
      if (!j.contains("exploration")) return LineError(path, line, "the header has no exploration");
      file.exploration = j["exploration"];
      if (absl::Status s = ParseExploration(file.exploration, path, &file.scenarios, &file.options,
                                            &file.unreadable);
          !s.ok()) {
        return LineError(path, line, s.message());
      }
      file.options.shard_index = file.shard_index;
      file.options.shard_count = file.shard_count;
      continue;
    }
    if (j.contains("end")) {
      if (!j["end"].is_object() || !j["end"].contains("runs") ||
          !j["end"]["runs"].is_number_unsigned()) {
        return LineError(path, line, "the end line needs runs (an integer)");
      }
      const uint64_t runs = j["end"]["runs"].get<uint64_t>();
      if (runs != file.outcomes.size()) {
        return LineError(path, line,
                         absl::StrFormat("the end line counts %d runs but the file has %d", runs,
                                         file.outcomes.size()));
      }
      if (j["end"].contains("stopped") && !j["end"]["stopped"].is_boolean()) {
        return LineError(path, line, "the end line's stopped must be true or false");
      }
      file.stopped = j["end"].value("stopped", false);
      if (file.options.budget.count() == 0) {
        file.expected_runs = ShardSize(ExplorationSize(file.scenarios.size(), file.options),
                                       file.shard_index, file.shard_count);
        if (file.stopped && runs >= file.expected_runs) {
          return LineError(
              path, line,
              absl::StrFormat("shard %d of %d stopped after %d runs, but it has %d",
                              file.shard_index, file.shard_count, runs, file.expected_runs));
        }
        if (!file.stopped && runs != file.expected_runs) {
          return LineError(
              path, line,
              absl::StrFormat("shard %d of %d has %d runs, not the %d it must have",
                              file.shard_index, file.shard_count, runs, file.expected_runs));
        }
      } else if (file.stopped) {
        return LineError(path, line,
                         "a --for shard does not stop early (its stop is its end): the file was "
                         "edited");
      }
      ended = true;
      continue;
    }
    absl::StatusOr<SeedOutcome> o = ParseRecord(j, file, prev);
    if (!o.ok()) return LineError(path, line, o.status().message());
    // With seeds, a shard's runs are its first items in order, stopped or not.
    if (file.options.budget.count() == 0) {
      const uint64_t j_item = ShardItem(file.outcomes.size(), file.scenarios.size(), file.options);
      if (o->index != j_item) {
        return LineError(path, line,
                         absl::StrFormat("run %d where this shard's run %d belongs (its run #%d): "
                                         "a shard keeps its first runs, in order",
                                         o->index, j_item, file.outcomes.size() + 1));
      }
    }
    prev = o->index;
    file.outcomes.push_back(*std::move(o));
  }
  if (line == 0) {
    return LineError(path, 1,
                     "empty: not a result file (write one with lockstep explore --out DIR)");
  }
  if (!ended) {
    return LineError(path, line,
                     "truncated: no end line after it (the shard did not finish; run it again)");
  }
  return file;
}

absl::StatusOr<MergedExploration> MergeShards(std::vector<ShardFile> shards) {
  if (shards.empty()) return absl::InvalidArgumentError("no result files to merge");
  const ShardFile& first = shards.front();
  // Another build may simulate another way (the trace hashes of every
  // catalogue scenario move when the simulator's model changes).
  std::map<std::string, std::vector<std::string>> files_of_build;
  for (const ShardFile& s : shards) files_of_build[s.build].push_back(s.path);
  if (files_of_build.size() > 1) {
    std::vector<std::string> builds;
    for (const auto& [build, files] : files_of_build) {
      constexpr size_t kNamed = 3;
      std::vector<std::string> named(
          files.begin(), files.begin() + static_cast<ptrdiff_t>(std::min(files.size(), kNamed)));
      builds.push_back(absl::StrFormat(
          "lockstep %s: %s%s", build, absl::StrJoin(named, ", "),
          files.size() > kNamed ? absl::StrFormat(" and %d more", files.size() - kNamed) : ""));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "the shards were written by different builds of lockstep, whose runs need not agree:\n  "
        "%s\nrun every shard of an exploration with one build",
        absl::StrJoin(builds, "\n  ")));
  }
  for (const ShardFile& s : shards) {
    if (s.shard_count != first.shard_count) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "mixed explorations: %s is shard %d of %d, %s shard %d of %d; merge the shards of one "
          "exploration (one --out directory per exploration)",
          first.path, first.shard_index, first.shard_count, s.path, s.shard_index, s.shard_count));
    }
    if (s.exploration != first.exploration) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "mixed explorations: %s and %s are shards of different explorations (%s); merge the "
          "shards of one exploration (one --out directory per exploration)",
          first.path, s.path, ExplorationDifference(first.exploration, s.exploration)));
    }
  }
  std::map<uint64_t, std::vector<std::string>> files_of;
  for (const ShardFile& s : shards) files_of[s.shard_index].push_back(s.path);
  std::vector<uint64_t> missing;
  for (uint64_t i = 0; i < first.shard_count; ++i) {
    if (!files_of.contains(i)) missing.push_back(i);
  }
  const uint64_t missing_count = missing.size();
  std::vector<std::string> problems;
  if (missing_count > 0) {
    problems.push_back(absl::StrFormat(
        "missing: %d of the %d shards, shard%s %s; run %s again (--shard I/%d) into the same "
        "directory",
        missing_count, first.shard_count, missing_count == 1 ? "" : "s", Ranges(missing),
        missing_count == 1 ? "it" : "them", first.shard_count));
  }
  for (const auto& [index, files] : files_of) {
    if (files.size() > 1) {
      problems.push_back(absl::StrFormat("duplicated: shard %d of %d in %s; keep one of them",
                                         index, first.shard_count, absl::StrJoin(files, ", ")));
    }
  }
  for (const ShardFile& s : shards) {
    if (s.stopped) {
      problems.push_back(absl::StrFormat(
          "stopped: shard %d of %d after %d of its %d runs (%s); finish it: its explore command "
          "again, with --resume",
          s.shard_index, s.shard_count, s.outcomes.size(), s.expected_runs, s.path));
    }
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the shards do not make up the exploration:\n  %s", absl::StrJoin(problems, "\n  ")));
  }
  MergedExploration merged;
  merged.build = first.build;
  merged.scenarios = first.scenarios;
  merged.options = first.options;
  merged.options.shard_index = 0;
  merged.options.shard_count = 1;
  merged.unreadable = first.unreadable;
  std::vector<SeedOutcome> outcomes;
  for (ShardFile& s : shards) {
    outcomes.insert(outcomes.end(), std::make_move_iterator(s.outcomes.begin()),
                    std::make_move_iterator(s.outcomes.end()));
  }
  merged.result = SummarizeOutcomes(merged.scenarios, std::move(outcomes));
  return merged;
}

}  // namespace lockstep::faults
