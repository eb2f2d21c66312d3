// Activations and the row-wise softmax.
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y = max(x, 0); the gradient at 0 is taken as 0.
template <class T>
Tensor<T>* relu(Graph<T>& g, Tensor<T>* x);

// ReLU's backward over n values, over the pool: dx = dy where x > 0, else 0
// (fresh: written; else added). x may be the ReLU's output (positive
// exactly where its input is), and dx may alias dy (linear_relu masks its
// output's gradient in place).
template <class T>
void relu_gradient(Graph<T>& g, const T* x, const T* dy, T* dx, int64_t n, bool fresh);

// y = 0.5 x (1 + erf(x / sqrt 2)): exact GELU (Hendrycks & Gimpel 2016), as the runtime.
template <class T>
Tensor<T>* gelu(Graph<T>& g, Tensor<T>* x);

// y = x sigmoid(x) = x / (1 + e^-x): swish (SiLU), as the runtime (Marian's FFN).
template <class T>
Tensor<T>* swish(Graph<T>& g, Tensor<T>* x);

// y[M, N] = softmax over each row of x[M, N].
template <class T>
Tensor<T>* softmax(Graph<T>& g, Tensor<T>* x);

}  // namespace mt::autograd
