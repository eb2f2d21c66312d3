// Per-layer pointers into a loaded model's tensors, resolved once at load so
// the forward pass never looks a name up.
#pragma once

#include <vector>

namespace mt::detail {

struct Linear {
  const float* weight = nullptr;  // packed [n, k]
  const float* bias = nullptr;    // [n]
  int n = 0, k = 0;
};

struct Norm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};

struct EncoderLayerWeights {
  Linear qkv, out, ffn_0, ffn_1;
  Norm attention_norm, ffn_norm;
};

struct DecoderLayerWeights {
  Linear qkv, self_out, cross_q, cross_kv, cross_out, ffn_0, ffn_1;
  Norm self_norm, cross_norm, ffn_norm;
};

struct ModelWeights {
  const float* source_embedding = nullptr;  // packed [Vs, C]
  const float* target_embedding = nullptr;  // packed [Vt, C]
  Linear output;                            // [Vt, C]: the target embedding when tied
  std::vector<EncoderLayerWeights> encoder;
  std::vector<DecoderLayerWeights> decoder;
  Norm encoder_norm, decoder_norm;  // pre-norm only
};

}  // namespace mt::detail
