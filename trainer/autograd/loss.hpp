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

// The pieces, for ops that fuse the loss with the product before it
// (linear_cross_entropy.hpp), so that both give the same bits:
// one non-pad row's log-sum-exp, -log p[t] and -mean log p from its logits z ...
template <class T>
struct RowLoss {
  T lse, nll, smooth;
};
template <class T>
RowLoss<T> row_loss(const Graph<T>& g, const T* z, int V, int target);
// ... and its gradient, dl * (p - (1 - eps) [v == t] - eps / V), written
// into dz (added when accumulate); dz may be z.
template <class T>
void row_loss_gradient(const Graph<T>& g, const T* z, int V, T lse, T dl, T eps, int target, T* dz, bool accumulate);
// The result from the rows' terms (zero on padding), summed in row order in
// double: the same total whatever the thread count.
template <class T>
CrossEntropy<T> sum_row_losses(Graph<T>& g, const T* nll, const T* smooth, std::span<const int> targets, int pad_id,
                               double label_smoothing, bool requires_grad);

}  // namespace mt::autograd
