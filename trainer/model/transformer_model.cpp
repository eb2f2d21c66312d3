#include "model/transformer_model.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "autograd/embedding.hpp"
#include "autograd/linear_cross_entropy.hpp"
#include "mt/model_spec.hpp"

namespace mt::train {

using autograd::SeqBatch;
using autograd::Tensor;

template <class T>
TransformerModel<T>::TransformerModel(autograd::Graph<T>& graph, const ModelConfig& config)
    : g_(graph), config_(config) {
  for (const TensorSpec& spec : model_tensor_specs(config)) {
    if (spec.role == TensorRole::positions) {  // a constant (positions())
      positions_.assign(size_t(spec.shape[0]) * spec.shape[1], 0.0f);
      continue;
    }
    autograd::Shape shape;
    for (uint32_t d : spec.shape) shape.dims[size_t(shape.rank++)] = int(d);
    params_[spec.name] = g_.parameter(spec.name, shape);
  }
}

template <class T>
void TransformerModel<T>::initialize(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const TensorSpec& spec : model_tensor_specs(config_)) {
    if (spec.role == TensorRole::positions) {  // the runtime's sinusoid until a model file says otherwise
      autograd::sinusoid_positions(int(spec.shape[0]), int(spec.shape[1]), positions_.data());
      continue;
    }
    Tensor<T>* t = params_.at(spec.name);
    double limit = 0.0, offset = 0.0;
    switch (spec.role) {
      case TensorRole::weight:
        limit = std::sqrt(6.0 / double(spec.shape[0] + spec.shape[1]));
        break;
      case TensorRole::embedding:
        limit = std::sqrt(3.0 / double(spec.shape[1]));
        break;
      case TensorRole::norm_gamma:
        offset = 1.0;
        break;
      case TensorRole::bias:
      case TensorRole::norm_beta:
      case TensorRole::positions:
        break;
    }
    for (T& v : t->value) v = T(offset + limit * uniform(rng));
  }
}

template <class T>
Status TransformerModel<T>::initialize_from(const Model& model) {
  if (model.quantization().int8) {
    return Status::error(Errc::invalid_argument,
                         "an int8 model cannot be trained: fine-tune the fp32 model it was quantized from, "
                         "then mt_quantize the result");
  }
  for (const TensorSpec& spec : model_tensor_specs(config_)) {
    const TensorView* t = model.find_tensor(spec.name);
    if (t == nullptr) return Status::error(Errc::invalid_argument, "the model has no tensor '%s'", spec.name.c_str());
    if (t->dtype != DType::f32 || !std::equal(t->shape.begin(), t->shape.end(), spec.shape.begin(), spec.shape.end()))
      return Status::error(Errc::invalid_argument, "tensor '%s' is not fp32 of this config's shape", spec.name.c_str());
    std::vector<float> values = t->f32_values();
    if (spec.role == TensorRole::positions) {
      positions_ = std::move(values);
    } else {
      Tensor<T>* p = params_.at(spec.name);
      std::copy(values.begin(), values.end(), p->value.begin());
    }
  }
  return Status();
}

template <class T>
Tensor<T>* TransformerModel<T>::forward(const Batch& batch, const ForwardOptions& o) {
  return transformer_forward(
      g_, config_, [this](const std::string& name) { return params_.at(name); }, batch, o, positions_);
}

template <class T>
autograd::CrossEntropy<T> TransformerModel<T>::loss(const Batch& batch, const ForwardOptions& o) {
  // The output layer and the loss as one op (linear_cross_entropy.hpp): the
  // same bits as cross_entropy(forward()), with one [tokens, vocabulary]
  // buffer where the two ops keep two.
  Tensor<T>* y = transformer_states(
      g_, config_, [this](const std::string& name) { return parameter(name); }, batch, o, positions_);
  return autograd::linear_cross_entropy(g_, y, parameter(output_weight_name(config_)), parameter("output/bias"),
                                        batch.target_output, config_.pad_id, o.label_smoothing);
}

template <class T>
Status TransformerModel<T>::export_model(const std::string& path, const VocabularyData* vocabulary,
                                         const ModelMetadata& metadata,
                                         const VocabularyData* target_vocabulary) const {
  ModelWriter writer(config_);
  std::vector<float> values;
  for (const TensorSpec& spec : model_tensor_specs(config_)) {
    if (spec.role == TensorRole::positions) {
      values = positions_;
    } else {
      const Tensor<T>* t = params_.at(spec.name);
      values.assign(t->value.begin(), t->value.end());
    }
    MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
  }
  if (vocabulary != nullptr) writer.set_vocabulary(*vocabulary);
  if (target_vocabulary != nullptr) writer.set_target_vocabulary(*target_vocabulary);
  writer.set_metadata(metadata);
  return writer.write(path);
}

template class TransformerModel<float>;
template class TransformerModel<double>;

}  // namespace mt::train
