// Token embeddings as the runtime computes them (lib/src/transformer/transformer.cpp
// embed): table[id] * scale + the sinusoidal encoding of the position
// (Vaswani et al. 2017, section 3.4), scale = sqrt(C) for the model.
#pragma once

#include <span>

#include "autograd/graph.hpp"

namespace mt::autograd {

// y[B*L, C] = table[ids[r], :] * scale (+ positions[r % L, :] when add_positions),
// table [V, C] row-major, ids [B*L] in [0, V) (padding included: its rows are
// computed like any other). The gradient scatters into the table rows used;
// a table used by several ops (shared or tied embeddings) sums them all.
// stored (ModelConfig::stored_positions: the model's own table [P, C], P >= L,
// e.g. a converted model's) replaces the sinusoid: positions[r % L] is
// added, a constant (fine-tuning keeps the table as it is).
template <class T>
Tensor<T>* embedding(Graph<T>& g, Tensor<T>* table, std::span<const int> ids, int L, double scale,
                     bool add_positions = true, std::span<const float> stored = {});

// positions[p, i] for p < P, i < C, the runtime's interleaved layout
// (detail::fill_positions): sin(p / 10000^(i / C)) at even i, cos(p /
// 10000^((i - 1) / C)) at odd i; computed in double, then rounded to T.
template <class T>
void sinusoid_positions(int P, int C, T* positions);

}  // namespace mt::autograd
