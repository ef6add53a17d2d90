// One rank of a hardware run: its GPU, its wired groups, and the workload
// program (sim/replica/workload_program.h) hosted on device tensors, NCCL and
// MPI. Every wait is bounded; the first thing the rank finds is its finding.

#ifndef LOCKSTEP_HW_HW_RANK_H_
#define LOCKSTEP_HW_HW_RANK_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "hw/bounded_wait.h"
#include "hw/gpu_wiring.h"
#include "hw/hw_result.h"
#include "sim/replica/group_wiring.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/replica_faults.h"
#include "sim/replica/site.h"
#include "sim/replica/trace.h"
#include "sim/replica/workload_program.h"
#include "sim/scenario/finding.h"
#include "sim/scenario/scenario.h"

namespace lockstep::hw {

class HwRank : private CallHook {
 public:
  using Data = void*;  // the rank's device buffer (one call's tensor)

  HwRank(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
         const HwOptions& options, ReplicaFaults* faults, int rank);
  ~HwRank() override { Teardown(); }

  // The GPU, the buffers and the wired groups. Collective over MPI_COMM_WORLD.
  absl::Status Setup();
  // The scenario's steps.
  void Run() {
    WorkloadProgram<HwRank> program(*this, scenario_, layout_, rank_);
    program.Run();
  }

  const std::optional<Finding>& finding() const { return finding_; }
  const std::vector<TraceEvent>& events() const { return events_; }
  // With HwOptions::keep_decision_log: the header, then every dispatched call.
  const std::vector<nlohmann::json>& decision_log() const { return decision_log_; }
  const std::string& sharing() const { return sharing_; }
  // The last decision this rank took on each group object (seq == ~0: none).
  const std::vector<DecisionRecord>& last_decisions() const { return last_decisions_; }
  // A rank_killed fault took this rank out of the job.
  bool left() const { return left_; }
  // Some rank stopped: abort communicators at teardown, never wait on peers.
  void set_abort_on_teardown(bool abort) { abort_on_teardown_ = abort; }

  // --- The workload host (sim/replica/workload_program.h). ---
  bool Stopped() const { return finding_.has_value() || left_; }
  void BeginStep(int step);
  void EndStep() {}
  int64_t TokenSkew() const { return 0; }
  const DispatchPolicy& Policy() const { return policy_; }
  const ReplicaConfig& Config() const { return replica_; }
  const RankLocalState& Local() const { return wiring_.local; }
  void Compute(int64_t, int) {}
  // CUDA graphs are simulated only (RunOnHardware refuses
  // workload.cuda_graph_tokens), so no graph begins here.
  void BeginGraph(CallPhase, int64_t) {}
  void EndGraph() {}
  bool RegisterGraphInputs() { return true; }
  // The workspaces' set-up exchanges ran in Setup, over MPI and cuMem handles.
  bool SetUpWorkspaces() { return true; }
  std::optional<std::vector<int64_t>> AllGatherTokens(int64_t mine);
  std::optional<std::vector<int64_t>> AllGatherValue(int64_t mine, std::string_view what);
  void SetFusedTactic(FusedTactic tactic) { wiring_.tactic = tactic; }
  // µs since this rank was built, as its own clock reads (clock_skew adds).
  int64_t ClockUs() const;
  bool RecvActivation(int from, int64_t elems);
  void SendActivation(int to, int64_t elems);
  void* Input(const SiteRef& at, uint64_t instance, int64_t elems);
  void* InputRows(uint64_t instance, int64_t rows, int64_t hidden, int64_t first, int64_t n);
  void* Rows(void* const& data, int64_t first, int64_t n, int64_t hidden) const;
  // One process per rank: nothing to share with.
  std::shared_ptr<const std::vector<int64_t>> Shared(std::vector<int64_t> v) {
    return std::make_shared<const std::vector<int64_t>>(std::move(v));
  }
  bool Collective(const SiteRef& site, RowCollective op, GroupRole role,
                  const std::vector<int64_t>& rows, int64_t hidden, void*& data);
  bool Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, void*& data,
              const CallContext& context);
  bool Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
             void* const& data);

 private:
  // CallHook: between a call's decision and its execution.
  absl::Status BeforeExecute(const DecisionRecord& record, CommBackend& chosen) override;

  void Fail(Verdict verdict, Detector detector, std::string summary, nlohmann::json details,
            bool timed_out = false);
  // A bounded wait that expired: this rank stops (fail_stop, timed out;
  // BoundedWaitFinding, as the simulator reports it).
  void FailWait(const absl::Status& status, const SiteRef* site = nullptr);
  Clock::time_point Deadline() const {
    return Clock::now() + std::chrono::nanoseconds(watchdog_ns_);
  }
  absl::Status SetupDevice();
  absl::Status SetupBuffers();
  void Teardown();

  const Scenario& scenario_;
  const ParallelLayout& layout_;
  const DispatchPolicy& policy_;
  const HwOptions& options_;
  ReplicaFaults* faults_;
  int rank_;
  int world_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  int device_ = 0;
  uint64_t kernel_wait_ns_ = 0;
  uint64_t watchdog_ns_ = 0;
  std::vector<FabricInfo> fabric_;
  ReplicaConfig replica_;
  WorkspaceTags tags_;
  RankWiring wiring_;
  std::vector<GpuGroup> groups_;  // by group object
  std::vector<std::unique_ptr<cuda::LamportWorkspace>> workspaces_;
  std::string sharing_ = "none";
  ncclComm_t world_nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int64_t max_elems_ = 0;
  void* data_ = nullptr;      // the call's tensor
  void* scratch_ = nullptr;   // a collective's output, copied back into data_
  void* residual_ = nullptr;  // zeros: residual_out = the all-reduce, exactly
  void* residual_out_ = nullptr;
  void* gamma_ = nullptr;
  std::vector<std::vector<uint8_t>> patterns_;  // [instance parity] host input bytes
  uint64_t calls_made_ = 0;
  int step_ = 0;                  // the step the rank is in
  uint64_t step_first_call_ = 0;  // calls_made_ when it began
  // Where the next dispatched call is: the call in flight's site (site_).
  CallPlace NextCall() const {
    return CallPlace{static_cast<int64_t>(calls_made_), step_,
                     static_cast<int64_t>(calls_made_ - step_first_call_), site_};
  }
  // The call in flight (for the call hook).
  SiteRef site_;
  int object_ = 0;
  bool hook_stopped_ = false;     // the hook stopped the call (consistency)
  bool last_fused_norm_ = false;  // the last call ran the fused norm (check residual_out)
  bool abort_on_teardown_ = false;
  bool left_ = false;
  std::optional<Finding> finding_;
  std::vector<TraceEvent> events_;
  std::vector<nlohmann::json> decision_log_;
  std::vector<DecisionRecord> last_decisions_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_HW_RANK_H_
