#include "cuda/cuda_transformer_model.hpp"

#include "mt/model_spec.hpp"

namespace mt::train {

using autograd::gpu::Tensor;

CudaTransformerModel::CudaTransformerModel(autograd::gpu::Graph& graph, const ModelConfig& config)
    : g_(graph), config_(config) {
  for (const TensorSpec& spec : model_tensor_specs(config)) {
    if (spec.role == TensorRole::positions) continue;  // a host constant (positions_)
    autograd::Shape shape;
    for (uint32_t d : spec.shape) shape.dims[size_t(shape.rank++)] = int(d);
    params_[spec.name] = g_.parameter(spec.name, shape);
  }
}

void CudaTransformerModel::upload_from(const TransformerModel<float>& host) {
  for (auto& [name, t] : params_) g_.upload(t, host.parameter(name)->value);
  positions_ = host.positions();
}

void CudaTransformerModel::download_to(TransformerModel<float>& host) const {
  for (const auto& [name, t] : params_) host.parameter(name)->value = g_.download(t);
}

Tensor* CudaTransformerModel::forward(const Batch& batch, const ForwardOptions& o) {
  return transformer_forward(
      g_, config_, [this](const std::string& name) { return params_.at(name); }, batch, o, positions_);
}

autograd::gpu::CrossEntropy CudaTransformerModel::loss(const Batch& batch, const ForwardOptions& o) {
  Tensor* logits = forward(batch, o);
  return cross_entropy(g_, logits, batch.target_output, config_.pad_id, o.label_smoothing);
}

}  // namespace mt::train
