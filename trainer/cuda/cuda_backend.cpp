// The CUDA DeviceBackend: a gpu::Graph with the model's parameters, the
// device Adam, and the Trainer's step (clear, zero_grad, loss, backward,
// update with gradients averaged per token) on them. Under a launcher the
// gradients and loss sums of every rank's share are added before the update
// (NCCL for the gradients on the device, the Communicator for three numbers).
#include <cuda_runtime.h>

#include <stdexcept>

#include "cuda/adam.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_transformer_model.hpp"
#include "cuda/nccl_gradient_sum.hpp"
#include "device_backend.hpp"

namespace mt::train {

namespace {

// Picks the rank's GPU before the graph makes its stream there.
struct RankDevice {
  explicit RankDevice(const Communicator* ranks) { autograd::gpu::select_rank_device(ranks); }
};

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend(const TransformerModel<float>& host, const AdamOptions& adam, uint64_t seed, Communicator* ranks)
      : device_(ranks), model_(graph_, host.config()), adam_(graph_, adam) {
    model_.upload_from(host);
    graph_.set_seed(seed);
    // One launched rank sums through NCCL when it is here (the path N ranks
    // take, checked against the CPU with one GPU); without NCCL it trains alone.
    if (ranks != nullptr && ranks->launched() && (ranks->size() > 1 || autograd::gpu::nccl_available())) {
      ranks_ = ranks;
      gradients_ = autograd::gpu::NcclGradientSum::create(*ranks, graph_.stream());
    }
  }

  BackendLoss train_step(const Batch& batch, const ForwardOptions& options, double* grad_norm) override {
    graph_.clear();
    graph_.zero_grad();
    graph_.set_training(true);
    double sums[3] = {0.0, 0.0, 0.0};  // loss, nll, tokens: this rank's, then every rank's
    if (batch.B > 0) {                 // an empty share adds zeros
      const auto ce = model_.loss(batch, options);
      graph_.backward(ce.loss);
      sums[0] = ce.value, sums[1] = ce.nll, sums[2] = double(ce.tokens);
    }
    if (gradients_) {
      gradients_->sum(graph_.parameters());
      if (Status e = ranks_->sum(sums, 3); !e.ok()) throw std::runtime_error(e.message());
    }
    *grad_norm = adam_.step(1.0 / std::max(sums[2], 1.0));
    return {sums[0], sums[1], int64_t(sums[2])};
  }

  BackendLoss evaluate(const Batch& batch, const ForwardOptions& options) override {
    graph_.clear();
    graph_.set_training(false);
    const auto ce = model_.loss(batch, options);
    graph_.clear();
    graph_.set_training(true);
    return {ce.value, ce.nll, ce.tokens};
  }

  int64_t steps() const override { return adam_.steps(); }
  double last_learning_rate() const override { return adam_.last_learning_rate(); }
  void set_learning_rate_scale(double scale) override { adam_.set_learning_rate_scale(scale); }
  void upload(const TransformerModel<float>& host) override { model_.upload_from(host); }
  void download(TransformerModel<float>& host) const override { model_.download_to(host); }
  void save_optimizer(std::vector<char>* out) const override { adam_.save(out); }
  Status load_optimizer(const char* data, size_t size, size_t* consumed) override {
    return adam_.load(data, size, consumed);
  }
  autograd::RngState rng_state() const override { return graph_.rng_state(); }
  void set_rng_state(autograd::RngState state) override { graph_.set_rng_state(state); }

  std::string describe() const override {
    int device = 0;
    cudaDeviceProp properties{};
    MT_GPU_CHECK(cudaGetDevice(&device));
    MT_GPU_CHECK(cudaGetDeviceProperties(&properties, device));
    std::string text = "CUDA device " + std::to_string(device) + " (" + properties.name + ")";
    if (gradients_) text += ", gradients summed by " + gradients_->describe();
    return text;
  }

 private:
  RankDevice device_;           // first: the graph's stream lives on the rank's GPU
  autograd::gpu::Graph graph_;  // then the model and Adam, which live in it
  CudaTransformerModel model_;
  autograd::gpu::Adam adam_;
  Communicator* ranks_ = nullptr;
  std::unique_ptr<autograd::gpu::NcclGradientSum> gradients_;
};

}  // namespace

std::string cuda_training_unavailable_reason() { return autograd::gpu::device_unavailable_reason(); }

std::unique_ptr<DeviceBackend> make_cuda_backend(const TransformerModel<float>& host, const AdamOptions& adam,
                                                 uint64_t seed, Communicator* ranks) {
  return std::make_unique<CudaBackend>(host, adam, seed, ranks);
}

}  // namespace mt::train
