# Sequential (one build at a time, core 0) catalogue A/B, from the repository root: SEEDS seeds a scenario.
set -u
A=$1; B=$2; ROUNDS=${ROUNDS:-3}; SEEDS=${SEEDS:-200}
for r in $(seq 1 $ROUNDS); do
  for f in topologies/scenarios/*.yaml; do
    s=$(basename $f .yaml)
    for side in a b; do
      if [ $side = a ]; then bin=$A; else bin=$B; fi
      t0=$(date +%s.%N); taskset -c 0 $bin/lockstep explore $f --seeds $SEEDS --jobs 1 > /dev/null 2>&1; t1=$(date +%s.%N)
      echo "$r $side $s $(awk "BEGIN{print ($t1-$t0)*1000/$SEEDS}")"
    done
  done
done
