// The OpenMPI baseline of sim_bench: real processes running the collective
// sequence the simulator benchmark simulates (MPI_Allreduce of 64 floats), to
// give rank-calls per second on the same machine, in the same run.
//
//   mpirun -np 8 mpi_allreduce_baseline CALLS [GROUP]
// prints one line: "rank_calls_per_s <value>" (from rank 0): every process's
// calls. With GROUP, the processes form groups of GROUP ranks (ranks
// r / GROUP together, as the simulated tp8 groups) and each all-reduce runs
// over its group.

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const long calls = argc > 1 ? std::atol(argv[1]) : 20000;
  const int group = argc > 2 ? std::atoi(argv[2]) : world;
  MPI_Comm comm = MPI_COMM_WORLD;
  if (group > 0 && group < world) MPI_Comm_split(MPI_COMM_WORLD, rank / group, rank, &comm);
  int members = world;
  MPI_Comm_size(comm, &members);
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  // Warm-up, then the timed sequence.
  for (int i = 0; i < 100; ++i) {
    MPI_Allreduce(in.data(), out.data(), 64, MPI_FLOAT, MPI_SUM, comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < calls; ++i) {
    MPI_Allreduce(in.data(), out.data(), 64, MPI_FLOAT, MPI_SUM, comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double seconds = MPI_Wtime() - start;
  if (out[0] != static_cast<float>(members)) {
    std::fprintf(stderr, "wrong sum %f\n", static_cast<double>(out[0]));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    std::printf("rank_calls_per_s %.1f\n", static_cast<double>(calls) * world / seconds);
  }
  MPI_Finalize();
  return 0;
}
