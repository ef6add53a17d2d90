// catalogue_golden: the verdict and trace hash of every catalogue scenario on
// seeds 1..N under the reference policy and every mutant, as one line per
// (policy, scenario). A refactor must not move any of them; a change that does
// (a new reference, a new protocol) regenerates the file and says why in its
// commit.
//
//   catalogue_golden --write FILE [--dir DIR] [--seeds N] [--jobs J]
//   catalogue_golden --check FILE [--dir DIR] [--seeds N] [--jobs J]
//
// A line: policy, scenario path (relative to DIR), the verdict of each seed as
// one letter (c clean, f fail_stop, h hang, m mismatch, w wrong_peer,
// d divergence, ? bad input), and a digest of the seeds' trace hashes. --check
// exits 1 and names every line that differs, 2 on bad usage.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "dispatch/stable_hash.h"
#include "faults/explore.h"
#include "faults/mutants.h"

namespace {

char VerdictLetter(lockstep::Verdict v) {
  switch (v) {
    case lockstep::Verdict::kClean:
      return 'c';
    case lockstep::Verdict::kFailStop:
      return 'f';
    case lockstep::Verdict::kHang:
      return 'h';
    case lockstep::Verdict::kMismatch:
      return 'm';
    case lockstep::Verdict::kWrongPeer:
      return 'w';
    case lockstep::Verdict::kDivergence:
      return 'd';
  }
  return '?';
}

int Usage(const std::string& why) {
  std::cerr << "catalogue_golden: " << why
            << "\nusage: catalogue_golden (--write|--check) FILE [--dir DIR] [--seeds N] "
               "[--jobs J]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, file, dir = LOCKSTEP_SCENARIOS_DIR;
  uint64_t seeds = 20;
  int jobs = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage("'" + arg + "' needs a value");
    const std::string value = argv[++i];
    if (arg == "--write" || arg == "--check") {
      mode = arg;
      file = value;
    } else if (arg == "--dir") {
      dir = value;
    } else if (arg == "--seeds") {
      if (!absl::SimpleAtoi(value, &seeds) || seeds == 0 || seeds > 10000) {
        return Usage("--seeds takes 1..10000");
      }
    } else if (arg == "--jobs") {
      if (!absl::SimpleAtoi(value, &jobs) || jobs < 1 || jobs > 256) {
        return Usage("--jobs takes 1..256");
      }
    } else {
      return Usage("unknown argument '" + arg + "'");
    }
  }
  if (mode.empty()) return Usage("give --write FILE or --check FILE");

  absl::StatusOr<std::vector<lockstep::Scenario>> scenarios = lockstep::faults::LoadScenarios(dir);
  if (!scenarios.ok()) return Usage(std::string(scenarios.status().message()));
  const lockstep::PolicyRegistry registry = lockstep::faults::MakePolicyRegistry();

  std::vector<std::string> lines;
  for (const lockstep::PolicyRegistry::Entry& policy : registry.entries()) {
    lockstep::faults::ExploreOptions options;
    options.start = 1;
    options.seeds = seeds;
    options.policy = policy.name;
    options.jobs = jobs;
    absl::StatusOr<lockstep::faults::ExploreResult> result =
        lockstep::faults::Explore(*scenarios, options, registry);
    if (!result.ok()) {
      std::cerr << "catalogue_golden: policy " << policy.name << ": " << result.status().message()
                << "\n";
      return 2;
    }
    std::map<size_t, std::pair<std::string, lockstep::StableHasher>> per_scenario;
    for (const lockstep::faults::SeedOutcome& o : result->outcomes) {
      auto& [letters, hasher] = per_scenario[o.scenario];
      letters.push_back(VerdictLetter(o.verdict));
      hasher.Add(o.seed);
      hasher.Add(o.trace_hash);
    }
    for (auto& [index, entry] : per_scenario) {
      const std::string path =
          std::filesystem::path((*scenarios)[index].path).lexically_relative(dir).string();
      lines.push_back(absl::StrFormat("%s\t%s\t%s\t%016x", policy.name, path, entry.first,
                                      entry.second.digest()));
    }
  }
  std::sort(lines.begin(), lines.end());

  if (mode == "--write") {
    std::ofstream out(file);
    if (!out) return Usage("cannot write " + file);
    out << "# policy\tscenario\tverdicts (seeds 1.." << seeds
        << ")\ttrace-hash digest — regenerate with tools/catalogue_golden --write\n";
    for (const std::string& l : lines) out << l << "\n";
    std::cout << "wrote " << lines.size() << " lines to " << file << "\n";
    return out ? 0 : 2;
  }
  std::ifstream in(file);
  if (!in) return Usage("cannot read " + file);
  std::map<std::string, std::string> want;  // "policy\tscenario" -> rest
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t second = line.find('\t', line.find('\t') + 1);
    want[line.substr(0, second)] = line.substr(second + 1);
  }
  int differences = 0;
  for (const std::string& l : lines) {
    const size_t second = l.find('\t', l.find('\t') + 1);
    const std::string key = l.substr(0, second);
    auto it = want.find(key);
    if (it == want.end()) {
      std::cout << "new:     " << l << "\n";
      ++differences;
      continue;
    }
    if (it->second != l.substr(second + 1)) {
      std::cout << "moved:   " << key << "\n  was " << it->second << "\n  now "
                << l.substr(second + 1) << "\n";
      ++differences;
    }
    want.erase(it);
  }
  for (const auto& [key, rest] : want) {
    std::cout << "missing: " << key << "\t" << rest << "\n";
    ++differences;
  }
  std::cout << absl::StrFormat("%d line(s) checked, %d differ\n", lines.size(), differences);
  return differences == 0 ? 0 : 1;
}
