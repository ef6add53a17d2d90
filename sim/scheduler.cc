#include "sim/scheduler.h"

#include <cassert>

namespace lockstep {
namespace {

class RandomSchedule : public SchedulePolicy {
 public:
  std::string_view name() const override { return "random"; }
  size_t Pick(const std::vector<int>& runnable, Rng& rng) override {
    return runnable.size() == 1 ? 0 : rng.Below(runnable.size());
  }
};

}  // namespace

std::unique_ptr<SchedulePolicy> MakeRandomSchedule() { return std::make_unique<RandomSchedule>(); }

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
  while (!stop_ && !runnable_.empty()) {
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
    policy_->OnStep(++steps_, rng_);
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
