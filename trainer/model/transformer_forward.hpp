// The Transformer's forward pass, written once for both autograd graphs:
// the CPU's autograd::Graph<T> (TransformerModel) and the device's
// autograd::gpu::Graph (cuda/cuda_transformer_model.hpp). Ops are called
// unqualified so argument-dependent lookup picks them from the namespace of
// the tensors: autograd::linear for CPU tensors, autograd::gpu::linear for
// device ones. The function is the runtime's (lib/src/transformer/transformer.cpp).
#pragma once

#include <cmath>
#include <span>
#include <string>

#include "autograd/attention.hpp"
#include "data/parallel_corpus.hpp"
#include "mt/model.hpp"

namespace mt::train {

struct ForwardOptions {
  // On the embeddings and every sublayer's output, as fairseq's --dropout
  // (none on the attention weights or the FFN's hidden layer).
  double dropout = 0.0;
  double label_smoothing = 0.0;
};

// The output layer's weight: the target embedding when tied.
inline const char* output_weight_name(const ModelConfig& config) {
  return config.tied_output ? "target_embedding" : "output/weight";
}

// Teacher-forced decoder states [B*T, d_model], the output layer's input.
// param(name) returns the graph's tensor of that model_spec name;
// positions: the model's own position table when config.stored_positions
// (a constant: fine-tuning keeps it).
template <class G, class Param>
auto* transformer_states(G& g, const ModelConfig& config, Param&& param, const Batch& batch, const ForwardOptions& o,
                         std::span<const float> positions = {}) {
  using autograd::SeqBatch;
  using TensorPtr = decltype(param(std::string()));
  const auto norm = [&](TensorPtr x, const std::string& name) {
    return layer_norm(g, x, param(name + "/gamma"), param(name + "/beta"), config.layer_norm_epsilon);
  };
  // Pre-norm sublayers read LayerNorm(x); post-norm ones read x.
  const auto sublayer_input = [&](TensorPtr x, const std::string& name) { return config.pre_norm ? norm(x, name) : x; };
  // x + dropout(out), normalised after the sum in post-norm.
  const auto sublayer_output = [&](TensorPtr x, TensorPtr out, const std::string& name) {
    TensorPtr s = add(g, x, dropout(g, out, o.dropout));
    return config.pre_norm ? s : norm(s, name);
  };
  const auto proj = [&](TensorPtr x, const std::string& name) {
    return linear(g, x, param(name + "/weight"), param(name + "/bias"));
  };
  // relu(proj(x, name)) as one op (autograd::linear_relu).
  const auto proj_relu = [&](TensorPtr x, const std::string& name) {
    return linear_relu(g, x, param(name + "/weight"), param(name + "/bias"));
  };
  const auto ffn = [&](TensorPtr x, const std::string& scope) {
    TensorPtr in = sublayer_input(x, scope + "/norm");
    const std::string l0 = scope + "/linear_0";
    TensorPtr h = config.activation == Activation::gelu    ? gelu(g, proj(in, l0))
                  : config.activation == Activation::swish ? swish(g, proj(in, l0))
                                                           : proj_relu(in, l0);
    return sublayer_output(x, proj(h, scope + "/linear_1"), scope + "/norm");
  };

  const int H = config.heads;
  // The runtime's ModelConfig::embedding_multiplier(), sqrt(d_model) in double as always.
  const double scale =
      config.embedding_scale > 0.0f ? double(config.embedding_scale) : std::sqrt(double(config.d_model));
  const SeqBatch source{batch.B, batch.S, batch.source_lengths};
  const SeqBatch target{batch.B, batch.T, batch.target_lengths};
  TensorPtr source_table = param(config.shared_embeddings ? "target_embedding" : "source_embedding");

  // Encoder over the padded source; padding is masked by the lengths.
  TensorPtr x = embedding(g, source_table, batch.source, batch.S, scale, true, positions);
  x = dropout(g, x, o.dropout);
  for (int i = 0; i < config.encoder_layers; ++i) {
    const std::string l = "encoder/layer_" + std::to_string(i);
    TensorPtr qkv = proj(sublayer_input(x, l + "/self_attention/norm"), l + "/self_attention/qkv");
    TensorPtr attn = self_attention(g, qkv, source, H, /*causal=*/false);
    x = sublayer_output(x, proj(attn, l + "/self_attention/out"), l + "/self_attention/norm");
    x = ffn(x, l + "/ffn");
  }
  if (config.pre_norm) x = norm(x, "encoder/norm");
  TensorPtr memory = x;

  // Decoder, teacher-forced: causal self-attention, cross-attention over the memory.
  TensorPtr y = embedding(g, param("target_embedding"), batch.target_input, batch.T, scale, true, positions);
  y = dropout(g, y, o.dropout);
  for (int i = 0; i < config.decoder_layers; ++i) {
    const std::string l = "decoder/layer_" + std::to_string(i);
    TensorPtr qkv = proj(sublayer_input(y, l + "/self_attention/norm"), l + "/self_attention/qkv");
    TensorPtr attn = self_attention(g, qkv, target, H, /*causal=*/true);
    y = sublayer_output(y, proj(attn, l + "/self_attention/out"), l + "/self_attention/norm");

    TensorPtr q = proj(sublayer_input(y, l + "/cross_attention/norm"), l + "/cross_attention/q");
    TensorPtr kv = proj(memory, l + "/cross_attention/kv");
    attn = cross_attention(g, q, target, kv, source, H);
    y = sublayer_output(y, proj(attn, l + "/cross_attention/out"), l + "/cross_attention/norm");

    y = ffn(y, l + "/ffn");
  }
  if (config.pre_norm) y = norm(y, "decoder/norm");
  return y;
}

// Teacher-forced logits [B*T, V].
template <class G, class Param>
auto* transformer_forward(G& g, const ModelConfig& config, Param&& param, const Batch& batch, const ForwardOptions& o,
                          std::span<const float> positions = {}) {
  auto* y = transformer_states(g, config, param, batch, o, positions);
  return linear(g, y, param(output_weight_name(config)), param("output/bias"));
}

}  // namespace mt::train
