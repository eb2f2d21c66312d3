// Linear layers and matrix products, each a forward and a backward.
// Shapes: M rows (all leading dimensions of x flattened), K inputs, N outputs.
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y[..., N] = x[..., K] W[N, K]^T + b[N]: the runtime's linear (weights are
// [out, in] as in model_spec.hpp). b may be null.
template <class T>
Tensor<T>* linear(Graph<T>& g, Tensor<T>* x, Tensor<T>* w, Tensor<T>* b = nullptr);

// relu(linear(x, w, b)) as one op, the same values bit for bit: the GEMM
// applies the ReLU as it stores y, so the pre-activation is never written
// nor read back (a pass over [tokens, d_ff] and its tensor less in the
// forward of every FFN); the backward masks dy by y > 0 (where x w^T + b >
// 0, as relu's own backward) in place and runs linear's gradients on it.
template <class T>
Tensor<T>* linear_relu(Graph<T>& g, Tensor<T>* x, Tensor<T>* w, Tensor<T>* b = nullptr);

// y[M, N] = a[M, K] b[K, N], or a[M, K] b[N, K]^T when trans_b.
template <class T>
Tensor<T>* matmul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, bool trans_b = false);

// y[Bt, M, N] = a[Bt, M, K] b[Bt, K, N], or a b^T with b [Bt, N, K] when
// trans_b (attention scores Q K^T; then P V without it). Split over Bt.
template <class T>
Tensor<T>* batched_matmul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, bool trans_b = false);

// For ops that fuse a product with what follows it: the gradients of
// y = a op(b) (+ bias) from dy [M, N], as the backward of linear and matmul
// adds them (into b's and bias's, and into a's when with_da).
template <class T>
void matmul_gradients(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, Tensor<T>* bias, const MatmulArgs& args, const T* dy,
                      bool with_da);

}  // namespace mt::autograd
