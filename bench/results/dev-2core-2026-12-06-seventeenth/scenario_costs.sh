# What one seed of each catalogue scenario costs `lockstep explore` on one
# core, run from the repository root:
#   BIN=<build-bench/bin> bash scenario_costs.sh > scenario_costs.txt
# Wall time of `explore FILE --seeds 50 --jobs 1` (start-up and YAML loading
# included) divided by 50, costliest first, then each scenario's share of
# the sum.
set -u
BIN=${BIN:-$PWD/build-bench/bin}
for f in topologies/scenarios/*.yaml; do
  t0=$(date +%s.%N)
  taskset -c 1 "$BIN/lockstep" explore "$f" --seeds 50 --jobs 1 >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$(awk "BEGIN{printf \"%.3f\", ($t1 - $t0) * 1000 / 50}") $(basename "$f" .yaml)"
done | sort -rn | awk '{ ms[NR] = $1; name[NR] = $2; sum += $1 }
  END { for (i = 1; i <= NR; ++i) printf "%8.3f ms a seed  %5.1f %%  %s\n", ms[i], 100 * ms[i] / sum, name[i];
        printf "%8.3f ms a seed in all (%d scenarios)\n", sum, NR }'
