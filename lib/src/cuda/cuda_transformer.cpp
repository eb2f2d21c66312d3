// The GPU forward pass: transformer_layers.hpp's layer sequence (the CPU's),
// each operation one launcher of mt/cuda_kernels.h (GEMMs through cuBLAS with
// the bias, activation and residual in their epilogue).
#include "cuda/cuda_transformer.hpp"

#include <cmath>

#include "transformer/transformer_layers.hpp"

namespace mt::detail {

CudaTransformer::CudaTransformer(const ModelConfig& config, const CudaModelWeights& weights, CublasContext* cublas,
                                 CudaStream stream, GemmMath math, const float* positions,
                                 const CudaGemmScratch& scratch)
    : config_(config),
      weights_(weights),
      cublas_(cublas),
      stream_(stream),
      math_(math),
      positions_(positions),
      scratch_(scratch) {}

CudaStatus CudaTransformer::linear(const float* x, int M, const CudaLinear& w, float* y, Activation act,
                                   const float* residual) {
  if (w.is_f16()) {
    return linear_f16_cuda(cublas_, x, size_t(w.k), w.f16, size_t(w.k), w.bias, residual, size_t(w.n), y, size_t(w.n),
                           M, w.n, w.k, act, scratch_.f16, size_t(w.k), stream_);
  }
  if (w.is_int8()) {
    CudaInt8Scratch scratch = scratch_.i8;
    scratch.ldq = w.i8.ld;  // rows packed at this layer's width
    scratch.ld_acc = size_t(padded_rows_i8(w.n));
    return linear_i8_cuda(cublas_, x, size_t(w.k), w.i8, w.bias, residual, size_t(w.n), y, size_t(w.n), M, w.n, w.k,
                          act, scratch, stream_);
  }
  return linear_f32_cuda(cublas_, x, size_t(w.k), w.weight, size_t(w.k), w.bias, residual, size_t(w.n), y, size_t(w.n),
                         M, w.n, w.k, act, math_, stream_);
}

// Token embeddings times sqrt(C) plus each row's position encoding.
CudaStatus CudaTransformer::embed(const CudaEmbedding& table, const int32_t* tokens, int M, const int32_t* positions,
                                  float* y) {
  const int C = config_.d_model;
  const float scale = config_.embedding_multiplier();
  if (table.f16 != nullptr) {
    return embed_f16_cuda(table.f16, C, tokens, M, scale, positions_, positions, 0, y, stream_);
  }
  if (table.i8 != nullptr) {
    return embed_i8_cuda(table.i8, table.scales, C, tokens, M, scale, positions_, positions, 0, y, stream_);
  }
  return embed_f32_cuda(table.f32, C, tokens, M, scale, positions_, positions, 0, y, stream_);
}

CudaStatus CudaTransformer::layer_norm(const float* x, int M, const CudaNorm& norm, float* y) {
  return layer_norm_f32_cuda(x, nullptr, nullptr, norm.gamma, norm.beta, y, M, config_.d_model,
                             config_.layer_norm_epsilon, stream_);
}

// transformer_layers.hpp's operations on the GPU for one call: the encoder's
// sources, or a decode step's state (R rows, each at its state.positions).
// Every one enqueues on the session's stream.
struct CudaTransformer::Ops {
  CudaTransformer& tr;
  const CudaSources* sources = nullptr;     // encoder
  const CudaDecoderState* state = nullptr;  // decoder

  CudaStatus linear(const float* x, int M, const CudaLinear& w, float* y, Activation act, const float* residual) {
    return tr.linear(x, M, w, y, act, residual);
  }
  CudaStatus layer_norm(const float* x, int M, const CudaNorm& norm, float* y) { return tr.layer_norm(x, M, norm, y); }
  CudaStatus output(const float* x, int M, const CudaLinear& w, float* logits) {
    return linear(x, M, w, logits, Activation::none, nullptr);
  }
  // The attention every call shares: heads, head size, scale, output rows.
  CudaAttention attention(float* out) const {
    const int C = tr.config_.d_model, H = tr.config_.heads;
    CudaAttention a;
    a.out = out, a.out_ld = size_t(C);
    a.heads = H, a.dh = C / H;
    a.scale = 1.0f / std::sqrt(float(C / H));
    return a;
  }

  // Each sentence attends over its own tokens only: the packing is the mask.
  CudaStatus encoder_attention(const float* qkv, float* out) {
    const int C = tr.config_.d_model;
    const CudaSequenceRows rows{sources->offsets, sources->lengths, 0, sources->max_length};
    CudaAttention a = attention(out);
    a.q = qkv, a.k = qkv + C, a.v = qkv + 2 * C;
    a.q_ld = a.kv_ld = 3 * size_t(C);
    a.q_rows = a.kv_rows = rows;
    a.batch = sources->B;
    a.causal_offset = -1;
    return attention_f32_cuda(a, tr.stream_);
  }

  // This step's key and value join the cache, then the query attends over
  // positions [0, t] (cache_lengths: t + 1).
  CudaStatus self_attention(size_t layer, int R, const float* qkv, float* out) {
    const int C = tr.config_.d_model;
    float* cache = state->self_cache + layer * state->self_cache_stride;
    CudaAttention a = attention(out);
    a.q = qkv, a.q_ld = 3 * size_t(C);
    a.k = cache, a.v = cache + C, a.kv_ld = 2 * size_t(C);
    a.q_rows = {nullptr, nullptr, 1, 1};
    a.kv_rows = {nullptr, state->cache_lengths, state->cache_capacity, state->cache_capacity};
    a.batch = R;
    a.append_k = qkv + C, a.append_v = qkv + 2 * C, a.append_ld = 3 * size_t(C);
    return attention_f32_cuda(a, tr.stream_);
  }

  // The rows of sentence r / rows_per_source of the memory.
  CudaStatus cross_attention(size_t layer, int R, const float* q, float* out) {
    const int C = tr.config_.d_model;
    const float* kv = state->cross_kv + layer * state->cross_kv_stride;
    CudaAttention a = attention(out);
    a.q = q, a.q_ld = size_t(C);
    a.k = kv, a.v = kv + C, a.kv_ld = 2 * size_t(C);
    a.q_rows = {nullptr, nullptr, 1, 1};
    a.kv_rows = {state->sources.offsets, state->sources.lengths, 0, state->sources.max_length};
    a.batch = R;
    a.kv_group = state->rows_per_source;
    return attention_f32_cuda(a, tr.stream_);
  }
};

CudaStatus CudaTransformer::encode(const CudaSources& src, const EncoderBuffers& b) {
  if (const CudaStatus s = embed(weights_.source_embedding, src.tokens, src.N, src.positions, b.x)) return s;
  Ops ops{*this, &src};
  return encoder_layers(ops, config_, weights_, src.N, b);
}

CudaStatus CudaTransformer::project_memory(const float* memory, int N, float* cross_kv, size_t stride) {
  Ops ops{*this};
  return project_memory_layers(ops, weights_, memory, N, cross_kv, stride);
}

CudaStatus CudaTransformer::decode_step(const int32_t* tokens, int R, const CudaDecoderState& state,
                                        const DecoderBuffers& b, float* logits) {
  if (const CudaStatus s = embed(weights_.target_embedding, tokens, R, state.positions, b.x)) return s;
  Ops ops{*this, nullptr, &state};
  return decoder_layers(ops, config_, weights_, R, b, logits);
}

}  // namespace mt::detail
