# The catalogue one build at a time on one core (core 3) of the host: every
# scenario, `explore --seeds 200 --jobs 1`, base then new, three rounds; from
# the repository root with .carry as in this folder's README. Writes
# $OUT/h_catalogue_seq.txt, lines "ROUND base|new SCENARIO ms-a-seed".
set -u
export NCCL_NVLS_ENABLE=0 LOCKSTEP_TOPOLOGIES=$PWD/topologies
for r in 1 2 3; do
  for f in topologies/scenarios/*.yaml; do
    s=$(basename "$f" .yaml)
    for side in base new; do
      t0=$(date +%s.%N)
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/lockstep explore "$f" \
        --seeds 200 --jobs 1 > /dev/null 2>&1
      t1=$(date +%s.%N)
      echo "$r $side $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 200}")" >> "$OUT/h_catalogue_seq.txt"
    done
  done
done
