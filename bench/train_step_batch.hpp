// What bench_train_step (CPU) and bench_cuda_train_step (GPU) share: the
// batch of 128 sentences x 32 random tokens on both sides (4096 target
// tokens, no padding) and the MT_BENCH_MIN_TIME setting, so both time the
// same step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "model/transformer_model.hpp"

namespace mt::bench {

constexpr int kTrainSentences = 128;
constexpr int kTrainLength = 32;  // source and target positions, EOS included

// Seconds of timed steps per config (MT_BENCH_MIN_TIME, default 3).
inline double train_min_time() {
  const char* env = std::getenv("MT_BENCH_MIN_TIME");
  return env ? std::max(0.1, std::atof(env)) : 3.0;
}

// Random ids in [4, V) on both sides, every sentence full length.
inline train::Batch random_train_batch(const ModelConfig& c) {
  train::Batch b;
  b.B = kTrainSentences;
  b.S = b.T = kTrainLength;
  uint32_t x = 12345;
  auto next = [&](int vocab) { return int32_t(4 + ((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(vocab - 4)); };
  const size_t n = size_t(b.B) * kTrainLength;
  b.source.resize(n);
  b.target_input.resize(n);
  b.target_output.resize(n);
  for (size_t i = 0; i < n; ++i) {
    b.source[i] = next(c.source_vocab_size);
    b.target_output[i] = next(c.target_vocab_size);
  }
  for (int s = 0; s < b.B; ++s) {  // labels shifted right behind BOS: teacher forcing
    b.target_input[size_t(s) * kTrainLength] = c.bos_id;
    for (int t = 1; t < kTrainLength; ++t)
      b.target_input[size_t(s) * kTrainLength + t] = b.target_output[size_t(s) * kTrainLength + t - 1];
  }
  b.source_lengths.assign(size_t(b.B), kTrainLength);
  b.target_lengths.assign(size_t(b.B), kTrainLength);
  b.target_tokens = b.B * kTrainLength;
  return b;
}

// The step's matrix products in FLOPs (2 per multiply-add), counted as a
// dense implementation computes them (bench/torch_train_step.py: full
// attention score matrices, causal or not): every product of the forward,
// and in the backward the gradients of both of its operands, 3x the
// forward. Softmax, LayerNorm, Adam and the rest are not counted, so a step
// can never take less than this over the FMA peak (bench/fma_peak.hpp).
inline double train_step_gemm_flops(const ModelConfig& c) {
  const double B = kTrainSentences, S = kTrainLength, T = kTrainLength;
  const double d = c.d_model, ff = c.d_ff, Ns = B * S, Nt = B * T;
  const double ffn = 2 * 2 * d * ff;                                          // per token: two linears
  const double encoder = Ns * (4 * 2 * d * d + ffn) + 2 * 2 * B * S * S * d;  // qkv, out; scores, context
  const double decoder = Nt * (4 * 2 * d * d + 2 * 2 * d * d + ffn)           // self qkv, out; cross q, out
                         + Ns * 2 * 2 * d * d                                 // cross k, v of the memory
                         + 2 * 2 * B * T * T * d + 2 * 2 * B * T * S * d;     // self and cross attention
  const double logits = Nt * 2 * d * c.target_vocab_size;
  return 3 * (c.encoder_layers * encoder + c.decoder_layers * decoder + logits);
}

}  // namespace mt::bench
