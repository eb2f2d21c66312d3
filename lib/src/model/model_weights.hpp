// Per-layer pointers into a loaded model's tensors, resolved once at load so
// the forward pass never looks a name up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transformer/transformer_weights.hpp"

namespace mt::detail {

// A linear layer y = x W^T + b with W [n, k], fp32 or int8.
struct Linear {
  const float* weight = nullptr;      // fp32: packed_n16 [n, k]; null for int8
  const int8_t* weight_i8 = nullptr;  // int8: packed_k4n16 [n, k]; null for fp32
  const float* scales = nullptr;      // int8: [n], W = scales[n] * weight_i8
  const int32_t* row_sums = nullptr;  // int8 with dynamic input scales: [n]
  const float* bias = nullptr;        // [n] (calibrated int8: zero-point compensation folded in)
  int n = 0, k = 0;
  // int8 input quantization: input_scale > 0 for calibrated models (one
  // scale and zero point for every row), 0 for per-row dynamic scales.
  float input_scale = 0.0f;
  int32_t input_zero = 0;
  int index = -1;  // position in ModelWeights::linear_names

  bool is_int8() const { return weight_i8 != nullptr; }
};

// An embedding table [V, C]: fp32 packed_n16, or int8 packed_k4n16 with one
// scale per row (then also the tied output projection's int8 weight).
struct Embedding {
  const float* f32 = nullptr;
  const int8_t* i8 = nullptr;
  const float* scales = nullptr;
};

struct Norm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};

using EncoderLayerWeights = EncoderLayerOf<Linear, Norm>;
using DecoderLayerWeights = DecoderLayerOf<Linear, Norm>;

struct ModelWeights : TransformerWeightsOf<Linear, Norm, Embedding> {
  // Scope of every linear layer ("encoder/layer_0/ffn/linear_0", ...,
  // "output"), indexed by Linear::index.
  std::vector<std::string> linear_names;
  bool any_int8 = false;
  int max_int8_k = 0;  // widest int8 layer input (sizes the quantized-row buffer)
  // [max_positions, C] stored position encodings, or null: computed (the
  // config's stored_positions).
  const float* position_table = nullptr;
};

}  // namespace mt::detail
