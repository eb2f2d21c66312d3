// The output layer and its loss as one op: cross_entropy(linear(x, w, b)),
// the same values and, for a loss seeded with 1 (as training's is), the same
// gradients bit for bit, with one [tokens, vocabulary] buffer where the two
// ops keep two (the logits and their gradient: 131 MB each in a tiny step).
// The float forward works in blocks of rows, each in a per-thread buffer:
// the block's logits, their log-sum-exp, their gradient (written over
// them), and x's gradient from it, while the block is in cache; only the
// logits' gradient is kept, packed as the GEMM reads it, for w's (a weight
// gradient sums over every row, so it waits for backward).
// double composes linear and cross_entropy (gradient checks).
#pragma once

#include <span>

#include "autograd/graph.hpp"
#include "autograd/loss.hpp"

namespace mt::autograd {

// x [..., K], w [V, K], b [V] (may be null); targets [rows of x] in [0, V)
// or pad_id (no loss, no gradient).
template <class T>
CrossEntropy<T> linear_cross_entropy(Graph<T>& g, Tensor<T>* x, Tensor<T>* w, Tensor<T>* b,
                                     std::span<const int> targets, int pad_id, double label_smoothing);

}  // namespace mt::autograd
