#include "faults/shrink.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/str_format.h"
#include "faults/runner.h"

namespace lockstep::faults {
namespace {

int Layers(const Scenario& s) { return s.workload.layers > 0 ? s.workload.layers : s.model.layers; }

struct Candidate {
  std::string what;
  Scenario scenario;
};

// Keeps the faults whose ranks still exist in a world of `world` ranks.
void DropFaultsOutside(Scenario& s, int world) {
  std::vector<FaultSpec> kept;
  for (FaultSpec f : s.faults) {
    f.ranks.erase(std::remove_if(f.ranks.begin(), f.ranks.end(), [&](int r) { return r >= world; }),
                  f.ranks.end());
    if (!f.ranks.empty()) kept.push_back(std::move(f));
  }
  s.faults = std::move(kept);
}

std::vector<Candidate> Candidates(const Scenario& s) {
  std::vector<Candidate> out;
  auto add = [&](std::string what, const std::function<bool(Scenario&)>& edit) {
    Scenario c = s;
    if (edit(c)) out.push_back({std::move(what), std::move(c)});
  };
  for (size_t i = 0; i < s.faults.size(); ++i) {
    add(absl::StrFormat("fault %s removed", s.faults[i].kind), [i](Scenario& c) {
      c.faults.erase(c.faults.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    });
  }
  if (s.parallel.pp > 1) {
    add(absl::StrFormat("pp %d -> %d", s.parallel.pp, s.parallel.pp / 2), [](Scenario& c) {
      c.parallel.pp /= 2;
      c.parallel.world = 0;
      DropFaultsOutside(c, static_cast<int>(c.parallel.WorldSize()));
      return c.parallel.pp * 2 <= Layers(c) * 2;
    });
  }
  if (s.parallel.tp > 1) {
    add(absl::StrFormat("tp %d -> %d", s.parallel.tp, s.parallel.tp / 2), [](Scenario& c) {
      ParallelConfig& p = c.parallel;
      if (p.tp % 2 != 0) return false;
      p.tp /= 2;
      p.world = 0;
      if (p.ep > p.tp) p.ep = p.tp;
      if (p.dp_attention && p.dp > p.tp) p.dp = p.tp;
      if (p.attn_dp > p.tp) p.attn_dp = p.tp;
      if (p.moe_dp > 1 && p.ep > 1 && p.ep * p.moe_dp != p.tp) p.ep = p.tp / p.moe_dp;
      if (!ValidateParallelConfig(p).ok()) return false;
      if (!c.workload.dp_tokens.empty()) {
        c.workload.dp_tokens.resize(std::min<size_t>(c.workload.dp_tokens.size(),
                                                     static_cast<size_t>(p.Resolved().attn_dp)));
      }
      DropFaultsOutside(c, static_cast<int>(p.WorldSize()));
      return true;
    });
  }
  if (s.parallel.ep > 1) {
    add(absl::StrFormat("ep %d -> %d", s.parallel.ep, s.parallel.ep / 2), [](Scenario& c) {
      c.parallel.ep /= 2;
      return ValidateParallelConfig(c.parallel).ok();
    });
  }
  if (s.workload.steps > 1) {
    add(absl::StrFormat("steps %d -> %d", s.workload.steps, s.workload.steps / 2), [](Scenario& c) {
      c.workload.steps /= 2;
      return true;
    });
    add(absl::StrFormat("steps %d -> %d", s.workload.steps, s.workload.steps - 1), [](Scenario& c) {
      c.workload.steps -= 1;
      return true;
    });
  }
  if (Layers(s) > s.parallel.pp) {
    for (int layers : {std::max(s.parallel.pp, Layers(s) / 2), Layers(s) - 1}) {
      add(absl::StrFormat("layers %d -> %d", Layers(s), layers), [layers](Scenario& c) {
        c.workload.layers = layers;
        return true;
      });
    }
  }
  if (s.workload.tokens.size() > 1) {
    for (size_t i = 0; i < s.workload.tokens.size(); ++i) {
      const int64_t t = s.workload.tokens[i];
      add(absl::StrFormat("tokens -> [%d]", t), [t](Scenario& c) {
        c.workload.tokens = {t};
        return true;
      });
    }
  }
  if (!s.workload.dp_tokens.empty()) {
    add("per-DP token counts removed", [](Scenario& c) {
      c.workload.dp_tokens.clear();
      return true;
    });
  }
  if (s.workload.embedding) {
    add("embedding all-reduce removed", [](Scenario& c) {
      c.workload.embedding = false;
      return true;
    });
  }
  if (s.workload.speculative) {
    add("speculative draft projection removed", [](Scenario& c) {
      c.workload.speculative = false;
      return true;
    });
  }
  if (s.model.moe && s.model.first_moe_layer > 0) {
    add(absl::StrFormat("first MoE layer %d -> 0", s.model.first_moe_layer), [](Scenario& c) {
      c.model.first_moe_layer = 0;
      return true;
    });
  }
  if (s.model.hidden >= 128) {
    add(absl::StrFormat("hidden %d -> %d", s.model.hidden, s.model.hidden / 2), [](Scenario& c) {
      c.model.hidden /= 2;
      return true;
    });
  }
  return out;
}

}  // namespace

std::string ScenarioSize(const Scenario& s) {
  return absl::StrFormat("%d ranks, %d steps, %d layers, %d token count(s), %d fault(s)",
                         s.parallel.WorldSize(), s.workload.steps, Layers(s),
                         s.workload.tokens.size(), s.faults.size());
}

absl::StatusOr<ShrinkResult> Shrink(const Scenario& failing, const SimOptions& options,
                                    const PolicyRegistry& registry, int max_runs) {
  ShrinkResult result;
  SimOptions o = options;
  o.keep_trace = false;
  o.customize = nullptr;
  absl::StatusOr<SimResult> first = SimulateWithFaults(failing, o, registry);
  if (!first.ok()) return first.status();
  result.runs = 1;
  const bool unexpected = failing.expect.has_value() && *failing.expect != first->verdict;
  if (!IsSilentFailure(first->verdict) && !unexpected) {
    return absl::FailedPreconditionError(
        absl::StrFormat("seed %d gives %s, an acceptable verdict: nothing to shrink", options.seed,
                        VerdictName(first->verdict)));
  }
  const Verdict target = first->verdict;
  Scenario best = failing;
  uint64_t best_seed = options.seed;

  // Reproduces `target` with the current seed or a few others?
  auto reproduces = [&](const Scenario& c, uint64_t* seed) {
    std::vector<uint64_t> seeds = {best_seed, 1, 2, 3};
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    for (uint64_t s : seeds) {
      if (result.runs >= max_runs) return false;
      SimOptions attempt = o;
      attempt.seed = s;
      attempt.keep_decisions = false;  // only the verdict is compared
      ++result.runs;
      absl::StatusOr<SimResult> r = SimulateWithFaults(c, attempt, registry);
      if (r.ok() && r->verdict == target) {
        *seed = s;
        return true;
      }
    }
    return false;
  };

  // A candidate with fewer steps, layers or ranks can leave a fault past the
  // end of its run; such a fault is dropped with the edit, so that the shrunk
  // scenario is one `lockstep sim` accepts (it refuses faults that never fire).
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> run_policy =
      registry.Create(options.policy.empty() ? failing.dispatch.policy : options.policy);
  auto drop_faults_past_end = [&](Candidate& c) {
    if (!run_policy.ok() || c.scenario.faults.empty()) return;
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(c.scenario.parallel);
    absl::StatusOr<ParallelLayout> best_layout = ParallelLayout::Build(best.parallel);
    if (!layout.ok() || !best_layout.ok()) return;
    std::vector<FaultSpec> kept;
    for (FaultSpec& f : c.scenario.faults) {
      std::string why;
      if (FaultFires(c.scenario, *layout, **run_policy, f, &why) ||
          !FaultFires(best, *best_layout, **run_policy, f, &why)) {
        kept.push_back(std::move(f));
      } else {
        absl::StrAppendFormat(&c.what, " (fault %s past the new end dropped)", f.kind);
      }
    }
    c.scenario.faults = std::move(kept);
  };

  for (bool progress = true; progress && result.runs < max_runs;) {
    progress = false;
    for (Candidate& c : Candidates(best)) {
      drop_faults_past_end(c);
      uint64_t seed = 0;
      if (reproduces(c.scenario, &seed)) {
        best = std::move(c.scenario);
        best_seed = seed;
        result.reductions.push_back(c.what);
        progress = true;
        break;  // restart from the smaller scenario
      }
    }
  }
  const std::string policy = options.policy.empty() ? failing.dispatch.policy : options.policy;
  best.dispatch.policy = policy;
  best.expect = target;
  best.name = failing.name + "-shrunk";
  best.description = absl::StrFormat(
      "Shrunk from %s (%s) by lockstep shrink: policy %s, seed %d, schedule %s, gives %s. "
      "Replay: lockstep sim FILE --seed %d%s",
      failing.name, ScenarioSize(failing), policy, best_seed, options.schedule, VerdictName(target),
      best_seed,
      options.schedule == "random" ? "" : absl::StrFormat(" --schedule %s", options.schedule));
  result.scenario = std::move(best);
  result.seed = best_seed;
  result.verdict = target;
  return result;
}

}  // namespace lockstep::faults
