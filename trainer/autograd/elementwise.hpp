// Elementwise ops and reductions: residual and bias adds, products, scaling,
// and the sum that turns a tensor into a scalar loss.
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y = a + b, same shapes (the residual connection).
template <class T>
Tensor<T>* add(Graph<T>& g, Tensor<T>* a, Tensor<T>* b);

// y[M, N] = x[M, N] + b[N], broadcast over rows.
template <class T>
Tensor<T>* add_bias(Graph<T>& g, Tensor<T>* x, Tensor<T>* b);

// y = a * b elementwise, same shapes.
template <class T>
Tensor<T>* mul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b);

// y = s x for a constant s (e.g. 1 / tokens to turn a summed loss into a mean).
template <class T>
Tensor<T>* scale(Graph<T>& g, Tensor<T>* x, double s);

// y[1] = sum of all x (accumulated in double).
template <class T>
Tensor<T>* sum(Graph<T>& g, Tensor<T>* x);

}  // namespace mt::autograd
