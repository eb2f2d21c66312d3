// The shape of a Transformer's weights, written once for every device: a
// device names its own linear layer, norm and embedding types (host pointers
// into the mapped model, or device pointers into an uploaded block) and gets
// the layers, in the order transformer_layers.hpp runs them.
#pragma once

#include <vector>

namespace mt::detail {

template <class LinearT, class NormT>
struct EncoderLayerOf {
  LinearT qkv, out, ffn_0, ffn_1;
  NormT attention_norm, ffn_norm;
};

template <class LinearT, class NormT>
struct DecoderLayerOf {
  LinearT qkv, self_out, cross_q, cross_kv, cross_out, ffn_0, ffn_1;
  NormT self_norm, cross_norm, ffn_norm;
};

template <class LinearT, class NormT, class EmbeddingT>
struct TransformerWeightsOf {
  using Linear = LinearT;
  using Norm = NormT;
  using Embedding = EmbeddingT;
  EmbeddingT source_embedding;  // [Vs, C]
  EmbeddingT target_embedding;  // [Vt, C]
  LinearT output;               // [Vt, C]: the target embedding when tied
  std::vector<EncoderLayerOf<LinearT, NormT>> encoder;
  std::vector<DecoderLayerOf<LinearT, NormT>> decoder;
  NormT encoder_norm, decoder_norm;  // pre-norm only
};

}  // namespace mt::detail
