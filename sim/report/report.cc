#include "sim/report/report.h"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "sim/report/display_text.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep {

bool AsExpected(const Scenario& scenario, Verdict verdict) {
  if (scenario.expect) return *scenario.expect == verdict;
  return verdict == Verdict::kClean || verdict == Verdict::kFailStop;
}

std::string HexHash(uint64_t hash) { return absl::StrFormat("0x%016x", hash); }

nlohmann::json MakeReport(const Scenario& scenario, const SimOptions& options,
                          const SimResult& result) {
  nlohmann::json report;
  report["lockstep"] = {{"report_format", kReportFormat}, {"tool", "lockstep sim"}};
  report["scenario"] = {
      {"name", scenario.name}, {"path", scenario.path}, {"yaml", ScenarioToYaml(scenario)}};
  report["seed"] = options.seed;
  report["policy"] = result.policy;
  report["schedule"] = options.schedule;
  report["verdict"] = std::string(VerdictName(result.verdict));
  report["expect"] =
      scenario.expect ? nlohmann::json(std::string(VerdictName(*scenario.expect))) : nullptr;
  report["as_expected"] = AsExpected(scenario, result.verdict);
  report["silent_failure"] = IsSilentFailure(result.verdict);
  report["summary"] = result.summary;
  if (result.detector) report["detector"] = std::string(DetectorOf(*result.detector).name);
  report["details"] = result.details.is_null() ? nlohmann::json::object() : result.details;
  report["unmodelled"] = result.unmodelled;
  report["trace_hash"] = HexHash(result.trace_hash);
  report["stats"] = {{"rank_calls", result.rank_calls},
                     {"schedule_steps", result.schedule_steps},
                     {"virtual_time_ns", result.virtual_ns},
                     {"contributors_named_by_rerun", result.exact_rerun}};
  return report;
}

std::string FormatResult(const Scenario& scenario, const SimOptions& options,
                         const SimResult& result) {
  std::string out =
      absl::StrFormat("scenario %s%s, seed %d, policy %s\n", DisplayText(scenario.name),
                      scenario.path.empty() ? "" : " (" + DisplayText(scenario.path) + ")",
                      options.seed, result.policy);
  const bool ok = AsExpected(scenario, result.verdict);
  absl::StrAppendFormat(&out, "verdict: %s (%s)\n", VerdictName(result.verdict),
                        scenario.expect
                            ? absl::StrFormat("expected %s%s", VerdictName(*scenario.expect),
                                              ok ? "" : " - NOT AS EXPECTED")
                            : (ok ? "acceptable outcome" : "SILENT FAILURE"));
  absl::StrAppendFormat(&out, "  %s\n", result.summary);
  if (result.verdict == Verdict::kHang && result.details.contains("blocked")) {
    for (const auto& w : result.details["blocked"]) {
      absl::StrAppendFormat(&out, "  - %s\n", w["waits_for"].get<std::string>());
    }
    const auto& fire = result.details["would_fire"];
    if (fire.is_null()) {
      absl::StrAppendFormat(&out, "  no blocked rank's wait has a bound: nothing would end it\n");
    } else {
      absl::StrAppendFormat(&out,
                            "  without the deadlock check, %s of rank %d would fire at %.3f ms "
                            "virtual time: a timeout that rescues a logic bug is still a bug\n",
                            fire["what"].get<std::string>(), fire["rank"].get<int>(),
                            static_cast<double>(fire["virtual_time_ns"].get<int64_t>()) / 1e6);
    }
  }
  for (const std::string& u : result.unmodelled) {
    absl::StrAppendFormat(&out, "  unmodelled backend: %s\n", u);
  }
  absl::StrAppendFormat(&out, "trace hash %s, %d all-reduces, %d schedule steps, %.3f ms virtual\n",
                        HexHash(result.trace_hash), result.rank_calls, result.schedule_steps,
                        static_cast<double>(result.virtual_ns) / 1e6);
  return out;
}

std::string FirstDecisionDifference(const SimResult& a, const SimResult& b) {
  // Each rank's calls in order (the trace is in completion order).
  auto by_rank = [](const SimResult& r) {
    std::map<int, std::vector<const TraceEvent*>> out;
    for (const TraceEvent& e : r.trace_events) out[e.rank].push_back(&e);
    return out;
  };
  const auto calls_a = by_rank(a);
  const auto calls_b = by_rank(b);
  auto chose = [](const TraceEvent& e) {
    return e.algorithm == Algorithm::kNone
               ? std::string(BackendKindName(e.backend))
               : absl::StrFormat("%s/%s", BackendKindName(e.backend), AlgorithmName(e.algorithm));
  };
  // The earliest difference in virtual time over all ranks.
  std::string first;
  int64_t first_ns = std::numeric_limits<int64_t>::max();
  for (const auto& [rank, ours] : calls_a) {
    auto it = calls_b.find(rank);
    const size_t theirs = it == calls_b.end() ? 0 : it->second.size();
    for (size_t i = 0; i < std::max(ours.size(), theirs); ++i) {
      const TraceEvent* x = i < ours.size() ? ours[i] : nullptr;
      const TraceEvent* y = i < theirs ? it->second[i] : nullptr;
      if (x != nullptr && y != nullptr && x->site.ToString() == y->site.ToString() &&
          x->object == y->object && x->backend == y->backend && x->algorithm == y->algorithm) {
        continue;
      }
      const int64_t at = x != nullptr ? x->begin_ns : y->begin_ns;
      if (at < first_ns) {
        first_ns = at;
        auto what = [&](const TraceEvent* e) {
          return e == nullptr ? std::string("made no such call")
                              : absl::StrFormat("chose %s at %s", chose(*e), e->site.ToString());
        };
        first = absl::StrFormat("rank %d call %d: %s %s, %s %s", rank, i, a.policy, what(x),
                                b.policy, what(y));
      }
      break;
    }
  }
  if (first.empty()) {
    return absl::StrFormat("%s and %s decided every call alike", a.policy, b.policy);
  }
  return "first call decided differently: " + first;
}

}  // namespace lockstep
