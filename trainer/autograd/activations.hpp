// Activations and the row-wise softmax.
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y = max(x, 0); the gradient at 0 is taken as 0.
template <class T>
Tensor<T>* relu(Graph<T>& g, Tensor<T>* x);

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
