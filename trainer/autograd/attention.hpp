// Masked multi-head scaled dot-product attention (Vaswani et al. 2017, eq. 1)
// as one op, reading heads straight from the runtime's projection layouts:
// the fused self-attention QKV [rows, 3C] (columns Q | K | V, head h at
// h * dh within each) and cross-attention's Q [rows, C] and KV [rows, 2C]
// (columns K | V). Scale 1 / sqrt(dh).
//
// Batches are B sequences padded to a common length L: row b * L + t is
// position t of sequence b, valid while t < lengths[b]. Keys past a
// sequence's length are masked out; query rows past it output zeros and
// pass no gradient (their results feed only padding, which the loss ignores).
#pragma once

#include <span>

#include "autograd/graph.hpp"

namespace mt::autograd {

struct SeqBatch {
  int batch = 0;                 // B
  int length = 0;                // L: rows per sequence
  std::span<const int> lengths;  // [B] valid positions of each sequence; empty: all L
};

// qkv [B*L, 3C] -> [B*L, C]. Query t of sequence b attends to keys
// j < lengths[b], and j <= t when causal (the decoder).
template <class T>
Tensor<T>* self_attention(Graph<T>& g, Tensor<T>* qkv, const SeqBatch& seqs, int heads, bool causal);

// q [B*Lq, C] (the decoder rows), kv [B*Lk, 2C] (the encoder memory
// projected) -> [B*Lq, C]. Query rows of sequence b attend to memory rows
// j < keys.lengths[b]; rows past queries.lengths[b] output zeros.
template <class T>
Tensor<T>* cross_attention(Graph<T>& g, Tensor<T>* q, const SeqBatch& queries, Tensor<T>* kv, const SeqBatch& keys,
                           int heads);

}  // namespace mt::autograd
