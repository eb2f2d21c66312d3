// The forward pass's working buffers, planned once for every device: where
// each lives in a session's block (the CPU arena, or the GPU block), as
// offsets reserved by one function, and the pointer sets transformer_layers.hpp
// runs on. Shapes: N packed source tokens, R decoder rows, T cache positions
// per row, C = d_model, F = d_ff, V = target vocabulary, L decoder layers.
#pragma once

#include <cstddef>

#include "support/arena.hpp"
#include "mt/model.hpp"

namespace mt::detail {

struct EncoderBuffers {
  float* x;       // [N, C]: the input, then each layer's output, then the memory
  float* y;       // [N, C]: pre-norm's normalised input
  float* qkv;     // [N, 3C]
  float* attn;    // [N, C]
  float* hidden;  // [N, F]
};

struct DecoderBuffers {
  float* x;       // [R, C]
  float* y;       // [R, C]
  float* qkv;     // [R, 3C]
  float* q;       // [R, C]
  float* attn;    // [R, C]
  float* hidden;  // [R, F]
};

struct TransformerBufferPlan {
  size_t enc_x = 0, enc_y = 0, enc_qkv = 0, enc_attn = 0, enc_hidden = 0;
  size_t cross_kv = 0, cross_kv_stride = 0;  // L x [N, 2C]: every decoder layer's projected memory
  size_t dec_x = 0, dec_y = 0, dec_qkv = 0, dec_q = 0, dec_attn = 0, dec_hidden = 0, logits = 0;
  size_t self_cache_stride = 0;  // floats per layer of a [R, T, 2C] cache; the caches are the device's

  // Reserves every buffer in `arena`; sized false reserves them empty (a
  // plan whose forward pass runs elsewhere: on the GPU, or in lanes).
  void reserve(ArenaPlanner& arena, const ModelConfig& cfg, size_t N, size_t R, size_t T, bool sized = true) {
    const size_t C = size_t(cfg.d_model), F = size_t(cfg.d_ff), V = size_t(cfg.target_vocab_size);
    const size_t L = size_t(cfg.decoder_layers), n = sized ? N : 0, r = sized ? R : 0;
    enc_x = arena.reserve<float>(n * C);
    enc_y = arena.reserve<float>(n * C);
    enc_qkv = arena.reserve<float>(n * 3 * C);
    enc_attn = arena.reserve<float>(n * C);
    enc_hidden = arena.reserve<float>(n * F);
    cross_kv_stride = N * 2 * C;
    cross_kv = arena.reserve<float>(ArenaPlanner::product(sized ? L : 0, cross_kv_stride));
    dec_x = arena.reserve<float>(r * C);
    dec_y = arena.reserve<float>(r * C);
    dec_qkv = arena.reserve<float>(r * 3 * C);
    dec_q = arena.reserve<float>(r * C);
    dec_attn = arena.reserve<float>(r * C);
    dec_hidden = arena.reserve<float>(r * F);
    logits = arena.reserve<float>(r * V);
    self_cache_stride = R * T * 2 * C;
  }

  EncoderBuffers encoder_buffers(std::byte* block) const {
    return {at<float>(block, enc_x), at<float>(block, enc_y), at<float>(block, enc_qkv), at<float>(block, enc_attn),
            at<float>(block, enc_hidden)};
  }
  DecoderBuffers decoder_buffers(std::byte* block) const {
    return {at<float>(block, dec_x), at<float>(block, dec_y),    at<float>(block, dec_qkv),
            at<float>(block, dec_q), at<float>(block, dec_attn), at<float>(block, dec_hidden)};
  }
};

}  // namespace mt::detail
