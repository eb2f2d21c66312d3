// Training steps on another device (today: CUDA), behind one interface so
// the Trainer and mt_train build without a CUDA toolkit. The Trainer keeps
// its CPU model as the master copy for initialisation, export and
// checkpoints; the backend holds the working weights, the optimizer moments
// and the dropout stream on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/graph.hpp"
#include "distributed/communicator.hpp"
#include "model/transformer_model.hpp"
#include "mt/status.hpp"
#include "optim/adam.hpp"

namespace mt::train {

struct BackendLoss {
  double loss = 0.0;  // summed over the batch's labels
  double nll = 0.0;
  int64_t tokens = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // Forward, backward and one Adam update (gradients averaged per token).
  // Over several ranks, `batch` is this rank's share (it may be empty), and
  // the gradients and the returned sums are every rank's.
  virtual BackendLoss train_step(const Batch& batch, const ForwardOptions& options, double* grad_norm) = 0;
  // Forward only, dropout off.
  virtual BackendLoss evaluate(const Batch& batch, const ForwardOptions& options) = 0;
  virtual int64_t steps() const = 0;
  virtual double last_learning_rate() const = 0;
  virtual void set_learning_rate_scale(double scale) = 0;  // as train::Adam's
  virtual void upload(const TransformerModel<float>& host) = 0;
  virtual void download(TransformerModel<float>& host) const = 0;
  // Optimizer state in the CPU Adam's layout (checkpoints move between devices).
  virtual void save_optimizer(std::vector<char>* out) const = 0;
  virtual Status load_optimizer(const char* data, size_t size, size_t* consumed) = 0;
  virtual autograd::RngState rng_state() const = 0;
  virtual void set_rng_state(autograd::RngState state) = 0;
  // The device and, over ranks, how they sum: for mt_train's log.
  virtual std::string describe() const = 0;
};

// Empty when CUDA training can run here; else why not, in one line ("built
// without CUDA", "no CUDA device ...").
std::string cuda_training_unavailable_reason();

// A CUDA backend holding a copy of `host`'s weights; throws std::runtime_error
// when CUDA is unavailable. Under a launcher (ranks->launched(): mpirun,
// srun) each rank takes its node's GPU by local rank and the gradients are
// summed over the ranks with NCCL; then it throws when NCCL is missing,
// saying what to install. Collective then: every rank calls it.
std::unique_ptr<DeviceBackend> make_cuda_backend(const TransformerModel<float>& host, const AdamOptions& adam,
                                                 uint64_t seed, Communicator* ranks = nullptr);

}  // namespace mt::train
