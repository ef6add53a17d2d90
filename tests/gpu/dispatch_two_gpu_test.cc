// The real dispatch core driving lockstep's kernels and NCCL on two GPUs of
// one process (one thread per rank, peer access between the GPUs).

#include <cuda_runtime.h>
#include <nccl.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "tests/gpu/dispatch_rig.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep::testing {
namespace {

// PeerExchange over threads of one process.
class ThreadExchange {
 public:
  explicit ThreadExchange(int world) : world_(world), slots_(static_cast<size_t>(world)) {}

  class Member : public cuda::PeerExchange {
   public:
    Member(ThreadExchange* group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int world() const override { return group_->world_; }
    absl::Status AllGather(std::span<const uint8_t> mine, std::span<uint8_t> all) override {
      return group_->AllGather(rank_, mine, all);
    }

   private:
    ThreadExchange* group_;
    int rank_;
  };

 private:
  absl::Status AllGather(int rank, std::span<const uint8_t> mine, std::span<uint8_t> all) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t round = round_;
    slots_[static_cast<size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_ == world_) {
      arrived_ = 0;
      ++round_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return round_ != round; });
    }
    size_t at = 0;
    for (const auto& slot : slots_) {
      if (at + slot.size() > all.size()) return absl::InvalidArgumentError("gather too small");
      std::copy(slot.begin(), slot.end(), all.begin() + static_cast<std::ptrdiff_t>(at));
      at += slot.size();
    }
    // Nobody may overwrite a slot before every member copied it.
    if (++copied_ == world_) {
      copied_ = 0;
      ++copy_round_;
      done_.notify_all();
    } else {
      const uint64_t copy_round = copy_round_;
      done_.wait(lock, [&] { return copy_round_ != copy_round; });
    }
    return absl::OkStatus();
  }

  int world_;
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<std::vector<uint8_t>> slots_;
  int arrived_ = 0, copied_ = 0;
  uint64_t round_ = 0, copy_round_ = 0;
};

TEST(DispatchTwoGpuTest, FusedKernelsThroughTheDispatchCoreMatchNcclBitwise) {
  LOCKSTEP_REQUIRE_GPUS(2);
  const int devices[] = {0, 1};
  auto group = cuda::LamportWorkspace::CreateLocal(
      {2, kRigMaxTokens, kRigHidden, protocol::Elem::kBf16}, devices);
  ASSERT_TRUE(group.ok()) << group.status();
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, devices), ncclSuccess);
  ThreadExchange exchange(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      ThreadExchange::Member member(&exchange, r);
      DispatchRig rig(devices[r], (*group)[static_cast<size_t>(r)].get(), comms[r]);
      RunDispatchChecks(rig, member);
    });
  }
  for (auto& t : ranks) t.join();
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

}  // namespace
}  // namespace lockstep::testing
