#include "sim/scenario/finding.h"

#include <array>

namespace lockstep {
namespace {

constexpr std::array<DetectorInfo, 13> kDetectors = {{
    {Detector::kCoverage, "coverage", "mismatch",
     "every element of a reduction's output was written by the reduction",
     "simulator: ReductionChecker (sim/memory/data.cc)"},
    {Detector::kMessageLayout, "message_layout", "mismatch",
     "each output element holds data written for its own offset (ranks agreed on the layout)",
     "simulator: ReductionChecker (sim/memory/data.cc)"},
    {Detector::kContributors, "contributors", "wrong_peer",
     "each reduction covers exactly the ranks the model requires, each once",
     "simulator: ReductionChecker (sim/memory/data.cc); GPUs: the provenance check "
     "(hw/provenance.h)"},
    {Detector::kNumericTolerance, "numeric_tolerance", "divergence",
     "a numeric result is within n·ε·Σ|x| of a double-precision reference",
     "simulator, numeric data: ReductionChecker (sim/memory/data.cc)"},
    {Detector::kBitwiseAgreement, "bitwise_agreement", "divergence",
     "every member of a reduction got the same bits",
     "simulator: ReductionChecker (sim/memory/data.cc)"},
    {Detector::kCollectiveContract, "collective_contract", "mismatch",
     "NCCL calls matched by sequence number agree on op, count and dtype",
     "simulator: SimComm (sim/memory/nccl_comm.cc)"},
    {Detector::kActivationSize, "activation_size", "mismatch",
     "a pipeline stage receives the activation size it expects",
     "both hosts: RecvActivation (sim/rank_program.cc, hw/hw_rank.cc)"},
    {Detector::kBackendRaised, "backend_raised", "fail_stop",
     "a backend returned an error: the rank raises and the launcher stops the job",
     "both hosts: RecordDispatchedCall (sim/replica/dispatched_call.cc)"},
    {Detector::kDeadlock, "deadlock", "hang, fail_stop",
     "no rank can run and some are blocked: a hang, or fail_stop when every wait is on a dead "
     "rank or a destroyed write (a bounded wait fires)",
     "simulator: the end-of-run analysis (sim/report/analysis.cc)"},
    {Detector::kDeadRank, "dead_rank", "fail_stop", "a rank died and every other rank finished",
     "simulator: the end-of-run analysis (sim/report/analysis.cc)"},
    {Detector::kBoundedWait, "bounded_wait", "fail_stop",
     "a bounded wait (kernel poll, MPI exchange) or the NCCL watchdog expired",
     "GPUs: hw/bounded_wait.h, the kernels' status words"},
    {Detector::kDecisionConsistency, "decision_consistency", "fail_stop",
     "with --consistency, the members of a group decided a call alike before running it",
     "GPUs: hw/hw_rank.cc"},
    {Detector::kRunnerCapacity, "runner_capacity", "fail_stop",
     "a call fits the hardware runner's preallocated buffers", "GPUs: hw/hw_rank.cc"},
}};

}  // namespace

std::span<const DetectorInfo> Detectors() { return kDetectors; }

const DetectorInfo& DetectorOf(Detector detector) {
  return kDetectors[static_cast<size_t>(detector)];
}

}  // namespace lockstep
