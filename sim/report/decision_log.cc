#include "sim/report/decision_log.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/memory/data.h"
#include "sim/scenario/input_text.h"

namespace lockstep {
namespace {

// Fields written at the top level of an entry, not among its inputs.
bool TopLevel(std::string_view name) {
  static constexpr std::string_view kTop[] = {"seq",    "group",  "backend", "algorithm",
                                              "tokens", "hidden", "dtype"};
  return std::find(std::begin(kTop), std::end(kTop), name) != std::end(kTop);
}

// "true" -> true, "17" -> 17, anything else as text.
nlohmann::json Scalar(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  int64_t n = 0;
  const char* end = text.data() + text.size();
  if (!text.empty()) {
    const auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (ec == std::errc() && ptr == end) return n;
  }
  return std::string(text);
}

absl::Status Bad(const std::string& path, int line, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s", path, line, what));
}

// The keys every entry must carry, with the JSON type each must have.
absl::Status RequireKeys(const nlohmann::json& j, const std::string& path, int line) {
  struct Key {
    std::string_view name;
    bool (nlohmann::json::*is)() const noexcept;
    std::string_view type;
  };
  static const Key kKeys[] = {
      {"call", &nlohmann::json::is_number_integer, "an integer"},
      {"group", &nlohmann::json::is_string, "a string"},
      {"peers", &nlohmann::json::is_array, "an array of ranks"},
      {"seq", &nlohmann::json::is_number_integer, "an integer"},
      {"site", &nlohmann::json::is_string, "a string"},
      {"tokens", &nlohmann::json::is_number_integer, "an integer"},
      {"hidden", &nlohmann::json::is_number_integer, "an integer"},
      {"dtype", &nlohmann::json::is_string, "a string"},
      {"backend", &nlohmann::json::is_string, "a string"},
      {"inputs", &nlohmann::json::is_object, "an object"},
  };
  for (const Key& k : kKeys) {
    const auto it = j.find(k.name);
    if (it == j.end()) return Bad(path, line, absl::StrFormat("missing key '%s'", k.name));
    if (!((*it).*k.is)()) {
      return Bad(path, line, absl::StrFormat("key '%s' must be %s", k.name, k.type));
    }
  }
  const auto algo = j.find("algorithm");
  if (algo != j.end() && !algo->is_string() && !algo->is_null()) {
    return Bad(path, line, "key 'algorithm' must be a string or null");
  }
  return absl::OkStatus();
}

std::string GroupKey(const std::string& group, const std::vector<int>& peers) {
  return absl::StrFormat("%s [%s]", group, absl::StrJoin(peers, ","));
}

// The inputs (and call fields) whose values differ between two decisions,
// named from `mine`'s side: "workspace_initialized=false".
std::vector<std::string> Differences(const nlohmann::json& mine, const nlohmann::json& other) {
  std::vector<std::string> out;
  auto text = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (const auto& [key, value] : mine.items()) {
    if (key == "inputs") continue;
    const auto it = other.find(key);
    if (it == other.end() || *it != value) out.push_back(absl::StrCat(key, "=", text(value)));
  }
  const nlohmann::json& a = mine["inputs"];
  const nlohmann::json& b = other["inputs"];
  for (const auto& [key, value] : a.items()) {
    const auto it = b.find(key);
    if (it == b.end() || *it != value) out.push_back(absl::StrCat(key, "=", text(value)));
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) out.push_back(absl::StrCat(key, " not evaluated"));
  }
  return out;
}

// One divergence of one group, ordered by the earliest call of it on any
// member (then by group).
struct Divergence {
  int64_t first_call = 0;
  std::string group;
  std::string summary;
  nlohmann::json details;
};

// `check` with its first divergence, or `alike` when there was none.
DecisionLogCheck Concluded(DecisionLogCheck& check, std::optional<Divergence> first,
                           std::string alike) {
  if (first) {
    check.diverged = true;
    check.summary = std::move(first->summary);
    check.details = std::move(first->details);
  } else {
    check.summary = std::move(alike);
    check.details = nlohmann::json::object();
  }
  return check;
}

}  // namespace

std::string DecisionLogFileName(int rank) { return absl::StrFormat("rank-%d.jsonl", rank); }

nlohmann::json DecisionLogHeader(int rank, int world, std::string_view source,
                                 std::string_view scenario) {
  return {{"format", std::string(kDecisionLogFormat)},
          {"version", kDecisionLogVersion},
          {"rank", rank},
          {"world", world},
          {"source", std::string(source)},
          {"scenario", scenario.empty() ? nlohmann::json(nullptr) : nlohmann::json(scenario)}};
}

nlohmann::json DecisionLogEntry(int64_t call, const ParallelLayout& layout, int object,
                                std::string_view site, const DecisionRecord& record) {
  nlohmann::json inputs = nlohmann::json::object();
  const std::span<const DecisionField> fields = DecisionFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i < static_cast<size_t>(kNumPredicates)) {
      const auto p = static_cast<Predicate>(i);
      if (record.Evaluated(p)) inputs[std::string(fields[i].name)] = record.Held(p);
      continue;
    }
    // "name=value" (or several, space-separated) as the reports print them.
    const std::string described = fields[i].describe(record, &layout);
    for (absl::string_view piece : absl::StrSplit(described, ' ', absl::SkipEmpty())) {
      const std::string_view part(piece.data(), piece.size());
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = part.substr(0, eq);
      if (TopLevel(key)) continue;
      inputs[std::string(key)] = Scalar(part.substr(eq + 1));
    }
  }
  const std::span<const int> peers = layout.Peers(record.group);
  return {{"call", call},
          {"group", layout.objects()[static_cast<size_t>(object)].name},
          {"peers", std::vector<int>(peers.begin(), peers.end())},
          {"seq", record.seq},
          {"site", std::string(site)},
          {"tokens", record.call.tensor.tokens()},
          {"hidden", record.call.tensor.hidden()},
          {"dtype", std::string(DTypeName(record.call.tensor.dtype))},
          {"backend", std::string(BackendKindName(record.backend))},
          {"algorithm", record.algorithm == Algorithm::kNone
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(std::string(AlgorithmName(record.algorithm)))},
          {"inputs", std::move(inputs)}};
}

absl::StatusOr<RankDecisionLog> ParseDecisionLog(std::string_view text, const std::string& path) {
  RankDecisionLog log;
  log.path = path;
  int line_no = 0;
  bool header = false;
  for (absl::string_view piece :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::string_view line(piece.data(), piece.size());
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.size() > kMaxDecisionLogLineBytes) {
      return Bad(path, line_no,
                 absl::StrFormat("a line of %d bytes; entries are at most %d", line.size(),
                                 kMaxDecisionLogLineBytes));
    }
    if (const std::optional<size_t> bad = FirstInvalidUtf8(line)) {
      return Bad(path, line_no, absl::StrFormat("byte %d is not UTF-8", *bad));
    }
    if (!JsonNestedAtMost(line, 4)) {
      return Bad(path, line_no,
                 "not a JSON object of the decision-log format (docs/DECISION_LOG.md)");
    }
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      return Bad(path, line_no,
                 "not a JSON object of the decision-log format (docs/DECISION_LOG.md)");
    }
    if (!header) {
      const auto format = j.find("format");
      if (format == j.end() || *format != kDecisionLogFormat) {
        return Bad(path, line_no,
                   absl::StrFormat("the first line must be the header, with \"format\": \"%s\"",
                                   kDecisionLogFormat));
      }
      const auto version = j.find("version");
      if (version == j.end() || *version != kDecisionLogVersion) {
        return Bad(path, line_no,
                   absl::StrFormat("unsupported version %s; this lockstep reads version %d",
                                   version == j.end() ? "(missing)" : version->dump(),
                                   kDecisionLogVersion));
      }
      const auto rank = j.find("rank");
      const auto world = j.find("world");
      if (world == j.end() || !world->is_number_integer() || *world < 1 || *world > (1 << 20)) {
        return Bad(path, line_no, "key 'world' must be an integer from 1 to 1048576");
      }
      if (rank == j.end() || !rank->is_number_integer() || *rank < 0 || *rank >= *world) {
        return Bad(path, line_no, "key 'rank' must be an integer below 'world'");
      }
      log.rank = rank->get<int>();
      log.world = world->get<int>();
      const auto source = j.find("source");
      if (source != j.end() && source->is_string()) log.source = source->get<std::string>();
      header = true;
      continue;
    }
    if (absl::Status s = RequireKeys(j, path, line_no); !s.ok()) return s;
    RankDecisionLog::Call c;
    c.line = line_no;
    c.call = j["call"].get<int64_t>();
    c.group = j["group"].get<std::string>();
    c.seq = j["seq"].get<int64_t>();
    c.site = j["site"].get<std::string>();
    if (c.call < 0 || c.seq < 0) return Bad(path, line_no, "'call' and 'seq' count from 0");
    for (const nlohmann::json& p : j["peers"]) {
      if (!p.is_number_integer() || p < 0 || p >= log.world) {
        return Bad(path, line_no,
                   absl::StrFormat("key 'peers': every peer must be a rank below the world size %d",
                                   log.world));
      }
      c.peers.push_back(p.get<int>());
    }
    if (std::find(c.peers.begin(), c.peers.end(), log.rank) == c.peers.end()) {
      return Bad(
          path, line_no,
          absl::StrFormat("key 'peers': the group must include this log's rank %d", log.rank));
    }
    if (std::set<int>(c.peers.begin(), c.peers.end()).size() != c.peers.size()) {
      return Bad(path, line_no, "key 'peers': a rank is listed twice");
    }
    for (const auto& [key, value] : j["inputs"].items()) {
      if (value.is_structured()) {
        return Bad(path, line_no,
                   absl::StrFormat("input '%s' must be a boolean, a number or a string", key));
      }
    }
    c.decision = {{"tokens", j["tokens"]},
                  {"hidden", j["hidden"]},
                  {"dtype", j["dtype"]},
                  {"backend", j["backend"]},
                  {"algorithm", j.value("algorithm", nlohmann::json(nullptr))},
                  {"inputs", j["inputs"]}};
    log.calls.push_back(std::move(c));
  }
  if (!header) return Bad(path, 1, "empty: a decision log starts with its header line");
  return log;
}

absl::StatusOr<std::vector<RankDecisionLog>> ReadDecisionLogs(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrFormat("%s: not a directory of decision logs", dir));
  }
  std::map<int, std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    absl::string_view n = name;
    if (!absl::ConsumePrefix(&n, "rank-") || !absl::ConsumeSuffix(&n, ".jsonl")) continue;
    int rank = 0;
    if (!absl::SimpleAtoi(n, &rank) || rank < 0) continue;
    if (!files.emplace(rank, e.path().string()).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: two logs of rank %d (%s and %s)", dir, rank, files[rank], name));
    }
  }
  if (ec) return absl::InternalError(absl::StrFormat("%s: %s", dir, ec.message()));
  if (files.empty()) {
    return absl::NotFoundError(absl::StrFormat("%s: no rank-<R>.jsonl decision logs in it", dir));
  }
  std::vector<RankDecisionLog> logs;
  for (const auto& [rank, path] : files) {
    absl::StatusOr<std::string> text = ReadInputFile(path, kMaxDecisionLogBytes, "decision logs");
    if (!text.ok()) return text.status();
    absl::StatusOr<RankDecisionLog> log = ParseDecisionLog(*text, path);
    if (!log.ok()) return log.status();
    if (log->rank != rank) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:1: the header says rank %d, the file name rank %d", path, log->rank, rank));
    }
    if (!logs.empty() && log->world != logs.front().world) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:1: world %d, but %s says %d: logs of different runs", path,
                          log->world, logs.front().path, logs.front().world));
    }
    logs.push_back(*std::move(log));
  }
  return logs;
}

absl::StatusOr<DecisionLogCheck> CheckDecisionLogs(const std::vector<RankDecisionLog>& logs) {
  DecisionLogCheck out;
  std::map<int, const RankDecisionLog*> by_rank;
  for (const RankDecisionLog& l : logs) by_rank[l.rank] = &l;
  // Group instance -> member rank -> seq -> call.
  struct Instance {
    std::string group;
    std::vector<int> peers;
    std::map<int, std::map<int64_t, const RankDecisionLog::Call*>> calls;
  };
  std::map<std::string, Instance> instances;
  for (const RankDecisionLog& l : logs) {
    for (const RankDecisionLog::Call& c : l.calls) {
      ++out.calls;
      Instance& in = instances[GroupKey(c.group, c.peers)];
      in.group = c.group;
      in.peers = c.peers;
      if (!in.calls[l.rank].emplace(c.seq, &c).second) {
        return absl::InvalidArgumentError(absl::StrFormat("%s:%d: call %d on %s is logged twice",
                                                          l.path, c.line, c.seq,
                                                          GroupKey(c.group, c.peers)));
      }
    }
  }
  out.groups = static_cast<int64_t>(instances.size());
  std::optional<Divergence> first;
  auto consider = [&](Divergence d) {
    if (!first || d.first_call < first->first_call ||
        (d.first_call == first->first_call && d.group < first->group)) {
      first = std::move(d);
    }
  };
  for (const auto& [key, in] : instances) {
    for (int peer : in.peers) {
      if (by_rank.count(peer) == 0) {
        const auto& [writer, calls] = *in.calls.begin();
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: rank %d is a peer of %s (line %d) but has no log; give check-log every rank's "
            "log",
            by_rank[writer]->path, peer, key, calls.begin()->second->line));
      }
    }
    std::set<int64_t> seqs;
    for (const auto& [rank, calls] : in.calls) {
      for (const auto& [seq, c] : calls) seqs.insert(seq);
    }
    for (int64_t seq : seqs) {
      std::vector<int> made, missing;
      std::vector<const RankDecisionLog::Call*> present;
      int64_t first_call = INT64_MAX;
      for (int peer : in.peers) {
        const auto member = in.calls.find(peer);
        const RankDecisionLog::Call* c = nullptr;
        if (member != in.calls.end()) {
          const auto it = member->second.find(seq);
          if (it != member->second.end()) c = it->second;
        }
        if (c == nullptr) {
          missing.push_back(peer);
          continue;
        }
        made.push_back(peer);
        present.push_back(c);
        first_call = std::min(first_call, c->call);
      }
      const std::string& site = present.front()->site;
      if (!missing.empty()) {
        consider(Divergence{
            first_call,
            key,
            absl::StrFormat("call sequences diverge on %s at its call %d (%s): rank%s %s made it, "
                            "rank%s %s never did",
                            key, seq, site, made.size() > 1 ? "s" : "", RankRanges(made),
                            missing.size() > 1 ? "s" : "", RankRanges(missing)),
            {{"kind", "sequence"},
             {"group", key},
             {"seq", seq},
             {"site", site},
             {"made", made},
             {"missing", missing}}});
        break;
      }
      // Same position, same call site?
      std::map<std::string, std::vector<int>> by_site;
      for (size_t i = 0; i < present.size(); ++i) by_site[present[i]->site].push_back(made[i]);
      if (by_site.size() > 1) {
        std::vector<std::string> sides;
        nlohmann::json details = nlohmann::json::array();
        for (const auto& [s, ranks] : by_site) {
          sides.push_back(absl::StrFormat("rank%s %s at %s", ranks.size() > 1 ? "s" : "",
                                          RankRanges(ranks), s));
          details.push_back({{"ranks", ranks}, {"site", s}});
        }
        consider(Divergence{first_call,
                            key,
                            absl::StrFormat("call order diverges on %s at its call %d: %s", key,
                                            seq, absl::StrJoin(sides, "; ")),
                            {{"kind", "order"}, {"group", key}, {"seq", seq}, {"sides", details}}});
        break;
      }
      // The decisions themselves.
      std::map<std::string, std::vector<size_t>> by_decision;
      for (size_t i = 0; i < present.size(); ++i) {
        by_decision[present[i]->decision.dump()].push_back(i);
      }
      if (by_decision.size() == 1) continue;
      std::vector<std::string> texts;
      nlohmann::json sides = nlohmann::json::array();
      for (const auto& [dump, members] : by_decision) {
        const nlohmann::json& mine = present[members.front()]->decision;
        std::vector<int> ranks;
        for (size_t m : members) ranks.push_back(made[m]);
        std::vector<std::string> inputs;
        for (const auto& [other_dump, others] : by_decision) {
          if (other_dump == dump) continue;
          inputs = Differences(mine, present[others.front()]->decision);
          break;
        }
        const std::string algorithm =
            mine["algorithm"].is_string() ? "/" + mine["algorithm"].get<std::string>() : "";
        texts.push_back(absl::StrFormat(
            "rank%s %s chose %s%s%s", ranks.size() > 1 ? "s" : "", RankRanges(ranks),
            mine["backend"].get<std::string>(), algorithm,
            inputs.empty() ? "" : absl::StrFormat(": %s", absl::StrJoin(inputs, ", "))));
        sides.push_back({{"ranks", ranks},
                         {"backend", mine["backend"]},
                         {"algorithm", mine["algorithm"]},
                         {"differing_inputs", inputs},
                         {"line", present[members.front()]->line}});
      }
      consider(Divergence{
          first_call,
          key,
          absl::StrFormat("first divergent decision: %s call %d at %s: %s", key, seq, site,
                          absl::StrJoin(texts, "; ")),
          {{"kind", "decision"}, {"group", key}, {"seq", seq}, {"site", site}, {"sides", sides}}});
      break;
    }
  }
  return Concluded(
      out, std::move(first),
      absl::StrFormat("%d calls of %d rank%s on %d group%s: every group's members decided alike",
                      out.calls, logs.size(), logs.size() == 1 ? "" : "s", out.groups,
                      out.groups == 1 ? "" : "s"));
}

absl::StatusOr<DecisionLogCheck> CompareDecisionLogRuns(
    const std::vector<RankDecisionLog>& mine, const std::vector<RankDecisionLog>& theirs) {
  DecisionLogCheck out;
  if (mine.size() != theirs.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the runs hold logs of %d and %d ranks: compare logs of the same scenario",
                        mine.size(), theirs.size()));
  }
  std::optional<Divergence> first;
  for (size_t r = 0; r < mine.size(); ++r) {
    const RankDecisionLog& a = mine[r];
    const RankDecisionLog& b = theirs[r];
    if (a.rank != b.rank || a.world != b.world) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s and %s: rank %d of world %d against rank %d of world %d", a.path,
                          b.path, a.rank, a.world, b.rank, b.world));
    }
    const std::string who_a = a.source.empty() ? a.path : a.source;
    const std::string who_b = b.source.empty() ? b.path : b.source;
    const size_t n = std::max(a.calls.size(), b.calls.size());
    out.calls += static_cast<int64_t>(a.calls.size());
    for (size_t i = 0; i < n; ++i) {
      if (first && static_cast<int64_t>(i) >= first->first_call) break;
      const RankDecisionLog::Call* x = i < a.calls.size() ? &a.calls[i] : nullptr;
      const RankDecisionLog::Call* y = i < b.calls.size() ? &b.calls[i] : nullptr;
      std::string summary;
      nlohmann::json details = {{"rank", a.rank}, {"call", i}};
      if (x == nullptr || y == nullptr) {
        const RankDecisionLog::Call* c = x != nullptr ? x : y;
        summary = absl::StrFormat("rank %d's call %d (%s call %d at %s) is in the %s run only",
                                  a.rank, i, GroupKey(c->group, c->peers), c->seq, c->site,
                                  x != nullptr ? who_a : who_b);
        details["kind"] = "sequence";
      } else if (GroupKey(x->group, x->peers) != GroupKey(y->group, y->peers) || x->seq != y->seq ||
                 x->site != y->site) {
        summary = absl::StrFormat(
            "rank %d's call %d: %s call %d at %s in the %s run, %s call %d "
            "at %s in the %s run",
            a.rank, i, GroupKey(x->group, x->peers), x->seq, x->site, who_a,
            GroupKey(y->group, y->peers), y->seq, y->site, who_b);
        details["kind"] = "order";
      } else if (x->decision != y->decision) {
        auto chose = [](const nlohmann::json& d) {
          return d["backend"].get<std::string>() +
                 (d["algorithm"].is_string() ? "/" + d["algorithm"].get<std::string>() : "");
        };
        summary = absl::StrFormat(
            "rank %d's call %d (%s call %d at %s): the %s run chose %s: %s; the %s run chose %s: "
            "%s",
            a.rank, i, GroupKey(x->group, x->peers), x->seq, x->site, who_a, chose(x->decision),
            absl::StrJoin(Differences(x->decision, y->decision), ", "), who_b, chose(y->decision),
            absl::StrJoin(Differences(y->decision, x->decision), ", "));
        details["kind"] = "decision";
      } else {
        continue;
      }
      if (!first || static_cast<int64_t>(i) < first->first_call) {
        first = Divergence{static_cast<int64_t>(i), "", summary, details};
      }
      break;
    }
  }
  return Concluded(out, std::move(first),
                   absl::StrFormat("%d calls of %d rank%s: both runs decided alike", out.calls,
                                   mine.size(), mine.size() == 1 ? "" : "s"));
}

}  // namespace lockstep
