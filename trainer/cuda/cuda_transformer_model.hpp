// The trainer's Transformer on the device: the parameters of a CPU
// TransformerModel<float> (same names and shapes, model_spec.hpp) mirrored
// into a gpu::Graph, and the forward pass of model/transformer_forward.hpp,
// so the architecture is defined once. Initialisation and export stay with
// the CPU model: upload_from() after initialize(), download_to() before
// export_model() or a checkpoint.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cuda/ops.hpp"
#include "model/transformer_model.hpp"

namespace mt::train {

class CudaTransformerModel {
 public:
  // Creates every parameter of `config` in the device graph (zeros).
  CudaTransformerModel(autograd::gpu::Graph& graph, const ModelConfig& config);

  void upload_from(const TransformerModel<float>& host);
  void download_to(TransformerModel<float>& host) const;

  autograd::gpu::Tensor* forward(const Batch& batch, const ForwardOptions& options);
  autograd::gpu::CrossEntropy loss(const Batch& batch, const ForwardOptions& options);

  autograd::gpu::Tensor* parameter(const std::string& name) const { return params_.at(name); }
  const ModelConfig& config() const { return config_; }

 private:
  autograd::gpu::Graph& g_;
  ModelConfig config_;
  std::map<std::string, autograd::gpu::Tensor*> params_;
  std::vector<float> positions_;  // the host model's (config.stored_positions)
};

}  // namespace mt::train
