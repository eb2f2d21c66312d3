#include "transformer/transformer.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "support/stage_profile.hpp"
#include "transformer/transformer_layers.hpp"

namespace mt::detail {

std::vector<double> position_wavelengths(int C) {
  std::vector<double> wavelengths;
  for (int i = 0; i < C; i += 2) wavelengths.push_back(std::pow(10000.0, double(i) / double(C)));
  return wavelengths;
}

void fill_position_rows(float* positions, int begin, int end, int C, const double* wavelengths) {
  // Computed in double so every platform gets the same table.
  for (int p = begin; p < end; ++p) {
    float* row = positions + size_t(p) * C;
    for (int i = 0; i < C; i += 2) {
      const double angle = double(p) / wavelengths[i / 2];
      row[i] = float(std::sin(angle));
      if (i + 1 < C) row[i + 1] = float(std::cos(angle));
    }
  }
}

void fill_positions(float* positions, int P, int C) {
  fill_position_rows(positions, 0, P, C, position_wavelengths(C).data());
}

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, const KernelTable& kernels,
                         ThreadPool& pool, float* positions, int position_rows, float* attention_scratch,
                         int scratch_stride, QuantizedRows quantized)
    : config_(config),
      weights_(weights),
      k_(kernels),
      pool_(pool),
      positions_(positions),
      position_rows_(position_rows),
      wavelengths_(position_wavelengths(config.d_model)),
      scratch_(attention_scratch),
      scratch_stride_(scratch_stride),
      quantized_(quantized) {}

// y[M, n] = act(x[M, k] W^T + b) (+ residual), split over the pool by panels of
// output columns: each element is computed by one thread in one fixed order,
// so the result does not depend on the thread count.
void Transformer::linear(const float* x, int M, const Linear& w, float* y, Activation act, const float* residual) {
  if (observer_ != nullptr) observer_->observe(w, x, M, w.k);
  if (w.is_int8()) return linear_int8(x, M, w, y, act, residual);
  const int panels = int(packed_panels(w.n));
  const int threads = pool_.size();
  const int tasks = threads == 1 ? 1 : std::min(panels, threads * 4);
  pool_.parallel_for(tasks, [&](int task, int) {
    const int p0 = int(int64_t(panels) * task / tasks), p1 = int(int64_t(panels) * (task + 1) / tasks);
    if (p0 == p1) return;
    const int n_begin = p0 * kPanelWidth, n_end = std::min(w.n, p1 * kPanelWidth);
    k_.gemm_f32(x, size_t(w.k), w.weight, w.bias, residual, size_t(w.n), y, size_t(w.n), M, w.n, w.k, n_begin, n_end,
                act);
  });
}

// int8 layer: quantize the input rows (a per-row range, or the layer's
// calibrated scale), then the u8 x s8 GEMM with the dequantizing epilogue,
// split by panels as above. Rows go through the session's quantized-row
// buffer in blocks of its capacity.
void Transformer::linear_int8(const float* x, int M, const Linear& w, float* y, Activation act, const float* residual) {
  const int panels = int(packed_panels(w.n));
  const int threads = pool_.size();
  const int tasks = threads == 1 ? 1 : std::min(panels, threads * 4);
  const size_t ld = size_t(w.n);
  for (int m0 = 0; m0 < M; m0 += quantized_.rows) {
    const int rows = std::min(quantized_.rows, M - m0);
    const float* xb = x + size_t(m0) * w.k;
    // Quantizing is a pass over the input, split by rows when there are many.
    const int qtasks = threads == 1 || rows < 4 * threads ? 1 : threads;
    {
      MT_PROFILE_STAGE(quantize_inputs);
      pool_.parallel_for(qtasks, [&](int task, int) {
        const int r0 = rows * task / qtasks, r1 = rows * (task + 1) / qtasks;
        k_.quantize_rows_u8(xb + size_t(r0) * w.k, size_t(w.k), r1 - r0, w.k,
                            quantized_.data + size_t(r0) * quantized_.stride, quantized_.stride, quantized_.scales + r0,
                            quantized_.zeros + r0, w.input_scale, w.input_zero);
      });
    }
    float* yb = y + size_t(m0) * ld;
    const float* rb = residual ? residual + size_t(m0) * ld : nullptr;
    // Calibrated layers carry their zero-point compensation in the bias.
    const int32_t* zeros = w.input_scale > 0.0f ? nullptr : quantized_.zeros;
    pool_.parallel_for(tasks, [&](int task, int) {
      const int p0 = int(int64_t(panels) * task / tasks), p1 = int(int64_t(panels) * (task + 1) / tasks);
      if (p0 == p1) return;
      const int n_begin = p0 * kPanelWidth, n_end = std::min(w.n, p1 * kPanelWidth);
      k_.gemm_u8s8(quantized_.data, quantized_.stride, w.weight_i8, w.row_sums, w.scales, quantized_.scales, zeros,
                   w.bias, rb, ld, yb, ld, rows, w.n, w.k, n_begin, n_end, act);
    });
  }
}

void Transformer::layer_norm(const float* x, int M, const Norm& norm, float* y) {
  MT_PROFILE_STAGE(layer_norm);
  const int C = config_.d_model;
  const float eps = config_.layer_norm_epsilon;
  // Rows are independent: split them over the pool when there are enough.
  const int tasks = M < 16 ? 1 : pool_.size();
  pool_.parallel_for(tasks, [&](int task, int) {
    for (int m = M * task / tasks; m < M * (task + 1) / tasks; ++m) {
      k_.layer_norm_f32(x + size_t(m) * C, norm.gamma, norm.beta, y + size_t(m) * C, C, eps);
    }
  });
}

// Token embedding x sqrt(C) (or the config's embedding_scale) plus the
// encoding of `position` (section 3.4): the model's stored row, or the
// sinusoid, computed the first time a position is embedded.
void Transformer::embed(const Embedding& table, int32_t token, int position, float* x) {
  const int C = config_.d_model;
  const float* pe = nullptr;
  if (weights_.position_table != nullptr) {
    pe = weights_.position_table + size_t(position) * C;  // position < max_positions: the session's limits
  } else {
    assert(position < position_rows_);
    if (position >= positions_filled_) {
      fill_position_rows(positions_, positions_filled_, position + 1, C, wavelengths_.data());
      positions_filled_ = position + 1;
    }
    pe = positions_ + size_t(position) * C;
  }
  if (table.i8 != nullptr) {
    k_.embed_i8(table.i8, table.scales, C, token, config_.embedding_multiplier(), pe, x);
  } else {
    k_.embed_f32(table.f32, C, token, config_.embedding_multiplier(), pe, x);
  }
}

// transformer_layers.hpp's operations on the CPU for one call: the encoder's
// packing, or the decoder's state and rows (incremental: M rows at position
// t, each over its cache [0, t]; full: sequences of T rows, each causal over
// its own). Attention runs one (row or sentence, head) per task of the pool.
struct Transformer::Ops {
  Transformer& tr;
  const int* offsets = nullptr;  // encoder: sentence b is rows [offsets[b], offsets[b + 1])
  int B = 0;
  const DecoderState* state = nullptr;
  int t = 0, T = 1;
  bool incremental = true;

  int linear(const float* x, int M, const Linear& w, float* y, Activation act, const float* residual) {
    tr.linear(x, M, w, y, act, residual);
    return 0;
  }
  int layer_norm(const float* x, int M, const Norm& norm, float* y) {
    tr.layer_norm(x, M, norm, y);
    return 0;
  }
  // The output projection: the model's, or the state's shortlisted columns.
  int output(const float* x, int M, const Linear& w, float* logits) {
    const Linear& layer = incremental && state != nullptr && state->output != nullptr ? *state->output : w;
    tr.linear(x, M, layer, logits, Activation::none, nullptr);
    return 0;
  }
  int head_dim() const { return tr.config_.d_model / tr.config_.heads; }
  float scale() const { return 1.0f / std::sqrt(float(head_dim())); }
  float* scratch(int thread) const { return tr.scratch_ + size_t(thread) * tr.scratch_stride_; }

  // Each sentence attends over its own tokens only: the padding mask is the
  // packing itself.
  int encoder_attention(const float* qkv, float* out) {
    const int C = tr.config_.d_model, H = tr.config_.heads, dh = head_dim();
    tr.pool_.parallel_for(B * H, [&](int task, int thread) {
      const int s = task / H, h = task % H;
      const int len = offsets[s + 1] - offsets[s];
      const float* q = qkv + size_t(offsets[s]) * 3 * C + size_t(h) * dh;
      tr.k_.attention_f32(q, 3 * size_t(C), q + C, q + 2 * C, 3 * size_t(C),
                          out + size_t(offsets[s]) * C + size_t(h) * dh, size_t(C), len, len, dh, scale(), -1,
                          scratch(thread));
    });
    return 0;
  }

  int self_attention(size_t layer, int M, const float* qkv, float* out) {
    const int C = tr.config_.d_model, H = tr.config_.heads, dh = head_dim();
    if (!incremental) {
      tr.pool_.parallel_for(M / T * H, [&](int task, int thread) {
        const int s = task / H, h = task % H;
        const float* q = qkv + size_t(s) * T * 3 * C + size_t(h) * dh;
        tr.k_.attention_f32(q, 3 * size_t(C), q + C, q + 2 * C, 3 * size_t(C), out + size_t(s) * T * C + size_t(h) * dh,
                            size_t(C), T, T, dh, scale(), 0, scratch(thread));
      });
      return 0;
    }
    // This step's keys and values join each row's cache at position t.
    const size_t cache_row = size_t(state->cache_capacity) * 2 * C;
    float* cache = state->self_cache + layer * state->self_cache_stride;
    auto row_cache = [&](int r) {
      return cache + size_t(state->row_slot != nullptr ? state->row_slot[r] : r) * cache_row;
    };
    for (int r = 0; r < M; ++r) {
      std::memcpy(row_cache(r) + size_t(t) * 2 * C, qkv + size_t(r) * 3 * C + C, 2 * size_t(C) * sizeof(float));
    }
    tr.pool_.parallel_for(M * H, [&](int task, int thread) {
      const int r = task / H, h = task % H;
      const float* k = row_cache(r) + size_t(h) * dh;
      tr.k_.attention_f32(qkv + size_t(r) * 3 * C + size_t(h) * dh, 3 * size_t(C), k, k + C, 2 * size_t(C),
                          out + size_t(r) * C + size_t(h) * dh, size_t(C), 1, t + 1, dh, scale(), -1, scratch(thread));
    });
    return 0;
  }

  int cross_attention(size_t layer, int M, const float* q, float* out) {
    const int C = tr.config_.d_model, H = tr.config_.heads, dh = head_dim();
    const int sequences = incremental ? M : M / T, queries = incremental ? 1 : T;
    const float* kv = state->cross_kv + layer * state->cross_kv_stride;
    const auto source_of = [&](int s) {
      return state->row_source != nullptr ? state->row_source[s] : s / state->rows_per_source;
    };
    const bool align = incremental && state->alignment != nullptr && int(layer) == state->alignment_layer;
    const size_t S = size_t(state->alignment_columns);
    tr.pool_.parallel_for(sequences * H, [&](int task, int thread) {
      const int s = task / H, h = task % H;
      const int begin = state->source_offsets[source_of(s)];
      const int len = state->source_offsets[source_of(s) + 1] - begin;
      const float* k = kv + size_t(begin) * 2 * C + size_t(h) * dh;
      tr.k_.attention_f32(q + size_t(s) * queries * C + size_t(h) * dh, size_t(C), k, k + C, 2 * size_t(C),
                          out + size_t(s) * queries * C + size_t(h) * dh, size_t(C), queries, len, dh, scale(), -1,
                          scratch(thread));
      // The kernel leaves the query's weights in the scratch (kernels.h).
      if (align) std::memcpy(state->alignment_heads + (size_t(s) * H + h) * S, scratch(thread), size_t(len) * sizeof(float));
    });
    if (align) {
      for (int s = 0; s < sequences; ++s) {
        const int len = state->source_offsets[source_of(s) + 1] - state->source_offsets[source_of(s)];
        float* row = state->alignment + size_t(state->alignment_row != nullptr ? state->alignment_row[s] : s) *
                                            state->alignment_stride;
        const float* heads = state->alignment_heads + size_t(s) * H * S;
        for (int j = 0; j < len; ++j) {
          float sum = 0.0f;
          for (int h = 0; h < H; ++h) sum += heads[size_t(h) * S + size_t(j)];
          row[j] = sum / float(H);
        }
      }
    }
    return 0;
  }
};

void Transformer::encode(const int32_t* tokens, const int* offsets, int B, const EncoderBuffers& b) {
  MT_PROFILE_STAGE(encoder);
  const int C = config_.d_model;
  for (int s = 0; s < B; ++s) {
    for (int i = offsets[s]; i < offsets[s + 1]; ++i) {
      embed(weights_.source_embedding, tokens[i], i - offsets[s], b.x + size_t(i) * C);
    }
  }
  Ops ops{*this, offsets, B};
  encoder_layers(ops, config_, weights_, offsets[B], b);
}

void Transformer::project_memory(const float* memory, int N, float* cross_kv, size_t stride) {
  Ops ops{*this};
  project_memory_layers(ops, weights_, memory, N, cross_kv, stride);
}

void Transformer::decode_step(const int32_t* tokens, int R, int t, const DecoderState& state, const DecoderBuffers& b,
                              float* logits) {
  {
    MT_PROFILE_STAGE(embedding);
    for (int r = 0; r < R; ++r) {
      embed(weights_.target_embedding, tokens[r], t, b.x + size_t(r) * config_.d_model);
    }
  }
  Ops ops{*this, nullptr, 0, &state, t, 1, true};
  decoder_layers(ops, config_, weights_, R, b, logits);
}

void Transformer::decode_full(const int32_t* tokens, int R, int T, const DecoderState& state, const DecoderBuffers& b,
                              float* logits) {
  for (int m = 0; m < R * T; ++m) {
    embed(weights_.target_embedding, tokens[m], m % T, b.x + size_t(m) * config_.d_model);
  }
  Ops ops{*this, nullptr, 0, &state, 0, T, false};
  decoder_layers(ops, config_, weights_, R * T, b, logits);
}

}  // namespace mt::detail
