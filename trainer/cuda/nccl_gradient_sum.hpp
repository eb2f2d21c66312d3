// Data-parallel training on GPUs: every rank's parameter gradients summed
// over all ranks by NCCL's all-reduce, in device memory, on the graph's
// stream (one grouped call per update). MPI (the Communicator) only starts
// it: rank 0's NCCL id reaches the others by broadcast. One rank per GPU.
//
// The sums are NCCL's: its all-reduce hands every rank one result, so the
// ranks apply the same Adam update, but the order of the additions is NCCL's
// choice (ring or tree, by size), so N ranks equal one process with
// --batch-slices N within rounding, not bit for bit (the CPU ranks' fixed
// order, distributed/communicator.hpp, is bit for bit).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/device_graph.hpp"
#include "distributed/communicator.hpp"

namespace mt::autograd::gpu {

class NcclGradientSum {
 public:
  // A communicator over `ranks` (collective: every rank calls it); throws
  // std::runtime_error saying why not (no NCCL in this build or on this
  // machine, an NCCL or MPI error), as the trainer's CUDA failures do.
  static std::unique_ptr<NcclGradientSum> create(train::Communicator& ranks, Stream stream);
  ~NcclGradientSum();
  NcclGradientSum(const NcclGradientSum&) = delete;
  NcclGradientSum& operator=(const NcclGradientSum&) = delete;

  // Each parameter's gradient, in place, summed over the ranks; queued on
  // the stream (Adam's kernels follow on it). Collective; throws on error.
  void sum(const std::vector<Tensor*>& parameters);

  // "NCCL 2.32.3 (path), 2 ranks", for mt_train's log.
  std::string describe() const;

 private:
  struct State;
  explicit NcclGradientSum(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// Whether this build has NCCL and this machine's opens; else *why (when given).
bool nccl_available(std::string* why = nullptr);

// The GPU this process trains on: its rank among the node's ranks modulo the
// node's GPUs, when `ranks` is a launched world; else the current device.
// Call before any CUDA work of the process.
void select_rank_device(const train::Communicator* ranks);

}  // namespace mt::autograd::gpu
