// Each op's arguments as its backward reads them, and the checks that derive
// them from the inputs: written once here for the CPU ops (autograd/*.cpp)
// and the device ops (cuda/*.cu), which differ only in how they compute.
// A check that fails throws (MT_AG_CHECK) naming the op and the shapes.
#pragma once

#include <span>
#include <variant>
#include <vector>

#include "autograd/tensor.hpp"

namespace mt::autograd {

struct SeqBatch;

// y [M, N] = a [M, K] op(b) (+ bias [N]); op(b) is b^T, b [N, K], when trans_b.
struct MatmulArgs {
  int M = 0, N = 0, K = 0;
  bool trans_b = false;
  Shape out;  // y's shape: [M, N], or x's with the last dimension N (linear)
};
// linear: x [..., K] by w [N, K] (+ b [N]).
MatmulArgs linear_args(const Shape& x, const Shape& w, const Shape* bias);
MatmulArgs matmul_args(const Shape& a, const Shape& b, bool trans_b);

// batch independent products: a [batch, M, K] by b [batch, K, N] (or [batch, N, K]).
struct BatchedMatmulArgs {
  int batch = 0, M = 0, N = 0, K = 0;
  bool trans_b = false;
};
BatchedMatmulArgs batched_matmul_args(const Shape& a, const Shape& b, bool trans_b);

// One attention call's geometry. fused_qkv: q and kv are one [rows, 3C]
// tensor (Q | K | V); else q [rows, C] and kv [rows, 2C] (K | V).
struct AttentionArgs {
  int batch = 0, query_length = 0, key_length = 0, heads = 0, channels = 0;
  bool causal = false;
  bool fused_qkv = false;

  int head_dim() const { return channels / heads; }
  int q_stride() const { return (fused_qkv ? 3 : 1) * channels; }   // row stride of the q tensor
  int kv_stride() const { return (fused_qkv ? 3 : 2) * channels; }  // and of the kv tensor
  int k_offset() const { return fused_qkv ? channels : 0; }         // column of K's head 0 in kv
  int v_offset() const { return k_offset() + channels; }            // and of V's
};
struct AttentionCall {
  AttentionArgs args;
  std::vector<int> lengths;  // query lengths [batch], then key lengths [batch]
};
AttentionCall self_attention_args(const Shape& qkv, const SeqBatch& seqs, int heads, bool causal);
AttentionCall cross_attention_args(const Shape& q, const SeqBatch& queries, const Shape& kv, const SeqBatch& keys,
                                   int heads);

// table [V, C] gathered at ids (B rows of L), times scale.
struct EmbeddingArgs {
  int rows = 0, channels = 0;
  double scale = 1.0;
};
EmbeddingArgs embedding_args(const Shape& table, std::span<const int> ids, int L, double scale);

// Label-smoothed cross-entropy over logits [N, V]; rows whose target is pad_id are skipped.
struct CrossEntropyArgs {
  int pad_id = 0;
  double label_smoothing = 0.0;
};
CrossEntropyArgs cross_entropy_args(const Shape& logits, std::span<const int> targets, int pad_id,
                                    double label_smoothing);

// y = x * factor.
struct ScaleArgs {
  double factor = 1.0;
};

// What one op recorded for its backward; std::monostate for ops that need
// nothing beyond their tensors. Backwards read theirs with std::get, which
// throws if an op was recorded with another op's arguments.
using OpArgs = std::variant<std::monostate, MatmulArgs, BatchedMatmulArgs, AttentionArgs, EmbeddingArgs,
                            CrossEntropyArgs, ScaleArgs>;

}  // namespace mt::autograd
