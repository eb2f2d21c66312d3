// Cross-entropy from logits z [N, V]. Per non-pad row, with lse = log sum exp z:
//   log p[v] = z[v] - lse
//   loss_r   = -(1 - eps) log p[t] - (eps / V) sum_v log p[v]
//   d loss_r / d z[v] = p[v] - (1 - eps) [v == t] - eps / V
// Only lse [N] is saved: p = exp(z - lse) is recomputed from the logits in
// backward, so no second [N, V] buffer is kept.
#include "autograd/loss.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "mt/kernels.h"

#include "autograd/lane_sum.hpp"
#include "autograd/parallel.hpp"

namespace mt::autograd {

template <class T>
RowLoss<T> row_loss(const Graph<T>& g, const T* z, int V, int target) {
  if constexpr (std::is_same_v<T, float>) {
    // lse by the SIMD kernel, nothing written; the smoothing term
    // -mean log p = lse - mean z, z summed in lane_sum's partial sums
    // (one chain of V dependent adds was ~3% of a tiny step). Only the
    // logged loss depends on that sum, not the gradients.
    float m = 0.0f, log_sum = 0.0f;
    g.kernels().log_sum_exp_f32(z, V, &m, &log_sum);
    const float l = m + log_sum;
    const float sum_z = lane_sum<float>(V, [z](int v) { return z[v]; });
    return {l, l - z[target], l - sum_z / float(V)};
  } else {
    T mx = z[0];
    for (int v = 1; v < V; ++v) mx = z[v] > mx ? z[v] : mx;
    T s = 0, zsum = 0;
    for (int v = 0; v < V; ++v) {
      s += std::exp(z[v] - mx);
      zsum += z[v];
    }
    const T l = mx + std::log(s);
    return {l, l - z[target], l - zsum / T(V)};
  }
}

template <class T>
void row_loss_gradient(const Graph<T>& g, const T* z, int V, T lse, T dl, T eps, int target, T* dz, bool accumulate) {
  const T off = dl * eps / T(V);
  if constexpr (std::is_same_v<T, float>) {
    // p = exp(z - lse) from the saved lse, one SIMD pass straight into
    // dz: no copy of the row, no max or sum pass. (lse's rounding gives
    // every p of the row the same relative error, |lse| 2^-24: ~1e-6.)
    g.kernels().scaled_exp_f32(z, V, lse, dl, off, dz, accumulate);
  } else if (!accumulate) {
    for (int v = 0; v < V; ++v) dz[v] = dl * std::exp(z[v] - lse) - off;
  } else {
    for (int v = 0; v < V; ++v) dz[v] += dl * std::exp(z[v] - lse) - off;
  }
  dz[target] -= dl * (T(1) - eps);
}

template <class T>
CrossEntropy<T> sum_row_losses(Graph<T>& g, const T* nll, const T* smooth, std::span<const int> targets, int pad_id,
                               double label_smoothing, bool requires_grad) {
  CrossEntropy<T> result;
  double smooth_sum = 0.0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] == pad_id) continue;
    ++result.tokens;
    result.nll += double(nll[r]);
    smooth_sum += double(smooth[r]);
  }
  result.loss = g.make(Shape{1}, requires_grad);
  result.loss->value[0] = T((1.0 - label_smoothing) * result.nll + label_smoothing * smooth_sum);
  return result;
}

namespace {

// op: in = {logits}, saved = {lse [N]}, args = CrossEntropyArgs, ints = targets
template <class T>
void cross_entropy_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* logits = op.in[0];
  const int V = logits->cols();
  const T* lse = op.saved[0]->data();
  const CrossEntropyArgs& args = std::get<CrossEntropyArgs>(op.args);
  const int pad = args.pad_id;
  const T eps = T(args.label_smoothing);
  const T dl = op.out->grad[0];
  const std::vector<int>& targets = op.ints;
  // On its first use (Op::writes_fresh) the logits' gradient is
  // written, not added to: the [tokens, vocabulary] buffer is neither zeroed
  // nor read first.
  const bool fresh = logits->grad_pending;
  parallel_range(g, int64_t(targets.size()), 4, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* z = logits->data() + r * V;
      T* dz = logits->grad_data() + r * V;
      if (targets[r] == pad) {
        if (fresh) std::fill(dz, dz + V, T(0));
        continue;
      }
      row_loss_gradient(g, z, V, lse[r], dl, eps, targets[r], dz, !fresh);
    }
  });
}

}  // namespace

template <class T>
CrossEntropy<T> cross_entropy(Graph<T>& g, Tensor<T>* logits, std::span<const int> targets, int pad_id,
                              double label_smoothing) {
  const CrossEntropyArgs args = cross_entropy_args(logits->shape, targets, pad_id, label_smoothing);
  const int V = logits->cols();
  const int64_t N = logits->rows();
  Tensor<T>* lse = g.make(Shape{int(N)}, false);
  Tensor<T>* row_nll = g.make(Shape{int(N)}, false);     // -log p[t], 0 on padding
  Tensor<T>* row_smooth = g.make(Shape{int(N)}, false);  // -mean log p, 0 on padding
  parallel_range(g, N, 4, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* z = logits->data() + r * V;
      if (targets[r] == pad_id) {
        lse->value[r] = row_nll->value[r] = row_smooth->value[r] = T(0);
        continue;
      }
      const RowLoss<T> l = row_loss(g, z, V, targets[r]);
      lse->value[r] = l.lse;
      row_nll->value[r] = l.nll;
      row_smooth->value[r] = l.smooth;
    }
  });
  CrossEntropy<T> result =
      sum_row_losses(g, row_nll->data(), row_smooth->data(), targets, pad_id, label_smoothing, logits->requires_grad);
  if (logits->requires_grad) {
    Op<T>& op = g.record(&cross_entropy_backward<T>, result.loss);
    op.in[0] = logits;
    op.saved[0] = lse;
    op.args = args;
    op.ints.assign(targets.begin(), targets.end());
    op.writes_fresh[0] = true;
  }
  return result;
}

#define MT_AG_INSTANTIATE(T)                                                                  \
  template RowLoss<T> row_loss<T>(const Graph<T>&, const T*, int, int);                       \
  template void row_loss_gradient<T>(const Graph<T>&, const T*, int, T, T, T, int, T*, bool); \
  template CrossEntropy<T> sum_row_losses<T>(Graph<T>&, const T*, const T*, std::span<const int>, int, double, bool);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)
template CrossEntropy<float> cross_entropy<float>(Graph<float>&, Tensor<float>*, std::span<const int>, int, double);
template CrossEntropy<double> cross_entropy<double>(Graph<double>&, Tensor<double>*, std::span<const int>, int, double);

}  // namespace mt::autograd
