// The failure classes of 2025–26 serving bugs beyond the hybrid EP+TP family
// (issue 13; docs/FAULTS.md): one test per bug, each asserting that the
// reference design gives the scenario's expected verdict on every seed AND
// that the mutant reproducing the bug turns the same scenario into its
// silent failure, explained.

#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/regression/regression_util.h"

namespace lockstep::regression {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// --- Autotuning at start-up (workload.autotune). -----------------------------

TEST(Autotune, TacticIsAgreedFromEveryMembersTimings_FlashInfer3186) {
  ExpectReferenceHolds("tp8-autotune-llama3-h200");
  ExpectReferenceHolds("faults/tp8-tuner-timing-skew");
  // Rank 3's own timings favour the quarter cut-over: it runs two-shot where
  // its peers run one-shot (8 tokens of Llama-3-70B: 128 KiB).
  ExpectMutantCaught("faults/tp8-tuner-timing-skew", "tactic-from-local-timings",
                     Verdict::kWrongPeer,
                     AllOf(HasSubstr("first divergent decision"),
                           HasSubstr("rank 3 chose fused/two_shot"), HasSubstr("fused/one_shot")));
}

TEST(Autotune, WarmCacheRankStillJoinsTheTunersCollectives_FlashInfer3920) {
  ExpectReferenceHolds("faults/tp8-warm-tuner-cache");
  // Rank 5 skips the handshake its seven cold peers wait in.
  ExpectMutantCaught("faults/tp8-warm-tuner-cache", "warm-cache-skips-tuner", Verdict::kHang,
                     HasSubstr("rank 5"));
}

// --- The speculative skip (workload.speculative with max_model_len). ---------

TEST(SpeculativeSkip, EveryRankSkipsTheDraftAtTheSameStep_vLLM40589) {
  ExpectReferenceHolds("tp8-speculative-deepseek-v3-h200");
  ExpectReferenceHolds("faults/tp8-seq-len-view");
  // Rank 2, one token ahead, skips the draft at step 1: its next call meets
  // its peers' draft projection.
  ExpectMutantCaught("faults/tp8-seq-len-view", "spec-skip-from-local-length", Verdict::kMismatch,
                     AllOf(HasSubstr("first divergent decision"), HasSubstr("draft_projection"),
                           HasSubstr("rank 2 chose")));
}

// --- Time-based decisions (workload.abort_after_us). --------------------------

TEST(TimeBasedDecisions, ARequestTimesOutOnEveryRankAtTheSameStep_SGLang27221) {
  ExpectReferenceHolds("tp8-request-timeout-llama3-h200");
  ExpectReferenceHolds("faults/tp8-clock-skew");
  // Rank 4's clock, 1 ms ahead, drops the request from step 0: its batch has
  // 7 tokens where its peers' has 8.
  ExpectMutantCaught("faults/tp8-clock-skew", "abort-from-local-clock", Verdict::kHang,
                     AllOf(HasSubstr("first divergent decision"), HasSubstr("rank 4 chose"),
                           HasSubstr("tokens=7")));
}

// --- Lamport state across calls of different sizes (workload.tokens that ----
// --- grow and shrink: two-shot <-> one-shot, with and without the norm). -----

TEST(LamportAcrossSizes, EachClearCoversWhatThePreviousCallWrote_TensorRtLlm6237) {
  ExpectReferenceHolds("tp8-lamport-sizes-llama3-h200");
  // Cleared for the size of the current, smaller call, the tail of the last
  // 64-token call survives in its buffer and is read by a later call there.
  ExpectMutantCaught("tp8-lamport-sizes-llama3-h200", "clear-sized-by-current-call",
                     Verdict::kMismatch,
                     AllOf(HasSubstr("stale ranks"), HasSubstr("an earlier call's data")));
}

TEST(LamportAcrossSizes, ThreeBuffersKeepAClearOffAFastPeersNextCall) {
  // With two buffers, the buffer a rank clears is the one a peer that has
  // finished this call already fills with the next: the clear erases it and
  // the rank polls for data that never comes again.
  ExpectMutantCaught("tp8-lamport-sizes-llama3-h200", "two-buffer-rotation", Verdict::kHang,
                     HasSubstr("wait on each other"));
}

TEST(LamportSafeguards, RankOrderSummationKeepsReplicasBitwiseEqual) {
  ExpectReferenceHolds("tp8-llama3-h200");
  // Every rank sums the same eight contributions in another order.
  ExpectMutantCaught("tp8-llama3-h200", "sum-from-own-rank", Verdict::kDivergence,
                     AllOf(HasSubstr("differs bitwise"), HasSubstr("both reduced ranks 0-7")));
}

TEST(LamportSafeguards, ABoundedWaitEndsTheCallOnADeadPeer_FlashInfer3053) {
  ExpectReferenceHolds("faults/tp8-rank-killed");
  // Without the bound, the peers of the killed rank spin for ever: nothing
  // ends the job (the reference's wait fires and the job stops).
  ExpectMutantCaught("faults/tp8-rank-killed", "unbounded-kernel-wait", Verdict::kHang,
                     AllOf(HasSubstr("wait for dead rank 2 and nothing ends the wait"),
                           HasSubstr("poll without a bound")));
  // No wait would fire: the report says so rather than naming a timeout.
  std::optional<SilentRun> caught =
      FirstSilentFailure("faults/tp8-rank-killed", "unbounded-kernel-wait");
  ASSERT_TRUE(caught.has_value());
  EXPECT_TRUE(caught->result.details["would_fire"].is_null());
  EXPECT_FALSE(caught->result.details["unbounded_waits"].empty());
}

// --- CUDA graphs (workload.cuda_graph_tokens): decisions taken at capture, ---
// --- replayed without deciding, at the size of the agreed batch. ------------

// The calls of one rank in the run's trace, by phase.
std::vector<TraceEvent> EventsOf(const SimResult& r, int rank, CallPhase phase) {
  std::vector<TraceEvent> out;
  for (const TraceEvent& e : r.trace_events) {
    if (e.rank == rank && e.site.phase == phase) out.push_back(e);
  }
  return out;
}

TEST(CudaGraphs, EachStepReplaysTheSmallestGraphThatHoldsItsBatch) {
  ExpectReferenceHolds("tp8-cuda-graphs-llama3-h200");
  absl::StatusOr<Scenario> s = LoadCatalogueScenario("tp8-cuda-graphs-llama3-h200");
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<SimResult> r = RunScenario(*s, "reference", 1, /*keep_trace=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->verdict, Verdict::kClean) << r->summary;
  // Captured largest first, before step 0, each graph once: its calls are
  // decided (on the trace) but run nothing.
  const std::vector<TraceEvent> captured = EventsOf(*r, 0, CallPhase::kCapture);
  ASSERT_FALSE(captured.empty());
  EXPECT_EQ(captured.front().tokens, 16);
  EXPECT_EQ(captured.back().tokens, 1);
  for (const TraceEvent& e : captured) {
    EXPECT_EQ(e.site.step, -1);
    EXPECT_EQ(e.begin_ns, e.end_ns);
  }
  // Batches 3, 16, 1, 64, 5, 2, 12: graphs 4, 16, 1, eager, 8, 2, 16.
  const std::vector<int64_t> graph_of_step = {4, 16, 1, 0, 8, 2, 16};
  const size_t calls_per_graph = captured.size() / 5;
  for (int step = 0; step < 7; ++step) {
    SCOPED_TRACE(absl::StrFormat("step %d", step));
    const int64_t graph = graph_of_step[static_cast<size_t>(step)];
    size_t replayed = 0, eager = 0;
    for (const TraceEvent& e : r->trace_events) {
      if (e.rank != 0 || e.site.step != step) continue;
      if (e.site.phase == CallPhase::kReplay) {
        ++replayed;
        EXPECT_EQ(e.tokens, graph);
      } else if (e.site.phase == CallPhase::kEager) {
        ++eager;
        EXPECT_EQ(e.tokens, 64);
      }
    }
    EXPECT_EQ(replayed, graph > 0 ? calls_per_graph : 0u);
    EXPECT_EQ(eager, graph > 0 ? 0u : calls_per_graph);
  }
}

TEST(CudaGraphs, LamportBufferIndexIsReadOnTheDeviceAtReplay_AiterPr3928) {
  // A host-side counter frozen into each graph at capture: replays of graphs
  // of different sizes, and the eager batch between them, reuse Lamport
  // buffers out of the rotation: a replayed call reads what an earlier call
  // left in its buffer as its peers' pushes.
  ExpectMutantCaught("tp8-cuda-graphs-llama3-h200", "lamport-counter-on-host", Verdict::kWrongPeer,
                     AllOf(HasSubstr("(replay)"), HasSubstr("stale ranks")));
}

TEST(CudaGraphs, EveryRankReplaysTheGraphOfTheLargestDpBatch_SGLangDecodeGraphPadding) {
  ExpectReferenceHolds("dpattn-dp2-cuda-graphs-deepseek-v3-h200");
  // DP groups of 3 and 7 tokens: graph 4 on one group's ranks, 8 on the
  // other's, and their collectives over TP carry different shapes.
  ExpectMutantCaught("dpattn-dp2-cuda-graphs-deepseek-v3-h200", "graph-replay-from-local-batch",
                     Verdict::kHang,
                     AllOf(HasSubstr("first divergent decision"), HasSubstr("dp_gather (replay)")));
}

TEST(CudaGraphs, ADecisionTakenAtCaptureIsReplayedAtEveryStep) {
  // Rank 2's cache is wrong only while it captures: the reference never
  // reads it; a policy that does freezes its divergent decision into the
  // graph, and every replay runs it.
  ExpectReferenceHolds("faults/tp8-graph-captured-dtype-seen");
  ExpectMutantCaught("faults/tp8-graph-captured-dtype-seen", "dtype-from-local-cache",
                     Verdict::kHang, AllOf(HasSubstr("rank 2"), HasSubstr("(replay)")));
  // With v1's custom all-reduce on, rank 2 alone captures its calls on it
  // (its peers on the fused kernel): the registration's count check stops
  // the job before any replay, as vLLM PR #39791's check would.
  absl::StatusOr<Scenario> s = LoadCatalogueScenario("faults/tp8-graph-captured-dtype-seen");
  ASSERT_TRUE(s.ok()) << s.status();
  s->dispatch.custom_allreduce = true;
  s->dispatch.custom_allreduce_v2 = false;
  absl::StatusOr<SimResult> r = RunScenario(*s, "dtype-from-local-cache", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, Verdict::kFailStop) << r->summary;
  EXPECT_THAT(r->summary, AllOf(HasSubstr("captured different numbers of inputs"),
                                HasSubstr("rank 1: 0, rank 2: 20, rank 3: 0")));
  // v2 pushes these decode sizes (1shot_push takes no graph input): there
  // is nothing to register, and the replays hang with rank 2 in 1shot_push
  // while its peers run the fused kernel.
  s->dispatch.custom_allreduce_v2 = true;
  r = RunScenario(*s, "dtype-from-local-cache", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, Verdict::kHang) << r->summary;
  EXPECT_THAT(r->summary,
              AllOf(HasSubstr("(replay)"), HasSubstr("rank 2 chose custom/1shot_push")));
}

TEST(CudaGraphs, AFaultPlacedAtReplayFiresAtAReplayedCall) {
  ExpectReferenceHolds("faults/tp8-replay-kernel-launch-failure");
  absl::StatusOr<Scenario> s = LoadCatalogueScenario("faults/tp8-replay-kernel-launch-failure");
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<SimResult> r = RunScenario(*s, "reference", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, Verdict::kFailStop);
  EXPECT_THAT(r->summary,
              AllOf(HasSubstr("rank 3 raised"), HasSubstr("step 1 "), HasSubstr("(replay)")));
}

TEST(CudaGraphs, ASubnormalOnReplayIsDataNotTheSentinel_FlashInfer3053) {
  // A negative subnormal in one row of rank 2's replayed inputs, with
  // flush-to-zero: the reference's bitwise sentinel test reads it as data; a
  // test that compares values reads it as −0 and its readers poll for ever
  // (the piecewise-graph replay hang FlashInfer PR #3304 fixed).
  ExpectReferenceHolds("faults/tp8-replay-negative-subnormal-ftz");
  ExpectMutantCaught("faults/tp8-replay-negative-subnormal-ftz", "sentinel-zero-and-signbit",
                     Verdict::kHang, HasSubstr("wait on each other"));
  // Every blocked rank polls for rank 2's push of the replayed call.
  std::optional<SilentRun> caught =
      FirstSilentFailure("faults/tp8-replay-negative-subnormal-ftz", "sentinel-zero-and-signbit");
  ASSERT_TRUE(caught.has_value());
  EXPECT_THAT(caught->result.details.dump(), HasSubstr("for the push of rank 2"));
}

TEST(CudaGraphs, RegistrationComparesEveryMembersCountOfCapturedInputs_vLLM39788) {
  ExpectReferenceHolds("tp8-cuda-graphs-custom-llama3-h200");
  ExpectReferenceHolds("faults/tp8-graph-input-unrecorded");
  ExpectReferenceHolds("faults/tp8-graph-inputs-all-unrecorded");
  absl::StatusOr<Scenario> s = LoadCatalogueScenario("faults/tp8-graph-input-unrecorded");
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<SimResult> r = RunScenario(*s, "reference", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->summary, AllOf(HasSubstr("raised registering the CUDA graph inputs"),
                                HasSubstr("rank 4: 10, rank 5: 9, rank 6: 10")));
  // Registered by position, rank 5's list is one input short: its peers read
  // its next call's input at every replayed call.
  ExpectMutantCaught(
      "faults/tp8-graph-input-unrecorded", "graph-registration-unchecked", Verdict::kMismatch,
      AllOf(HasSubstr("(replay)"), HasSubstr("by position against different counts (rank 5: 9)")));
}

TEST(CudaGraphs, ARankThatCapturedNothingStillJoinsTheRegistration_SGLangCustomAllReduceV2) {
  // custom_all_reduce_v2.py:513-514 @ 0.5.23 returns before the exchange
  // when the rank has no graph input: its peers wait in it for ever.
  ExpectMutantCaught("faults/tp8-graph-inputs-all-unrecorded",
                     "graph-registration-skipped-when-empty", Verdict::kHang,
                     HasSubstr("rank 5 recorded no input of custom all-reduce tp "
                               "[0,1,2,3,4,5,6,7] and skipped its registration exchange"));
}

// --- Workspace set-up as a collective: the allocation vote and the handle ----
// --- exchange are calls the scheduler interleaves, not an instant agreement. -

TEST(WorkspaceSetUp, ARankWhoseAllocationFailedStillJoinsTheExchange_SGLangPreflightVote) {
  ExpectReferenceHolds("faults/tp8-workspace-alloc-failure");
  ExpectReferenceHolds("faults/tp8-ep4-moedp2-workspace-alloc-failure");
  // Rank 5 leaves the set-up when its allocation fails; its peers wait in
  // the handle exchange for it while it runs on (flashinfer_comm_fusion.py:
  // 337-342 @ 0.5.23 describes this hang; the preflight vote prevents it).
  ExpectMutantCaught("faults/tp8-workspace-alloc-failure", "setup-failure-skips-exchange",
                     Verdict::kHang,
                     HasSubstr("workspace set-up: rank 5's allocation failed and it left before "
                               "the set-up exchange of fusion workspace"));
  // On a TP group of 32 the skipping rank's first all-reduce meets its
  // peers' set-up exchange on the same communicator.
  ExpectMutantCaught(
      "faults/tp32-gb200-workspace-alloc-failure", "setup-failure-skips-exchange",
      Verdict::kMismatch,
      AllOf(HasSubstr("posted all_gather of 1 fp32"), HasSubstr("posted all_reduce of")));
}

}  // namespace
}  // namespace lockstep::regression
