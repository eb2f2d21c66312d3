// The processes of a data-parallel run (mt_train under mpirun or srun): each
// computes the gradient of its share of every batch, and the sums are made
// here. One process without MPI is a communicator of one that moves nothing,
// so a single process trains exactly as it always did.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "mt/status.hpp"

namespace mt::train {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether a launcher (mpirun, srun) started the processes, even one of
  // them: GPU ranks then sum through NCCL (trainer/cuda/nccl_gradient_sum.hpp).
  virtual bool launched() const = 0;
  // This process's rank among those on its node (one GPU each).
  virtual int local_rank() const = 0;
  // Sums n values element-wise over every rank, in place. Every rank gets
  // the same bits: rank 0 adds the ranks' values in rank order, then sends
  // the sums to all (a fixed order, whatever MPI's reduction algorithm).
  virtual Status sum(float* values, size_t n) = 0;
  virtual Status sum(double* values, size_t n) = 0;
  // Rank 0's n bytes to every rank.
  virtual Status broadcast(void* bytes, size_t n) = 0;
  virtual Status barrier() = 0;
  // What the ranks run on, for logs: "1 process" or "MPI, 2 ranks (Open MPI v4.1.4)".
  virtual std::string describe() const = 0;
};

// The single process's communicator.
std::unique_ptr<Communicator> local_communicator();

// MPI's world when libmt was built with MPI (MT_HAVE_MPI) and a launcher
// (mpirun, srun) started this process; else the local one, without MPI.
// Initializes MPI; the communicator finalizes it when destroyed.
Expected<std::unique_ptr<Communicator>> world_communicator(int* argc, char*** argv);

// Whether this build can run data-parallel (MPI found at configure time).
bool mpi_available();

}  // namespace mt::train
