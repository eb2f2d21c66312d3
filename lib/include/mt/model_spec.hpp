// The tensors a model of a given config must hold: names, shapes and layouts.
// One list shared by the loader (checks), the writer's callers (random models,
// the trainer, the quantizer) so the three can never disagree.
//
// Names, with C = d_model, F = d_ff, V = vocabulary sizes:
//   target_embedding                [Vt, C]  packed (also the output projection when tied)
//   source_embedding                [Vs, C]  packed (absent when embeddings are shared)
//   output/weight [Vt, C] packed (absent when tied), output/bias [Vt]
//   encoder/layer_i/self_attention/{qkv/weight [3C, C], qkv/bias, out/weight [C, C], out/bias, norm/gamma, norm/beta}
//   encoder/layer_i/ffn/{linear_0/weight [F, C], linear_0/bias, linear_1/weight [C, F], linear_1/bias, norm/gamma,
//   norm/beta} decoder/layer_i/self_attention/...  as in the encoder decoder/layer_i/cross_attention/{q/weight [C, C],
//   q/bias, kv/weight [2C, C], kv/bias, out/weight, out/bias, norm/...} decoder/layer_i/ffn/...             as in the
//   encoder encoder/norm/{gamma,beta}, decoder/norm/{gamma,beta}   pre-norm only: the final LayerNorm of each stack
//   position_encoding [P, C] row-major    stored_positions only: row p is added at position p (P = max_positions)
// Linear weights are [out, in]; qkv rows are the Q, K, V projections stacked.
#pragma once

#include "mt/export.h"

#include <cstdint>
#include <string>
#include <vector>

#include "mt/model.hpp"

namespace mt {

// positions: the stored position encodings (never quantized).
enum class TensorRole : uint8_t { embedding, weight, bias, norm_gamma, norm_beta, positions };

struct TensorSpec {
  std::string name;
  std::vector<uint32_t> shape;
  Layout layout = Layout::row_major;
  TensorRole role = TensorRole::weight;

  size_t element_count() const;
  // Bytes of fp32 data in the file for this layout (packed layouts pad N to 16).
  size_t f32_bytes() const;
};

MT_API std::vector<TensorSpec> model_tensor_specs(const ModelConfig& config);

}  // namespace mt
