// The Transformer forward pass on a GPU, as transformer.hpp on the CPU (the
// same layer sequence, transformer_layers.hpp): the encoder over a packed
// batch, the decoder one step at a time over a KV cache. Every pointer is
// device memory of the session; every call enqueues on the session's stream
// and returns at once (faults show at the next sync).
// Shapes as transformer.hpp: N packed source tokens, R decoder rows, C, F, V.
#pragma once

#include <cstdint>

#include "cuda/cuda_weights.hpp"
#include "mt/cuda_kernels.h"
#include "transformer/transformer.hpp"  // EncoderBuffers, DecoderBuffers: here device pointers

namespace mt::detail {

// The packed source batch on the device: sentence b is rows
// [offsets[b], offsets[b] + lengths[b]) of the encoder's matrices.
struct CudaSources {
  const int32_t* tokens = nullptr;     // [N]
  const int32_t* positions = nullptr;  // [N]: each token's position in its sentence
  const int32_t* offsets = nullptr;    // [B]
  const int32_t* lengths = nullptr;    // [B]
  int B = 0, N = 0;
  int max_length = 0;  // longest sentence of the batch
};

struct CudaDecoderState {
  float* self_cache;         // L x [R, T, 2C]: keys and values of past steps (k | v per position)
  size_t self_cache_stride;  // floats between layers
  int cache_capacity;        // T
  const float* cross_kv;     // L x [N, 2C]
  size_t cross_kv_stride;    // floats between layers
  CudaSources sources;       // the memory's rows per sentence
  int rows_per_source;       // decoder rows per sentence (the beam size)
  // Each row's position t and its cache's rows t + 1, on the device rather
  // than arguments so that a captured step replays for every t.
  const int32_t* positions;      // [R]
  const int32_t* cache_lengths;  // [R]
};

// Room for the largest layer's converted inputs (see CudaPlan): int8
// layers' quantized rows and sums, fp16 layers' rows in half [rows, k].
struct CudaGemmScratch {
  CudaInt8Scratch i8;  // ldq and ld_acc are set per layer
  uint16_t* f16 = nullptr;
};

class CudaTransformer {
 public:
  CudaTransformer(const ModelConfig& config, const CudaModelWeights& weights, CublasContext* cublas, CudaStream stream,
                  GemmMath math, const float* positions, const CudaGemmScratch& scratch);

  // Encodes the batch; the memory ends in buffers.x.
  CudaStatus encode(const CudaSources& sources, const EncoderBuffers& buffers);
  // Every decoder layer's cross-attention keys and values of the memory [N, C].
  CudaStatus project_memory(const float* memory, int N, float* cross_kv, size_t cross_kv_stride);
  // One step of R rows at their state.positions: appends to the KV cache,
  // logits [R, V]. Moving the positions on is the caller's (decode_step_end_cuda).
  CudaStatus decode_step(const int32_t* tokens, int R, const CudaDecoderState& state, const DecoderBuffers& buffers,
                         float* logits);

 private:
  struct Ops;  // the operations transformer_layers.hpp runs, for one call

  CudaStatus linear(const float* x, int M, const CudaLinear& w, float* y, Activation act, const float* residual);
  CudaStatus embed(const CudaEmbedding& table, const int32_t* tokens, int M, const int32_t* positions, float* y);
  CudaStatus layer_norm(const float* x, int M, const CudaNorm& norm, float* y);

  const ModelConfig& config_;
  const CudaModelWeights& weights_;
  CublasContext* cublas_;
  CudaStream stream_;
  GemmMath math_;
  const float* positions_;  // [P, C] sinusoidal encodings
  CudaGemmScratch scratch_;
};

}  // namespace mt::detail
