// LayerNorm forward and backward (as in llm.c's layernorm_forward/_backward).
// With xhat = (x - mean) rstd and dn = dy * gamma, per row of C values:
//   dx += rstd (dn - mean(dn) - xhat mean(dn xhat)),
//   dgamma += sum over rows of dy xhat,   dbeta += sum over rows of dy.
#include "autograd/norm.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/lane_sum.hpp"
#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

// op: in = {x, gamma, beta}, saved = {mean [M], rstd [M]}
template <class T>
void layer_norm_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* x = op.in[0];
  Tensor<T>* gamma = op.in[1];
  Tensor<T>* beta = op.in[2];
  const T* mean = op.saved[0]->data();
  const T* rstd = op.saved[1]->data();
  const T* dy = op.out->grad_data();
  const int64_t M = x->rows();
  const int C = x->cols();
  const T* gm = gamma->value.data();
  const bool fresh = x->grad_pending;  // first use: written, not added (Op::writes_fresh)
  // Parameter gradients sum over rows: split by columns so no two tasks write
  // the same value and the sum order does not depend on the thread count.
  // (Plain pointers and the row's mean and rstd in locals: with them read
  // through the tensors inside the loop, it ran scalar, reloading each.)
  T* dgamma = gamma->requires_grad ? gamma->grad_data() : nullptr;
  T* dbeta = beta->requires_grad ? beta->grad_data() : nullptr;
  // Block by block of rows, both passes, so that the second finds the
  // block's x and dy in L2: run over all rows, it read them back from L3 or
  // memory and took more of a tiny step's samples than the first pass. Each
  // column's sum still runs over the rows in order, so the bits are those
  // of whole passes.
  const int64_t block = std::max<int64_t>(16, (int64_t(256) << 10) / (int64_t(C) * int64_t(sizeof(T))));
  for (int64_t b0 = 0; b0 < M; b0 += block) {
    const int64_t b1 = std::min(M, b0 + block);
    if (x->requires_grad) {
      parallel_range(g, b1 - b0, 16, [&](int64_t m0, int64_t m1, int) {
        for (int64_t m = b0 + m0; m < b0 + m1; ++m) {
          const T* xr = x->data() + m * C;
          const T* dyr = dy + m * C;
          T* dxr = x->grad_data() + m * C;
          const T r = rstd[m], mu = mean[m];
          // mean(dn) and mean(dn xhat), each in lane_sum's partial sums.
          const T a = lane_sum<T>(C, [&](int c) { return dyr[c] * gm[c]; }) / T(C);
          const T b = lane_sum<T>(C, [&](int c) { return dyr[c] * gm[c] * ((xr[c] - mu) * r); }) / T(C);
          if (fresh) {
            for (int c = 0; c < C; ++c) dxr[c] = r * (dyr[c] * gm[c] - a - (xr[c] - mu) * r * b);
          } else {
            for (int c = 0; c < C; ++c) dxr[c] += r * (dyr[c] * gm[c] - a - (xr[c] - mu) * r * b);
          }
        }
      });
    }
    if (dgamma || dbeta) {
      parallel_range(g, C, 32, [&](int64_t c0, int64_t c1, int) {
        for (int64_t m = b0; m < b1; ++m) {
          const T* xr = x->data() + m * C;
          const T* dyr = dy + m * C;
          const T mu = mean[m], r = rstd[m];
          if (dgamma)
            for (int64_t c = c0; c < c1; ++c) dgamma[c] += dyr[c] * (xr[c] - mu) * r;
          if (dbeta)
            for (int64_t c = c0; c < c1; ++c) dbeta[c] += dyr[c];
        }
      });
    }
  }
}

}  // namespace

template <class T>
Tensor<T>* layer_norm(Graph<T>& g, Tensor<T>* x, Tensor<T>* gamma, Tensor<T>* beta, double eps) {
  const int C = x->cols();
  const int64_t M = x->rows();
  MT_AG_CHECK(gamma->numel() == C && beta->numel() == C,
              "layer_norm: gamma/beta " + gamma->shape.str() + " for input " + x->shape.str());
  const bool rg = x->requires_grad || gamma->requires_grad || beta->requires_grad;
  Tensor<T>* y = g.make(x->shape, rg);
  Tensor<T>* mean = g.make(Shape{int(M)}, false);
  Tensor<T>* rstd = g.make(Shape{int(M)}, false);
  const T e = T(eps);
  const T* gm = gamma->data();
  const T* bt = beta->data();
  // Two passes, as the runtime: accurate when |mean| >> stddev. Each sum in
  // lane_sum's partial sums; plain pointers so the loops vectorize.
  parallel_range(g, M, 16, [&](int64_t m0, int64_t m1, int) {
    for (int64_t m = m0; m < m1; ++m) {
      const T* xr = x->data() + m * C;
      T* yr = y->data() + m * C;
      const T u = lane_sum<T>(C, [xr](int c) { return xr[c]; }) / T(C);
      const T var = lane_sum<T>(C, [xr, u](int c) { return (xr[c] - u) * (xr[c] - u); }) / T(C);
      const T r = T(1) / std::sqrt(var + e);
      for (int c = 0; c < C; ++c) yr[c] = (xr[c] - u) * r * gm[c] + bt[c];
      mean->value[m] = u;
      rstd->value[m] = r;
    }
  });
  if (rg) {
    Op<T>& op = g.record(&layer_norm_backward<T>, y);
    op.in = {x, gamma, beta, nullptr};
    op.saved = {mean, rstd, nullptr};
    op.writes_fresh[0] = true;  // x's gradient (layer_norm_backward)
  }
  return y;
}

template Tensor<float>* layer_norm<float>(Graph<float>&, Tensor<float>*, Tensor<float>*, Tensor<float>*, double);
template Tensor<double>* layer_norm<double>(Graph<double>&, Tensor<double>*, Tensor<double>*, Tensor<double>*, double);

}  // namespace mt::autograd
