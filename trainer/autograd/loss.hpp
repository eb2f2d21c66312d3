// Log-softmax + cross-entropy with label smoothing (Szegedy et al. 2016) in
// fairseq's label_smoothed_cross_entropy form with eps / V on every class:
//   loss_r = (1 - eps) * (-log p[t_r]) + eps * mean over v of (-log p[v])
// summed over the rows whose target is not padding.
#pragma once

#include <cstdint>
#include <span>

#include "autograd/graph.hpp"

namespace mt::autograd {

template <class T>
struct CrossEntropy {
  Tensor<T>* loss = nullptr;  // [1]: the SUM of loss_r over non-pad rows (divide by tokens for the mean)
  int64_t tokens = 0;         // rows whose target is not pad_id
  double nll = 0.0;           // sum of -log p[t_r] over those rows (perplexity = exp(nll / tokens))
};

// logits [N, V], targets [N] in [0, V) or pad_id (ignored: no loss, no gradient).
template <class T>
CrossEntropy<T> cross_entropy(Graph<T>& g, Tensor<T>* logits, std::span<const int> targets, int pad_id,
                              double label_smoothing);

}  // namespace mt::autograd
