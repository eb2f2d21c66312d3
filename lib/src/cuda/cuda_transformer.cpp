// The GPU forward pass: transformer.cpp's order of operations, each step one
// launcher of mt/cuda_kernels.h (GEMMs through cuBLAS with the bias,
// activation and residual in their epilogue).
#include "cuda/cuda_transformer.hpp"

#include <cmath>

namespace mt::detail {

// Returns a failed launcher's status from the enclosing function.
#define MT_CUDA_TRY(expr)                        \
  do {                                           \
    const ::mt::CudaStatus mt_cuda_s_ = (expr);  \
    if (mt_cuda_s_ != 0) return mt_cuda_s_;      \
  } while (0)

CudaTransformer::CudaTransformer(const ModelConfig& config, const CudaModelWeights& weights,
                                 CublasContext* cublas, CudaStream stream, GemmMath math,
                                 const float* positions, const CudaGemmScratch& scratch)
    : config_(config), weights_(weights), cublas_(cublas), stream_(stream), math_(math), positions_(positions),
      scratch_(scratch) {}

CudaStatus CudaTransformer::linear(const float* x, int M, const CudaLinear& w, float* y, Activation act,
                                   const float* residual) {
  if (w.is_f16()) {
    return linear_f16_cuda(cublas_, x, size_t(w.k), w.f16, size_t(w.k), w.bias, residual, size_t(w.n), y,
                           size_t(w.n), M, w.n, w.k, act, scratch_.f16, size_t(w.k), stream_);
  }
  if (w.is_int8()) {
    CudaInt8Scratch scratch = scratch_.i8;
    scratch.ldq = w.i8.ld;  // rows packed at this layer's width
    scratch.ld_acc = size_t(padded_rows_i8(w.n));
    return linear_i8_cuda(cublas_, x, size_t(w.k), w.i8, w.bias, residual, size_t(w.n), y, size_t(w.n), M, w.n, w.k,
                          act, scratch, stream_);
  }
  return linear_f32_cuda(cublas_, x, size_t(w.k), w.weight, size_t(w.k), w.bias, residual, size_t(w.n), y,
                         size_t(w.n), M, w.n, w.k, act, math_, stream_);
}

// Token embeddings times sqrt(C) plus each row's position encoding.
CudaStatus CudaTransformer::embed(const CudaEmbedding& table, const int32_t* tokens, int M,
                                  const int32_t* positions, float* y) {
  const int C = config_.d_model;
  const float scale = std::sqrt(float(C));
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

CudaStatus CudaTransformer::sublayer_input(const float* x, int M, const CudaNorm& norm, float* y,
                                           const float** in) {
  *in = x;
  if (!config_.pre_norm) return 0;
  *in = y;
  return layer_norm(x, M, norm, y);
}

CudaStatus CudaTransformer::sublayer_output(float* x, int M, const CudaNorm& norm) {
  return config_.pre_norm ? 0 : layer_norm(x, M, norm, x);
}

CudaStatus CudaTransformer::encode(const CudaSources& src, const EncoderBuffers& b) {
  const int C = config_.d_model, H = config_.heads, dh = C / H, N = src.N;
  MT_CUDA_TRY(embed(weights_.source_embedding, src.tokens, N, src.positions, b.x));
  // Each sentence attends over its own tokens only: the packing is the mask.
  const CudaSequenceRows rows{src.offsets, src.lengths, 0, src.max_length};
  for (const CudaEncoderLayer& layer : weights_.encoder) {
    const float* in = nullptr;
    MT_CUDA_TRY(sublayer_input(b.x, N, layer.attention_norm, b.y, &in));
    MT_CUDA_TRY(linear(in, N, layer.qkv, b.qkv));
    CudaAttention a;
    a.q = b.qkv, a.k = b.qkv + C, a.v = b.qkv + 2 * C;
    a.q_ld = a.kv_ld = 3 * size_t(C);
    a.out = b.attn, a.out_ld = size_t(C);
    a.q_rows = a.kv_rows = rows;
    a.batch = src.B, a.heads = H, a.dh = dh;
    a.scale = 1.0f / std::sqrt(float(dh));
    a.causal_offset = -1;
    MT_CUDA_TRY(attention_f32_cuda(a, stream_));
    MT_CUDA_TRY(linear(b.attn, N, layer.out, b.x, Activation::none, b.x));
    MT_CUDA_TRY(sublayer_output(b.x, N, layer.attention_norm));

    MT_CUDA_TRY(sublayer_input(b.x, N, layer.ffn_norm, b.y, &in));
    MT_CUDA_TRY(linear(in, N, layer.ffn_0, b.hidden, config_.activation));
    MT_CUDA_TRY(linear(b.hidden, N, layer.ffn_1, b.x, Activation::none, b.x));
    MT_CUDA_TRY(sublayer_output(b.x, N, layer.ffn_norm));
  }
  if (config_.pre_norm) MT_CUDA_TRY(layer_norm(b.x, N, weights_.encoder_norm, b.x));
  return 0;
}

CudaStatus CudaTransformer::project_memory(const float* memory, int N, float* cross_kv, size_t stride) {
  for (size_t l = 0; l < weights_.decoder.size(); ++l) {
    MT_CUDA_TRY(linear(memory, N, weights_.decoder[l].cross_kv, cross_kv + l * stride));
  }
  return 0;
}

CudaStatus CudaTransformer::decode_step(const int32_t* tokens, int R, const CudaDecoderState& state,
                                        const DecoderBuffers& b, float* logits) {
  const int C = config_.d_model, H = config_.heads, dh = C / H;
  const float scale = 1.0f / std::sqrt(float(dh));
  MT_CUDA_TRY(embed(weights_.target_embedding, tokens, R, state.positions, b.x));
  for (size_t l = 0; l < weights_.decoder.size(); ++l) {
    const CudaDecoderLayer& layer = weights_.decoder[l];
    // Causal self-attention: this step's key and value join the cache, then
    // the query attends over positions [0, t] (cache_lengths: t + 1).
    const float* in = nullptr;
    MT_CUDA_TRY(sublayer_input(b.x, R, layer.self_norm, b.y, &in));
    MT_CUDA_TRY(linear(in, R, layer.qkv, b.qkv));
    float* cache = state.self_cache + l * state.self_cache_stride;
    CudaAttention self;
    self.q = b.qkv, self.q_ld = 3 * size_t(C);
    self.k = cache, self.v = cache + C, self.kv_ld = 2 * size_t(C);
    self.out = b.attn, self.out_ld = size_t(C);
    self.q_rows = {nullptr, nullptr, 1, 1};
    self.kv_rows = {nullptr, state.cache_lengths, state.cache_capacity, state.cache_capacity};
    self.batch = R, self.heads = H, self.dh = dh, self.scale = scale;
    self.append_k = b.qkv + C, self.append_v = b.qkv + 2 * C, self.append_ld = 3 * size_t(C);
    MT_CUDA_TRY(attention_f32_cuda(self, stream_));
    MT_CUDA_TRY(linear(b.attn, R, layer.self_out, b.x, Activation::none, b.x));
    MT_CUDA_TRY(sublayer_output(b.x, R, layer.self_norm));

    // Cross-attention: the rows of sentence b / rows_per_source of the memory.
    MT_CUDA_TRY(sublayer_input(b.x, R, layer.cross_norm, b.y, &in));
    MT_CUDA_TRY(linear(in, R, layer.cross_q, b.q));
    const float* kv = state.cross_kv + l * state.cross_kv_stride;
    CudaAttention cross;
    cross.q = b.q, cross.q_ld = size_t(C);
    cross.k = kv, cross.v = kv + C, cross.kv_ld = 2 * size_t(C);
    cross.out = b.attn, cross.out_ld = size_t(C);
    cross.q_rows = {nullptr, nullptr, 1, 1};
    cross.kv_rows = {state.sources.offsets, state.sources.lengths, 0, state.sources.max_length};
    cross.batch = R, cross.heads = H, cross.dh = dh, cross.scale = scale;
    cross.kv_group = state.rows_per_source;
    MT_CUDA_TRY(attention_f32_cuda(cross, stream_));
    MT_CUDA_TRY(linear(b.attn, R, layer.cross_out, b.x, Activation::none, b.x));
    MT_CUDA_TRY(sublayer_output(b.x, R, layer.cross_norm));

    MT_CUDA_TRY(sublayer_input(b.x, R, layer.ffn_norm, b.y, &in));
    MT_CUDA_TRY(linear(in, R, layer.ffn_0, b.hidden, config_.activation));
    MT_CUDA_TRY(linear(b.hidden, R, layer.ffn_1, b.x, Activation::none, b.x));
    MT_CUDA_TRY(sublayer_output(b.x, R, layer.ffn_norm));
  }
  const float* out = b.x;
  if (config_.pre_norm) {
    MT_CUDA_TRY(layer_norm(b.x, R, weights_.decoder_norm, b.y));
    out = b.y;
  }
  return linear(out, R, weights_.output, logits);
}

}  // namespace mt::detail
