// Layer normalisation (Ba et al. 2016) over the last dimension, as the
// runtime computes it (lib/src/transformer/transformer.cpp, platforms/ref/layer_norm.cpp).
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y[M, C] = (x - mean) / sqrt(var + eps) * gamma[C] + beta[C], per row of x[M, C]
// (variance about the mean, biased). Saves mean and rstd [M] for backward.
template <class T>
Tensor<T>* layer_norm(Graph<T>& g, Tensor<T>* x, Tensor<T>* gamma, Tensor<T>* beta, double eps);

}  // namespace mt::autograd
