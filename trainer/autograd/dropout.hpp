// Dropout (Srivastava et al. 2014), inverted: kept values are scaled by
// 1 / (1 - p) so inference is the identity.
#pragma once

#include "autograd/graph.hpp"

namespace mt::autograd {

// y = x * mask, mask[i] = 0 with probability p, else 1 / (1 - p). Returns x
// itself (nothing recorded) when p == 0 or the graph is not training. The
// mask depends only on the graph's RngState and the element index (a counter-
// based generator), so it is the same for a given seed and call order whatever
// the thread count; each call advances the state by one.
template <class T>
Tensor<T>* dropout(Graph<T>& g, Tensor<T>* x, double p);

// The uniform in [0, 1) that dropout stream `stream` of `seed` draws for
// element i (the definition; the GPU's kernel draws the same).
double dropout_uniform(uint64_t seed, uint64_t stream, uint64_t i);
// Whether dropout with probability p drops element i: dropout_uniform(seed,
// stream, i) < p, decided in integers as the op does.
bool dropout_drops(uint64_t seed, uint64_t stream, uint64_t i, double p);

}  // namespace mt::autograd
