#include "hw/hw_compare.h"

#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "dispatch/decision.h"

namespace lockstep::hw {
namespace {

using CallKey = std::tuple<int32_t, int32_t, uint64_t>;  // rank, object, seq

std::map<CallKey, const TraceEvent*> ByCall(const SimResult& r) {
  std::map<CallKey, const TraceEvent*> calls;
  for (const TraceEvent& e : r.trace_events) calls[{e.rank, e.object, e.seq}] = &e;
  return calls;
}

std::string Describe(const TraceEvent& e) {
  return absl::StrFormat("%s %s%s, %d tokens%s", e.site.ToString(), BackendKindName(e.backend),
                         e.algorithm == Algorithm::kNone
                             ? std::string()
                             : absl::StrFormat(" %s", AlgorithmName(e.algorithm)),
                         e.tokens, e.failed ? ", failed" : "");
}

}  // namespace

std::vector<std::string> CompareRuns(const SimResult& hardware, const SimResult& simulated,
                                     size_t max_differences) {
  std::vector<std::string> out;
  if (hardware.verdict != simulated.verdict) {
    out.push_back(absl::StrFormat("verdict: hardware %s, simulator %s",
                                  VerdictName(hardware.verdict), VerdictName(simulated.verdict)));
  }
  const auto hw = ByCall(hardware);
  const auto sim = ByCall(simulated);
  // Where both runs stopped, where each stopped depends on timing (the
  // simulator stops every rank at the first failure; on GPUs the others run
  // into their bounded waits): only calls both made are compared, and not
  // whether they failed.
  const bool both_stopped =
      hardware.verdict != Verdict::kClean && simulated.verdict != Verdict::kClean;
  size_t calls = 0;
  auto add = [&](std::string line) {
    if (calls++ < max_differences) out.push_back(std::move(line));
  };
  for (const auto& [key, h] : hw) {
    const auto [rank, object, seq] = key;
    const auto it = sim.find(key);
    if (it == sim.end()) {
      if (both_stopped) continue;
      add(absl::StrFormat("rank %d group %d call %d: hardware made %s, the simulator did not", rank,
                          object, seq, Describe(*h)));
      continue;
    }
    const TraceEvent& s = *it->second;
    if (h->site.ToString() != s.site.ToString() || h->backend != s.backend ||
        h->algorithm != s.algorithm || h->tokens != s.tokens ||
        (!both_stopped && h->failed != s.failed)) {
      add(absl::StrFormat("rank %d group %d call %d: hardware %s, simulator %s", rank, object, seq,
                          Describe(*h), Describe(s)));
    }
  }
  for (const auto& [key, s] : sim) {
    if (hw.count(key) != 0 || both_stopped) continue;
    const auto [rank, object, seq] = key;
    add(absl::StrFormat("rank %d group %d call %d: the simulator made %s, hardware did not", rank,
                        object, seq, Describe(*s)));
  }
  if (calls > max_differences) {
    out.push_back(absl::StrFormat("... and %d more differing calls", calls - max_differences));
  }
  return out;
}

}  // namespace lockstep::hw
