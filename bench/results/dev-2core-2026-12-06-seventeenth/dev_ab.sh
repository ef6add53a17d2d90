# Pinned A/B of two bench-preset builds, run from the repository root:
#   BASE=<old build-bench/bin> NEW=<new build-bench/bin> bash dev_ab.sh OUT
# (this session: BASE a worktree of cb3cd4f, NEW this tree's build-bench/bin).
# The fifteenth session's dev_ab.sh with the catalogue's costliest scenario
# added (pp2-dpattn-dp72-ep72-deepseek-v3-2xnvl72: half of what a seed of
# every catalogue scenario costs, scenario_costs.txt); the two builds run at
# once on cores 0 and 1, swapped every round.
set -u
OUT=$1
BASE=${BASE:-/tmp/base/build-bench/bin}
NEW=${NEW:-$PWD/build-bench/bin}
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for s in tp8-llama3-h200 tp8-cuda-graphs-custom-llama3-h200 dpattn-dp8-ep8-deepseek-v3-h200 tp32-deepseek-v3-gb200 pp2-dpattn-dp72-ep72-deepseek-v3-2xnvl72; do
    n=3000; [ $s = tp32-deepseek-v3-gb200 ] && n=500; [ $s = pp2-dpattn-dp72-ep72-deepseek-v3-2xnvl72 ] && n=60
    ( t0=$(date +%s.%N); taskset -c $cb $BASE/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r base $s core $cb seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT ) &
    ( t0=$(date +%s.%N); taskset -c $cn $NEW/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r new $s core $cn seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT ) &
    wait
  done
  for f in 0 1; do
    ( taskset -c $cb $BASE/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r base row fused:$f core $cb /" >> $OUT ) &
    ( taskset -c $cn $NEW/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r new row fused:$f core $cn /" >> $OUT ) &
    wait
  done
done
