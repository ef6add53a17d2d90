#!/usr/bin/env python3
"""Instructions per rank-call by layer, from callgrind's self cost per function.

Usage: layers.py SELF_COSTS RANK_CALLS

SELF_COSTS is the function table of
  callgrind_annotate --auto=no --inclusive=no --threshold=100 callgrind.out
(lines "N (p%)  file:function [object]"); RANK_CALLS the row's rank-calls. A
function goes to the first layer whose pattern its name matches (inlined code
is named by the function it was inlined into); the rest is "other".
"""
import collections
import re
import sys

LAYERS = [
    ("checks", r"ReductionChecker|Agreement"),
    ("trace", r"Trace::|TraceEvent"),
    ("fibers and scheduler",
     r"jump_fcontext|ontop_fcontext|Fiber::|Scheduler::|RandomSchedule|Rng|"
     r"SimRun::Setup\(\)::\{lambda"),
    ("workload, host, call bookkeeping",
     r"WorkloadProgram|SimHost|RunRankProgram|DispatchAllReduce|RankRuntime|"
     r"FinishDispatchedCall|HardwareModel|SiteRef|ExpectedRanks|CallOutcome|HostLamportCounters"),
    ("dispatch core",
     r"GroupCoordinator|DispatchPolicy|FfnExitFacts|PlanFfnExit|IsTpObject|DecisionFingerprint|"
     r"PostExpertsReductionRole|FusedNormPredicatesHold|PerDimensionFits|WorkspaceMatches|"
     r"TunedOneShotMaxBytes|SelectFusedAlgorithm"),
    ("simulated NCCL, fused protocol and data",
     r"Lamport|SimWorkspace|OneShotAllReduce|SimFusedBackend|ChunkHasSentinel|SanitizeChunk|"
     r"Rebased|SliceElements|WriteChunk|SimComm|Accumulator|RunList|MakeInput|AddToSum|"
     r"SimTensor|SimValue|Storage<lockstep::Run|Storage<lockstep::Piece|ContributionKey|"
     r"SimNcclBackend|SimBackendContext|ConstructElements<std::allocator<lockstep::Run"),
]


def main():
    path, calls = sys.argv[1], int(sys.argv[2])
    totals = collections.Counter()
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        n = int(m.group(1).replace(",", ""))
        where = m.group(2)
        function = where.split(":", 1)[1] if ":" in where else where
        layer = next((name for name, pattern in LAYERS if re.search(pattern, function)), "other")
        totals[layer] += n
    everything = sum(totals.values())
    for layer, n in totals.most_common():
        print(f"{n / calls:8.0f} instructions per rank-call {100 * n / everything:5.1f} %  {layer}")
    print(f"{everything / calls:8.0f} in all")


if __name__ == "__main__":
    main()
