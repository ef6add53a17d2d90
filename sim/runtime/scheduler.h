// The deterministic scheduler: simulated ranks are fibers; exactly one runs at
// a time; at every yield point the next one is drawn from the seeded
// generator. A rank that must wait blocks with a reason and is woken by
// whatever it waits on, so a deadlock is seen the moment no rank can run.

#ifndef LOCKSTEP_SIM_RUNTIME_SCHEDULER_H_
#define LOCKSTEP_SIM_RUNTIME_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/runtime/fiber.h"
#include "sim/runtime/rng.h"

namespace lockstep {

enum class RankStatus : uint8_t { kRunnable, kBlocked, kFinished, kFailed, kDead };

// What a blocked rank waits for. `waitable` explains itself on demand (only
// when a hang is analysed), so blocking costs a few stores.
class Waitable {
 public:
  virtual ~Waitable() = default;
  // One line: "fused one-shot poll of workspace moe[0,2] buffer 1 slot 1".
  virtual std::string DescribeWait(int rank, int64_t detail) const = 0;
  // The ranks whose action would let `rank` continue.
  virtual std::vector<int> WaitsOn(int rank, int64_t detail) const = 0;
  // Whether the awaited write was destroyed by an injected fault (a lost
  // store): then nothing any rank does can release the wait.
  virtual bool WaitsOnLostWrite(int /*rank*/, int64_t /*detail*/) const { return false; }
  // Whether the wait gives up after a budget (a kernel poll's bounded wait,
  // the NCCL watchdog): only a bounded wait can end a hopeless one.
  virtual bool WaitIsBounded(int /*rank*/, int64_t /*detail*/) const { return true; }
  // Whether the wait is a kernel's poll, which its own bounded wait ends
  // (timeouts.kernel_wait_ms), rather than a host-side wait in NCCL, which the
  // watchdog ends (timeouts.watchdog_ms). Every waitable says which.
  virtual bool IsKernelWait() const = 0;
};

struct BlockReason {
  const Waitable* waitable = nullptr;
  int64_t detail = 0;
  int64_t since_ns = 0;  // virtual time the wait began
};

// How the next rank is chosen among the runnable ones.
class SchedulePolicy {
 public:
  virtual ~SchedulePolicy() = default;
  virtual std::string_view name() const = 0;
  // Index into `runnable` of the rank to run next.
  virtual size_t Pick(const std::vector<int>& runnable, Rng& rng) = 0;
  // Called after each scheduling step; PCT-style policies change priorities here.
  virtual void OnStep(uint64_t /*step*/, int /*ran*/, Rng& /*rng*/) {}
};

// Uniform choice among runnable ranks at every yield point.
std::unique_ptr<SchedulePolicy> MakeRandomSchedule();

// PCT (Burckhardt et al., "A randomized scheduler with probabilistic
// guarantees of finding bugs", ASPLOS 2010): ranks get random distinct
// priorities; the highest-priority runnable rank always runs; at `depth - 1`
// change points drawn uniformly from the first `expected_steps` steps, the
// running rank drops to a priority below all others. A bug that needs d
// specific orderings is found with probability at least 1 / (n k^(d-1)),
// where uniform random scheduling makes rare interleavings (a rank running
// far ahead through several Lamport calls) vanishingly unlikely.
std::unique_ptr<SchedulePolicy> MakePctSchedule(int num_ranks, int depth, uint64_t expected_steps,
                                                Rng& rng);

// "random", "pct" (depth 3) or "pct:D"; InvalidArgument otherwise.
absl::StatusOr<std::unique_ptr<SchedulePolicy>> MakeSchedule(std::string_view name, int num_ranks,
                                                             uint64_t expected_steps,
                                                             uint64_t seed);

class Scheduler {
 public:
  Scheduler(int num_ranks, uint64_t seed, std::unique_ptr<SchedulePolicy> policy);
  // Shuts down (see Shutdown) any rank still blocked or suspended.
  ~Scheduler();

  // Installs the body of `rank`; every rank needs one before Run().
  void Spawn(int rank, std::function<void()> body, size_t stack_bytes);

  // Runs until every rank finished, failed or is dead, no rank can run, or
  // Stop() was called.
  void Run();
  void Stop() { stop_ = true; }
  // Called when Run() finds no runnable rank while some are blocked (a
  // deadlock): the hang-report latency benchmark timestamps it.
  void set_on_idle(std::function<void()> f) { on_idle_ = std::move(f); }
  // Work outside the ranks (deferred writes): called after every step with
  // idle=false, and with idle=true when no rank can run; returns whether it
  // did anything (then the run continues).
  void set_pending_work(std::function<bool(uint64_t step, bool idle)> f) {
    pending_work_ = std::move(f);
  }
  bool stopped() const { return stop_; }

  // --- Called from inside a rank. ---
  int current() const { return current_; }
  // A scheduling point: another rank may run before this one continues.
  void Yield();
  // Suspends the current rank until Wake(rank). Returns false when the run is
  // being shut down instead: the caller must then return, promptly and
  // without blocking again, so that the rank's fiber finishes.
  [[nodiscard]] bool Block(const BlockReason& reason);
  // Marks the current rank finished / failed; it must then return from its body.
  void MarkFailed(int rank);

  // --- Called by whatever a rank waits on. ---
  void Wake(int rank);
  // A rank that will never run again (killed by a fault).
  void Kill(int rank);

  // Ends every fiber that has not finished: each blocked or suspended rank is
  // resumed with Block() returning false and Yield() returning at once, and
  // ranks that never started skip their body. Fibers therefore end by
  // returning, never by stack unwinding. Called once the run is analysed.
  void Shutdown();
  bool shutting_down() const { return shutting_down_; }

  RankStatus status(int rank) const { return status_[static_cast<size_t>(rank)]; }
  const BlockReason& reason(int rank) const { return reasons_[static_cast<size_t>(rank)]; }
  int num_ranks() const { return static_cast<int>(status_.size()); }
  uint64_t steps() const { return steps_; }
  Rng& rng() { return rng_; }
  // Ranks that are blocked, in rank order.
  std::vector<int> BlockedRanks() const;
  bool AllDone() const;

 private:
  void MakeRunnable(int rank);
  void RemoveRunnable(int rank);

  Rng rng_;
  std::unique_ptr<SchedulePolicy> policy_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<RankStatus> status_;
  std::vector<BlockReason> reasons_;
  std::vector<int> runnable_;
  std::vector<int> runnable_index_;  // position in runnable_, or -1
  int current_ = -1;
  uint64_t steps_ = 0;
  bool stop_ = false;
  bool shutting_down_ = false;
  std::function<void()> on_idle_;
  std::function<bool(uint64_t, bool)> pending_work_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUNTIME_SCHEDULER_H_
