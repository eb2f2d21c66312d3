// The Transformer's layer sequence, written once for the CPU and the GPU:
// which sublayers run, in which order, on which buffers, with which residuals
// and norms. A device supplies its weights (TransformerWeightsOf) and an Ops
// object for one call that does the arithmetic:
//
//   int linear(const float* x, int M, const Linear& w, float* y, Activation act,
//              const float* residual)            y = act(x W^T + b) (+ residual)
//   int layer_norm(const float* x, int M, const Norm& norm, float* y)
//   int encoder_attention(const float* qkv, float* out)
//       each source sentence over its own tokens (the call knows the packing)
//   int self_attention(size_t layer, int M, const float* qkv, float* out)
//       the decoder's causal attention: this step's keys and values join the
//       layer's cache (or, over whole prefixes, the rows themselves)
//   int cross_attention(size_t layer, int M, const float* q, float* out)
//       each row over its sentence's memory, projected by project_memory
//
// Each returns 0 or the device's error code, which the sequence returns at
// once (the CPU's never fail). Shapes as transformer.hpp: M rows, C = d_model.
#pragma once

#include <cstddef>

#include "mt/kernels.h"
#include "mt/model.hpp"
#include "support/stage_profile.hpp"
#include "transformer/transformer_buffers.hpp"

namespace mt::detail {

// Returns a failed operation's status from the enclosing function.
#define MT_LAYER_OP(expr)                      \
  do {                                         \
    if (const int mt_layer_status_ = (expr)) { \
      return mt_layer_status_;                 \
    }                                          \
  } while (0)

// Pre-norm sublayers read LayerNorm(x) (written to y); post-norm ones x itself.
template <class Ops, class NormT>
int sublayer_input(Ops& ops, const ModelConfig& cfg, const float* x, int M, const NormT& norm, float* y,
                   const float** in) {
  *in = x;
  if (!cfg.pre_norm) return 0;
  *in = y;
  return ops.layer_norm(x, M, norm, y);
}

// After x += sublayer(...): post-norm normalises the sum in place.
template <class Ops, class NormT>
int sublayer_output(Ops& ops, const ModelConfig& cfg, float* x, int M, const NormT& norm) {
  return cfg.pre_norm ? 0 : ops.layer_norm(x, M, norm, x);
}

// x += W2 act(W1 in + b1) + b2: the feed-forward sublayer's two linears.
template <class Ops, class Layer, class Buffers>
int feed_forward(Ops& ops, const ModelConfig& cfg, const Layer& layer, const float* in, int M, const Buffers& b) {
  MT_LAYER_OP(ops.linear(in, M, layer.ffn_0, b.hidden, cfg.activation, nullptr));
  return ops.linear(b.hidden, M, layer.ffn_1, b.x, Activation::none, b.x);
}

// The encoder over N packed source rows, embedded in b.x; the memory ends in b.x.
template <class Ops, class Weights>
int encoder_layers(Ops& ops, const ModelConfig& cfg, const Weights& w, int N, const EncoderBuffers& b) {
  for (const auto& layer : w.encoder) {
    const float* in = nullptr;
    MT_LAYER_OP(sublayer_input(ops, cfg, b.x, N, layer.attention_norm, b.y, &in));
    MT_LAYER_OP(ops.linear(in, N, layer.qkv, b.qkv, Activation::none, nullptr));
    MT_LAYER_OP(ops.encoder_attention(b.qkv, b.attn));
    MT_LAYER_OP(ops.linear(b.attn, N, layer.out, b.x, Activation::none, b.x));
    MT_LAYER_OP(sublayer_output(ops, cfg, b.x, N, layer.attention_norm));

    MT_LAYER_OP(sublayer_input(ops, cfg, b.x, N, layer.ffn_norm, b.y, &in));
    MT_LAYER_OP(feed_forward(ops, cfg, layer, in, N, b));
    MT_LAYER_OP(sublayer_output(ops, cfg, b.x, N, layer.ffn_norm));
  }
  return cfg.pre_norm ? ops.layer_norm(b.x, N, w.encoder_norm, b.x) : 0;
}

// Every decoder layer's cross-attention keys and values of the memory [N, C].
template <class Ops, class Weights>
int project_memory_layers(Ops& ops, const Weights& w, const float* memory, int N, float* cross_kv, size_t stride) {
  MT_PROFILE_STAGE(cross_kv_projection);
  for (size_t l = 0; l < w.decoder.size(); ++l) {
    MT_LAYER_OP(ops.linear(memory, N, w.decoder[l].cross_kv, cross_kv + l * stride, Activation::none, nullptr));
  }
  return 0;
}

// The decoder over M rows embedded in b.x: logits [M, V].
template <class Ops, class Weights>
int decoder_layers(Ops& ops, const ModelConfig& cfg, const Weights& w, int M, const DecoderBuffers& b, float* logits) {
  for (size_t l = 0; l < w.decoder.size(); ++l) {
    const auto& layer = w.decoder[l];
    // Causal self-attention.
    const float* in = nullptr;
    MT_LAYER_OP(sublayer_input(ops, cfg, b.x, M, layer.self_norm, b.y, &in));
    {
      MT_PROFILE_STAGE(self_qkv);
      MT_LAYER_OP(ops.linear(in, M, layer.qkv, b.qkv, Activation::none, nullptr));
    }
    {
      MT_PROFILE_STAGE(self_attention);
      MT_LAYER_OP(ops.self_attention(l, M, b.qkv, b.attn));
    }
    {
      MT_PROFILE_STAGE(self_out);
      MT_LAYER_OP(ops.linear(b.attn, M, layer.self_out, b.x, Activation::none, b.x));
    }
    MT_LAYER_OP(sublayer_output(ops, cfg, b.x, M, layer.self_norm));

    // Cross-attention over the memory of each row's source sentence.
    MT_LAYER_OP(sublayer_input(ops, cfg, b.x, M, layer.cross_norm, b.y, &in));
    {
      MT_PROFILE_STAGE(cross_q);
      MT_LAYER_OP(ops.linear(in, M, layer.cross_q, b.q, Activation::none, nullptr));
    }
    {
      MT_PROFILE_STAGE(cross_attention);
      MT_LAYER_OP(ops.cross_attention(l, M, b.q, b.attn));
    }
    {
      MT_PROFILE_STAGE(cross_out);
      MT_LAYER_OP(ops.linear(b.attn, M, layer.cross_out, b.x, Activation::none, b.x));
    }
    MT_LAYER_OP(sublayer_output(ops, cfg, b.x, M, layer.cross_norm));

    // Feed-forward.
    MT_LAYER_OP(sublayer_input(ops, cfg, b.x, M, layer.ffn_norm, b.y, &in));
    {
      MT_PROFILE_STAGE(ffn);
      MT_LAYER_OP(feed_forward(ops, cfg, layer, in, M, b));
    }
    MT_LAYER_OP(sublayer_output(ops, cfg, b.x, M, layer.ffn_norm));
  }
  const float* out = b.x;
  if (cfg.pre_norm) {
    MT_LAYER_OP(ops.layer_norm(b.x, M, w.decoder_norm, b.y));
    out = b.y;
  }
  MT_PROFILE_STAGE(output_layer);
  return ops.output(out, M, w.output, logits);
}

}  // namespace mt::detail
