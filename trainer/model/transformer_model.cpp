#include "model/transformer_model.hpp"

#include <cmath>
#include <random>

#include "mt/model_spec.hpp"

namespace mt::train {

using autograd::SeqBatch;
using autograd::Tensor;

template <class T>
TransformerModel<T>::TransformerModel(autograd::Graph<T>& graph, const ModelConfig& config)
    : g_(graph), config_(config) {
  for (const TensorSpec& spec : model_tensor_specs(config)) {
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
    Tensor<T>* t = params_.at(spec.name);
    double limit = 0.0, offset = 0.0;
    switch (spec.role) {
      case TensorRole::weight: limit = std::sqrt(6.0 / double(spec.shape[0] + spec.shape[1])); break;
      case TensorRole::embedding: limit = std::sqrt(3.0 / double(spec.shape[1])); break;
      case TensorRole::norm_gamma: offset = 1.0; break;
      case TensorRole::bias:
      case TensorRole::norm_beta: break;
    }
    for (T& v : t->value) v = T(offset + limit * uniform(rng));
  }
}

// Pre-norm sublayers read LayerNorm(x); post-norm ones read x.
template <class T>
Tensor<T>* TransformerModel<T>::sublayer_input(Tensor<T>* x, const std::string& norm) {
  if (!config_.pre_norm) return x;
  return autograd::layer_norm(g_, x, p(norm + "/gamma"), p(norm + "/beta"), config_.layer_norm_epsilon);
}

// x + dropout(out), normalised after the sum in post-norm.
template <class T>
Tensor<T>* TransformerModel<T>::sublayer_output(Tensor<T>* x, Tensor<T>* out, const std::string& norm,
                                                double dropout) {
  Tensor<T>* sum = autograd::add(g_, x, autograd::dropout(g_, out, dropout));
  if (config_.pre_norm) return sum;
  return autograd::layer_norm(g_, sum, p(norm + "/gamma"), p(norm + "/beta"), config_.layer_norm_epsilon);
}

template <class T>
Tensor<T>* TransformerModel<T>::ffn(Tensor<T>* x, const std::string& scope, double dropout) {
  Tensor<T>* in = sublayer_input(x, scope + "/norm");
  Tensor<T>* h = autograd::linear(g_, in, p(scope + "/linear_0/weight"), p(scope + "/linear_0/bias"));
  h = config_.activation == Activation::gelu ? autograd::gelu(g_, h) : autograd::relu(g_, h);
  Tensor<T>* out = autograd::linear(g_, h, p(scope + "/linear_1/weight"), p(scope + "/linear_1/bias"));
  return sublayer_output(x, out, scope + "/norm", dropout);
}

template <class T>
Tensor<T>* TransformerModel<T>::forward(const Batch& batch, const ForwardOptions& o) {
  const int H = config_.heads;
  const double scale = std::sqrt(double(config_.d_model));
  const SeqBatch source{batch.B, batch.S, batch.source_lengths};
  const SeqBatch target{batch.B, batch.T, batch.target_lengths};
  Tensor<T>* source_table = p(config_.shared_embeddings ? "target_embedding" : "source_embedding");

  // Encoder over the padded source; padding is masked by the lengths.
  Tensor<T>* x = autograd::embedding(g_, source_table, batch.source, batch.S, scale);
  x = autograd::dropout(g_, x, o.dropout);
  for (int i = 0; i < config_.encoder_layers; ++i) {
    const std::string l = "encoder/layer_" + std::to_string(i);
    Tensor<T>* in = sublayer_input(x, l + "/self_attention/norm");
    Tensor<T>* qkv = autograd::linear(g_, in, p(l + "/self_attention/qkv/weight"), p(l + "/self_attention/qkv/bias"));
    Tensor<T>* attn = autograd::self_attention(g_, qkv, source, H, /*causal=*/false);
    Tensor<T>* out = autograd::linear(g_, attn, p(l + "/self_attention/out/weight"), p(l + "/self_attention/out/bias"));
    x = sublayer_output(x, out, l + "/self_attention/norm", o.dropout);
    x = ffn(x, l + "/ffn", o.dropout);
  }
  if (config_.pre_norm) x = autograd::layer_norm(g_, x, p("encoder/norm/gamma"), p("encoder/norm/beta"), config_.layer_norm_epsilon);
  Tensor<T>* memory = x;

  // Decoder, teacher-forced: causal self-attention, cross-attention over the memory.
  Tensor<T>* y = autograd::embedding(g_, p("target_embedding"), batch.target_input, batch.T, scale);
  y = autograd::dropout(g_, y, o.dropout);
  for (int i = 0; i < config_.decoder_layers; ++i) {
    const std::string l = "decoder/layer_" + std::to_string(i);
    Tensor<T>* in = sublayer_input(y, l + "/self_attention/norm");
    Tensor<T>* qkv = autograd::linear(g_, in, p(l + "/self_attention/qkv/weight"), p(l + "/self_attention/qkv/bias"));
    Tensor<T>* attn = autograd::self_attention(g_, qkv, target, H, /*causal=*/true);
    Tensor<T>* out = autograd::linear(g_, attn, p(l + "/self_attention/out/weight"), p(l + "/self_attention/out/bias"));
    y = sublayer_output(y, out, l + "/self_attention/norm", o.dropout);

    in = sublayer_input(y, l + "/cross_attention/norm");
    Tensor<T>* q = autograd::linear(g_, in, p(l + "/cross_attention/q/weight"), p(l + "/cross_attention/q/bias"));
    Tensor<T>* kv = autograd::linear(g_, memory, p(l + "/cross_attention/kv/weight"), p(l + "/cross_attention/kv/bias"));
    attn = autograd::cross_attention(g_, q, target, kv, source, H);
    out = autograd::linear(g_, attn, p(l + "/cross_attention/out/weight"), p(l + "/cross_attention/out/bias"));
    y = sublayer_output(y, out, l + "/cross_attention/norm", o.dropout);

    y = ffn(y, l + "/ffn", o.dropout);
  }
  if (config_.pre_norm) y = autograd::layer_norm(g_, y, p("decoder/norm/gamma"), p("decoder/norm/beta"), config_.layer_norm_epsilon);
  Tensor<T>* output = p(config_.tied_output ? "target_embedding" : "output/weight");
  return autograd::linear(g_, y, output, p("output/bias"));
}

template <class T>
autograd::CrossEntropy<T> TransformerModel<T>::loss(const Batch& batch, const ForwardOptions& o) {
  Tensor<T>* logits = forward(batch, o);
  return autograd::cross_entropy(g_, logits, batch.target_output, config_.pad_id, o.label_smoothing);
}

template <class T>
Status TransformerModel<T>::export_model(const std::string& path, const VocabularyData* vocabulary,
                                         const ModelMetadata& metadata) const {
  ModelWriter writer(config_);
  std::vector<float> values;
  for (const TensorSpec& spec : model_tensor_specs(config_)) {
    const Tensor<T>* t = params_.at(spec.name);
    values.assign(t->value.begin(), t->value.end());
    MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
  }
  if (vocabulary != nullptr) writer.set_vocabulary(*vocabulary);
  writer.set_metadata(metadata);
  return writer.write(path);
}

template class TransformerModel<float>;
template class TransformerModel<double>;

}  // namespace mt::train
