// The Transformer forward pass on the CPU, on a session's buffers: the
// encoder over a batch of packed sentences, the decoder one step at a time
// over a KV cache, and the decoder over whole prefixes (the reference the
// incremental one is tested against). The layer sequence is
// transformer_layers.hpp's, shared with the GPU (cuda/cuda_transformer.hpp);
// this class is its CPU operations. Shapes: B sentences, N = packed source
// tokens, R decoder rows, C = d_model, F = d_ff, V = target vocabulary, H
// heads, L layers.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_weights.hpp"
#include "mt/kernels.h"
#include "mt/model.hpp"
#include "support/thread_pool.hpp"
#include "transformer/transformer_buffers.hpp"  // EncoderBuffers, DecoderBuffers: the caller's

namespace mt::detail {

// Where the decoder's attention reads its keys and values.
struct DecoderState {
  float* self_cache;          // L x [R, T, 2C]: keys and values of past steps (k | v per position)
  size_t self_cache_stride;   // floats between layers in self_cache
  int cache_capacity;         // T: positions per row in self_cache
  const float* cross_kv;      // L x [N_cap, 2C]: encoder memory projected once per source
  size_t cross_kv_stride;     // floats between layers in cross_kv (N_cap * 2C)
  const int* source_offsets;  // [B + 1]: rows of sentence b in the memory
  int rows_per_source;        // decoder rows per sentence (the beam size)
  // Incremental steps may run a subset of the rows (the search drops finished
  // sentences and dead beams): row i then appends to cache row row_slot[i]
  // and attends over sentence row_source[i]. Null: row i is slot i, sentence
  // i / rows_per_source.
  const int* row_slot = nullptr;
  const int* row_source = nullptr;
  // Word alignments (SessionOptions::alignments), incremental steps only: at
  // decoder layer alignment_layer, row r's cross-attention weights averaged
  // over the heads (summed in head order, so the same in any batch and on
  // any thread) go to alignment + alignment_row[r] * alignment_stride (null
  // map: r), one float per token of its source. alignment_heads: [R, heads,
  // alignment_columns] scratch.
  float* alignment = nullptr;
  size_t alignment_stride = 0;
  const int* alignment_row = nullptr;
  int alignment_layer = -1;
  float* alignment_heads = nullptr;
  int alignment_columns = 0;
  // Incremental steps: the output projection to use instead of the model's
  // (a vocabulary shortlist's columns, session_shortlist.cpp); logits are
  // then [R, output->n].
  const Linear* output = nullptr;
};

// Sees the input of every linear layer before it is multiplied (calibration
// in quantize/ collects activation statistics through this).
class LinearObserver {
 public:
  virtual ~LinearObserver() = default;
  // x: [M, K] row-major, the input of layer weights.linear_names[layer.index].
  virtual void observe(const Linear& layer, const float* x, int M, int K) = 0;
};

// Where int8 layers quantize their input rows: up to `rows` rows of
// padded_k_i8(ModelWeights::max_int8_k) bytes, with a scale and zero point each.
struct QuantizedRows {
  uint8_t* data = nullptr;
  float* scales = nullptr;
  int32_t* zeros = nullptr;
  size_t stride = 0;  // bytes per row
  int rows = 0;
};

class Transformer {
 public:
  Transformer(const ModelConfig& config, const ModelWeights& weights, const KernelTable& kernels, ThreadPool& pool,
              float* positions, int position_rows, float* attention_scratch, int scratch_stride,
              QuantizedRows quantized = {});

  void set_observer(LinearObserver* observer) { observer_ = observer; }

  // Encodes B sentences packed back to back: sentence b is tokens[offsets[b], offsets[b+1]).
  // Leaves the memory in buffers.x.
  void encode(const int32_t* tokens, const int* offsets, int B, const EncoderBuffers& buffers);

  // Projects the memory [N, C] into every decoder layer's cross-attention keys and values.
  void project_memory(const float* memory, int N, float* cross_kv, size_t cross_kv_stride);

  // One decoding step at position t for R rows: appends to the KV cache and
  // writes logits [R, V].
  void decode_step(const int32_t* tokens, int R, int t, const DecoderState& state, const DecoderBuffers& buffers,
                   float* logits);

  // The decoder over whole prefixes, recomputed from scratch with a causal
  // mask: R sequences of T tokens, rows r * T + t, logits [R * T, V].
  // Buffers hold R * T rows; state.self_cache is unused.
  void decode_full(const int32_t* tokens, int R, int T, const DecoderState& state, const DecoderBuffers& buffers,
                   float* logits);

 private:
  struct Ops;  // the operations transformer_layers.hpp runs, for one call

  void linear(const float* x, int M, const Linear& w, float* y, Activation act, const float* residual);
  void linear_int8(const float* x, int M, const Linear& w, float* y, Activation act, const float* residual);
  void layer_norm(const float* x, int M, const Norm& norm, float* y);
  void embed(const Embedding& table, int32_t token, int position, float* x);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  const KernelTable& k_;
  ThreadPool& pool_;
  // [P, C] sinusoidal encodings, rows filled the first time a position is
  // embedded: a session's creation computes none, and rows past the longest
  // sentence never are.
  float* positions_;
  [[maybe_unused]] int position_rows_;  // read by an assert
  int positions_filled_ = 0;
  std::vector<double> wavelengths_;
  float* scratch_;  // per thread: scratch_stride floats
  int scratch_stride_;
  QuantizedRows quantized_;
  LinearObserver* observer_ = nullptr;
};

// Sinusoidal position encodings of Vaswani et al. 2017 (section 3.5):
// PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)).
void fill_positions(float* positions, int P, int C);
// The wavelengths 10000^(2i/C), (C + 1) / 2 of them, and rows [begin, end)
// of the table from them: the same floats as fill_positions.
std::vector<double> position_wavelengths(int C);
void fill_position_rows(float* positions, int begin, int end, int C, const double* wavelengths);

}  // namespace mt::detail
