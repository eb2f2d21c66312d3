// The CUDA DeviceBackend: a gpu::Graph with the model's parameters, the
// device Adam, and the Trainer's step (clear, zero_grad, loss, backward,
// update with gradients averaged per token) on them.
#include <stdexcept>

#include "cuda/adam.hpp"
#include "cuda/cuda_transformer_model.hpp"
#include "device_backend.hpp"

namespace mt::train {

namespace {

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend(const TransformerModel<float>& host, const AdamOptions& adam, uint64_t seed)
      : model_(graph_, host.config()), adam_(graph_, adam) {
    model_.upload_from(host);
    graph_.set_seed(seed);
  }

  BackendLoss train_step(const Batch& batch, const ForwardOptions& options, double* grad_norm) override {
    graph_.clear();
    graph_.zero_grad();
    graph_.set_training(true);
    const auto ce = model_.loss(batch, options);
    graph_.backward(ce.loss);
    *grad_norm = adam_.step(1.0 / double(std::max<int64_t>(ce.tokens, 1)));
    return {ce.value, ce.nll, ce.tokens};
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
  void upload(const TransformerModel<float>& host) override { model_.upload_from(host); }
  void download(TransformerModel<float>& host) const override { model_.download_to(host); }
  void save_optimizer(std::vector<char>* out) const override { adam_.save(out); }
  Status load_optimizer(const char* data, size_t size, size_t* consumed) override {
    return adam_.load(data, size, consumed);
  }
  autograd::RngState rng_state() const override { return graph_.rng_state(); }
  void set_rng_state(autograd::RngState state) override { graph_.set_rng_state(state); }

 private:
  autograd::gpu::Graph graph_;  // first: the model and Adam live in it
  CudaTransformerModel model_;
  autograd::gpu::Adam adam_;
};

}  // namespace

std::string cuda_training_unavailable_reason() { return autograd::gpu::device_unavailable_reason(); }

std::unique_ptr<DeviceBackend> make_cuda_backend(const TransformerModel<float>& host, const AdamOptions& adam,
                                                 uint64_t seed) {
  return std::make_unique<CudaBackend>(host, adam, seed);
}

}  // namespace mt::train
