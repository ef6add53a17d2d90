#include "cli/budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace lockstep::cli {
namespace {

constexpr uint64_t kUnlimited = ~uint64_t{0};

// A cgroup's memory limit (v2, then v1), or kUnlimited: containers see the
// host's physical memory in sysconf but are killed at their cgroup's limit.
uint64_t CgroupLimit() {
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && value > 0 && value < (uint64_t{1} << 60)) return value;
  }
  return kUnlimited;
}

uint64_t Add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? kUnlimited : out;
}
uint64_t Mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? kUnlimited : out;
}

MemoryBudget DefaultBudget() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t physical =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  MemoryBudget b;
  b.bytes = physical > 0 ? physical / 2 : uint64_t{4} << 30;
  b.source = physical > 0
                 ? absl::StrFormat("half of the %s of physical memory", FormatBytes(physical))
                 : "4 GiB: the physical memory size is unknown";
  if (const uint64_t cgroup = CgroupLimit(); cgroup != kUnlimited && cgroup / 4 * 3 < b.bytes) {
    b.bytes = cgroup / 4 * 3;
    b.source = absl::StrFormat("three quarters of the %s cgroup memory limit", FormatBytes(cgroup));
  }
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur / 4 * 3 < b.bytes) {
    b.bytes = limit.rlim_cur / 4 * 3;
    b.source = absl::StrFormat("three quarters of the %s address-space limit (ulimit -v)",
                               FormatBytes(limit.rlim_cur));
  }
  return b;
}

}  // namespace

absl::StatusOr<MemoryBudget> ResolveMemoryBudget(std::string_view flag) {
  if (flag.empty()) return DefaultBudget();
  std::string text(flag);
  absl::AsciiStrToLower(&text);
  if (text == "unlimited") return MemoryBudget{kUnlimited, "--max-memory unlimited"};
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-memory expects a size with a unit (512M, 8G, 1.5T; binary units) or 'unlimited', "
        "got '%s'",
        flag));
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) != 0 || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0 || digits > 24) return bad();
  double number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || ptr != text.data() + digits || !std::isfinite(number)) return bad();
  std::string_view unit = std::string_view(text).substr(digits);
  if (unit.ends_with("ib")) {
    unit.remove_suffix(2);
    if (unit.empty()) return bad();
  } else if (unit.ends_with("b")) {
    unit.remove_suffix(1);
  }
  int shift = -1;
  if (unit.empty() && std::string_view(text).substr(digits) == "b") shift = 0;
  if (unit == "k") shift = 10;
  if (unit == "m") shift = 20;
  if (unit == "g") shift = 30;
  if (unit == "t") shift = 40;
  if (shift < 0) return bad();
  const double bytes = std::ldexp(number, shift);
  if (bytes < 1 || bytes >= 1.8e19) return bad();
  return MemoryBudget{static_cast<uint64_t>(bytes), absl::StrFormat("--max-memory %s", flag)};
}

uint64_t RunsThatFit(const MemoryEstimate& per_run, uint64_t runs, uint64_t extra,
                     const MemoryBudget& budget) {
  if (budget.bytes == kUnlimited) return runs;
  if (per_run.total == 0 || extra >= budget.bytes) return 0;
  return std::min(runs, (budget.bytes - extra) / per_run.total);
}

absl::Status CheckMemory(std::string_view what, const MemoryEstimate& per_run, uint64_t runs,
                         uint64_t extra, std::string_view extra_what, const MemoryBudget& budget) {
  const uint64_t need = Add(Mul(per_run.total, runs), extra);
  if (budget.bytes == kUnlimited || need <= budget.bytes) return absl::OkStatus();
  std::string parts = per_run.Describe();
  if (runs > 1) parts = absl::StrFormat("%d runs at once x %s", runs, parts);
  if (extra > 0) parts = absl::StrFormat("%s + %s %s", parts, extra_what, FormatBytes(extra));
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: the run needs about %s of memory, more than the budget of %s (%s): make the run "
      "smaller where it needs most, or raise --max-memory if the machine has the memory "
      "(docs/LIMITS.md)",
      what, parts, FormatBytes(budget.bytes), budget.source));
}

int ClampJobs(int requested, std::string_view verb, std::ostream& err) {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (requested <= static_cast<int>(cpus)) return std::max(1, requested);
  err << absl::StrFormat(
      "lockstep %s: --jobs %d is more than the %d CPUs of this machine; using %d (results do not "
      "depend on --jobs)\n",
      verb, requested, cpus, cpus);
  return static_cast<int>(cpus);
}

}  // namespace lockstep::cli
