#!/bin/bash
# One shard of a lockstep exploration per MPI rank:
#
#   mpirun -np 16 tools/cluster/explore-mpi.sh
#   build/bin/lockstep merge results/explore-mpi
#
# The shard is OMPI_COMM_WORLD_RANK of OMPI_COMM_WORLD_SIZE; lockstep does not
# call MPI, mpirun only starts the processes (across hosts with --hostfile, the
# results directory shared). mpirun stops every rank once one exits nonzero,
# so a shard that found failures (exit 1, recorded in its result file and
# reported by lockstep merge) exits 0 here. LOCKSTEP, SCENARIOS, EXPLORE_ARGS,
# JOBS and OUT change what runs (mpirun -x EXPLORE_ARGS=... for remote hosts).

set -uo pipefail

LOCKSTEP=${LOCKSTEP:-build/bin/lockstep}
SCENARIOS=${SCENARIOS:-topologies/scenarios}
EXPLORE_ARGS=${EXPLORE_ARGS:---seeds 1000 --swarm --schedule pct:3}
OUT=${OUT:-results/explore-mpi}

# A --seeds shard started again finishes the result file its last attempt
# left (checkpointed, or stopped by SIGTERM: exit 4); a --for shard has
# nothing to resume.
case " $EXPLORE_ARGS " in
  *" --for "* | *" --for="*) resume="" ;;
  *) resume="--resume" ;;
esac
# shellcheck disable=SC2086  # EXPLORE_ARGS is a list of flags; resume may be empty
"$LOCKSTEP" explore "$SCENARIOS" $EXPLORE_ARGS --jobs "${JOBS:-1}" --out "$OUT" $resume &
pid=$!
# mpirun passes SIGTERM to this script: pass it on, and wait for lockstep to
# write what finished (a --for exploration stops early).
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
wait "$pid"
status=$?
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
  status=$?
done
if [ "$status" -eq 1 ]; then
  exit 0
fi
exit "$status"
