#include "sim/runtime/scheduler.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace lockstep {
namespace {

class RandomSchedule : public SchedulePolicy {
 public:
  std::string_view name() const override { return "random"; }
  size_t Pick(const std::vector<int>& runnable, Rng& rng) override {
    return runnable.size() == 1 ? 0 : rng.Below(runnable.size());
  }
};

class PctSchedule : public SchedulePolicy {
 public:
  PctSchedule(int num_ranks, int depth, uint64_t expected_steps, Rng& rng)
      : priority_(static_cast<size_t>(num_ranks)) {
    // Distinct initial priorities above every change-point priority.
    std::vector<int64_t> order(static_cast<size_t>(num_ranks));
    for (int i = 0; i < num_ranks; ++i) order[static_cast<size_t>(i)] = depth + i;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
    priority_ = order;
    for (int i = 1; i < depth; ++i) {
      change_points_.push_back(1 + rng.Below(std::max<uint64_t>(expected_steps, 1)));
    }
    std::sort(change_points_.begin(), change_points_.end());
    name_ = "pct:" + std::to_string(depth);
  }
  std::string_view name() const override { return name_; }
  size_t Pick(const std::vector<int>& runnable, Rng&) override {
    size_t best = 0;
    for (size_t i = 1; i < runnable.size(); ++i) {
      if (priority_[static_cast<size_t>(runnable[i])] >
          priority_[static_cast<size_t>(runnable[best])]) {
        best = i;
      }
    }
    return best;
  }
  void OnStep(uint64_t step, int ran, Rng&) override {
    while (next_ < change_points_.size() && change_points_[next_] <= step) {
      // The i-th change point drops the running rank to priority depth - i:
      // below every initial priority and every earlier drop.
      priority_[static_cast<size_t>(ran)] = static_cast<int64_t>(change_points_.size() - next_);
      ++next_;
    }
  }

 private:
  std::vector<int64_t> priority_;
  std::vector<uint64_t> change_points_;
  size_t next_ = 0;
  std::string name_;
};

}  // namespace

std::unique_ptr<SchedulePolicy> MakeRandomSchedule() { return std::make_unique<RandomSchedule>(); }

std::unique_ptr<SchedulePolicy> MakePctSchedule(int num_ranks, int depth, uint64_t expected_steps,
                                                Rng& rng) {
  return std::make_unique<PctSchedule>(num_ranks, depth, expected_steps, rng);
}

absl::StatusOr<std::unique_ptr<SchedulePolicy>> MakeSchedule(std::string_view name, int num_ranks,
                                                             uint64_t expected_steps,
                                                             uint64_t seed) {
  if (name == "random") return MakeRandomSchedule();
  int depth = 3;
  if (name.substr(0, 3) == "pct") {
    const std::string_view rest = name.substr(3);
    if (!rest.empty()) {
      if (rest.front() != ':' || !absl::SimpleAtoi(std::string(rest.substr(1)), &depth) ||
          depth < 1 || depth > 64) {
        return absl::InvalidArgumentError(
            absl::StrFormat("schedule '%s': write pct:D with a depth D between 1 and 64", name));
      }
    }
    // Priorities and change points come from their own stream of the seed, so
    // the schedule's draws never shift the run's other draws.
    Rng rng(seed ^ 0x7c7c7c7c7c7c7c7cull);
    return MakePctSchedule(num_ranks, depth, expected_steps, rng);
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown schedule '%s': use random, pct or pct:D", name));
}

Scheduler::Scheduler(int num_ranks, uint64_t seed, std::unique_ptr<SchedulePolicy> policy)
    : rng_(seed),
      policy_(std::move(policy)),
      fibers_(static_cast<size_t>(num_ranks)),
      status_(static_cast<size_t>(num_ranks), RankStatus::kRunnable),
      reasons_(static_cast<size_t>(num_ranks)),
      runnable_index_(static_cast<size_t>(num_ranks), -1) {
  runnable_.reserve(static_cast<size_t>(num_ranks));
  for (int r = 0; r < num_ranks; ++r) MakeRunnable(r);
}

Scheduler::~Scheduler() { Shutdown(); }

void Scheduler::Spawn(int rank, std::function<void()> body, size_t stack_bytes) {
  fibers_[static_cast<size_t>(rank)] = std::make_unique<Fiber>(
      [this, body = std::move(body)] {
        if (!shutting_down_) body();
      },
      stack_bytes);
}

void Scheduler::Shutdown() {
  shutting_down_ = true;
  for (size_t r = 0; r < fibers_.size(); ++r) {
    Fiber* fiber = fibers_[r].get();
    if (fiber == nullptr) continue;
    // A well-behaved rank finishes on its first resumption; the bound only
    // guards against a body that ignores Block()'s answer.
    for (int attempt = 0; attempt < 1000 && !fiber->finished(); ++attempt) {
      current_ = static_cast<int>(r);
      fiber->Resume();
      current_ = -1;
    }
  }
}

void Scheduler::MakeRunnable(int rank) {
  status_[static_cast<size_t>(rank)] = RankStatus::kRunnable;
  runnable_index_[static_cast<size_t>(rank)] = static_cast<int>(runnable_.size());
  runnable_.push_back(rank);
}

void Scheduler::RemoveRunnable(int rank) {
  const int index = runnable_index_[static_cast<size_t>(rank)];
  if (index < 0) return;
  const int last = runnable_.back();
  runnable_[static_cast<size_t>(index)] = last;
  runnable_index_[static_cast<size_t>(last)] = index;
  runnable_.pop_back();
  runnable_index_[static_cast<size_t>(rank)] = -1;
}

void Scheduler::Run() {
  while (!stop_) {
    if (runnable_.empty()) {
      if (!pending_work_ || !pending_work_(steps_, true)) break;
      continue;
    }
    const size_t pick = policy_->Pick(runnable_, rng_);
    const int rank = runnable_[pick];
    current_ = rank;
    Fiber& fiber = *fibers_[static_cast<size_t>(rank)];
    fiber.Resume();
    current_ = -1;
    if (fiber.finished() && status_[static_cast<size_t>(rank)] == RankStatus::kRunnable) {
      RemoveRunnable(rank);
      status_[static_cast<size_t>(rank)] = RankStatus::kFinished;
    }
    policy_->OnStep(++steps_, rank, rng_);
    if (pending_work_) pending_work_(steps_, false);
  }
  if (!stop_ && on_idle_ && !AllDone()) on_idle_();
}

void Scheduler::Yield() {
  // With no other rank runnable the scheduler could only pick this one again:
  // skip the two stack switches (the rule is fixed, so runs stay reproducible).
  if (runnable_.size() > 1 && !shutting_down_) Fiber::Suspend();
}

bool Scheduler::Block(const BlockReason& reason) {
  if (shutting_down_) return false;
  const int rank = current_;
  assert(rank >= 0);
  RemoveRunnable(rank);
  status_[static_cast<size_t>(rank)] = RankStatus::kBlocked;
  reasons_[static_cast<size_t>(rank)] = reason;
  Fiber::Suspend();
  return !shutting_down_;
}

void Scheduler::MarkFailed(int rank) {
  RemoveRunnable(rank);
  status_[static_cast<size_t>(rank)] = RankStatus::kFailed;
}

void Scheduler::Wake(int rank) {
  if (status_[static_cast<size_t>(rank)] != RankStatus::kBlocked) return;
  reasons_[static_cast<size_t>(rank)] = BlockReason{};
  MakeRunnable(rank);
}

void Scheduler::Kill(int rank) {
  RemoveRunnable(rank);
  status_[static_cast<size_t>(rank)] = RankStatus::kDead;
}

std::vector<int> Scheduler::BlockedRanks() const {
  std::vector<int> out;
  for (int r = 0; r < num_ranks(); ++r) {
    if (status_[static_cast<size_t>(r)] == RankStatus::kBlocked) out.push_back(r);
  }
  return out;
}

bool Scheduler::AllDone() const {
  for (RankStatus s : status_) {
    if (s == RankStatus::kRunnable || s == RankStatus::kBlocked) return false;
  }
  return true;
}

}  // namespace lockstep
