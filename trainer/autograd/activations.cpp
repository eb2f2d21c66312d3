// Activations, elementwise over the pool:
//   relu:    dx += dy [x > 0]
//   gelu:    dx += dy (Phi(x) + x phi(x)),  Phi(x) = 0.5 (1 + erf(x / sqrt 2)),
//            phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
//   swish:   dx += dy (s + x s (1 - s)),  s = sigmoid(x)
//   softmax: dx += y (dy - sum(dy y)) per row.
#include "autograd/activations.hpp"

#include <cmath>

#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

constexpr int64_t kGrain = 1 << 14;

template <class T>
void relu_backward(Graph<T>& g, const Op<T>& op) {
  // first use: written, not added (Op::writes_fresh)
  relu_gradient(g, op.in[0]->data(), op.out->grad_data(), op.in[0]->grad_data(), op.out->numel(),
                op.in[0]->grad_pending);
}

template <class T>
void gelu_backward(Graph<T>& g, const Op<T>& op) {
  const T* x = op.in[0]->data();
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  const T inv_sqrt2 = T(1) / std::sqrt(T(2));
  const T inv_sqrt_2pi = T(1) / std::sqrt(T(2) * T(M_PI));
  parallel_range(g, op.out->numel(), kGrain, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const T cdf = T(0.5) * (T(1) + std::erf(x[i] * inv_sqrt2));
      const T pdf = std::exp(T(-0.5) * x[i] * x[i]) * inv_sqrt_2pi;
      dx[i] += dy[i] * (cdf + x[i] * pdf);
    }
  });
}

template <class T>
void swish_backward(Graph<T>& g, const Op<T>& op) {
  const T* x = op.in[0]->data();
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  parallel_range(g, op.out->numel(), kGrain, [x, dy, dx](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const T s = T(1) / (T(1) + std::exp(-x[i]));
      dx[i] += dy[i] * (s + x[i] * s * (T(1) - s));
    }
  });
}

template <class T>
void softmax_backward(Graph<T>& g, const Op<T>& op) {
  const int N = op.out->cols();
  const T* y = op.out->data();
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  parallel_range(g, op.out->rows(), kGrain / N + 1, [&](int64_t m0, int64_t m1, int) {
    for (int64_t m = m0; m < m1; ++m) {
      const size_t o = size_t(m) * N;
      T dot = 0;
      for (int n = 0; n < N; ++n) dot += dy[o + n] * y[o + n];
      for (int n = 0; n < N; ++n) dx[o + n] += y[o + n] * (dy[o + n] - dot);
    }
  });
}

}  // namespace

template <class T>
void relu_gradient(Graph<T>& g, const T* x, const T* dy, T* dx, int64_t n, bool fresh) {
  // Pointers captured by value (a reference capture reloads them after
  // every store) and dy loaded unconditionally: the loop becomes a
  // vectorised select instead of an unpredictable branch per element.
  parallel_range(g, n, kGrain, [x, dy, dx, fresh](int64_t b, int64_t e, int) {
    if (fresh) {
      for (int64_t i = b; i < e; ++i) {
        const T d = dy[i];
        dx[i] = x[i] > T(0) ? d : T(0);
      }
    } else {
      for (int64_t i = b; i < e; ++i) {
        const T d = dy[i];
        dx[i] += x[i] > T(0) ? d : T(0);
      }
    }
  });
}

template <class T>
Tensor<T>* relu(Graph<T>& g, Tensor<T>* x) {
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  const T* in = x->data();
  T* out = y->data();
  parallel_range(g, x->numel(), kGrain, [in, out](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) out[i] = in[i] > T(0) ? in[i] : T(0);
  });
  if (y->requires_grad) {
    Op<T>& op = g.record(&relu_backward<T>, y);
    op.in[0] = x;
    op.writes_fresh[0] = true;  // x's gradient (relu_backward)
  }
  return y;
}

template <class T>
Tensor<T>* gelu(Graph<T>& g, Tensor<T>* x) {
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  const T inv_sqrt2 = T(1) / std::sqrt(T(2));
  parallel_range(g, x->numel(), kGrain, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const T v = x->value[i];
      y->value[i] = T(0.5) * v * (T(1) + std::erf(v * inv_sqrt2));
    }
  });
  if (y->requires_grad) g.record(&gelu_backward<T>, y).in[0] = x;
  return y;
}

template <class T>
Tensor<T>* swish(Graph<T>& g, Tensor<T>* x) {
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  const T* in = x->data();
  T* out = y->data();
  parallel_range(g, x->numel(), kGrain, [in, out](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) out[i] = in[i] / (T(1) + std::exp(-in[i]));
  });
  if (y->requires_grad) g.record(&swish_backward<T>, y).in[0] = x;
  return y;
}

template <class T>
Tensor<T>* softmax(Graph<T>& g, Tensor<T>* x) {
  const int N = x->cols();
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  parallel_range(g, x->rows(), kGrain / N + 1, [&](int64_t m0, int64_t m1, int) {
    for (int64_t m = m0; m < m1; ++m) {
      const T* xr = x->data() + m * N;
      T* yr = y->data() + m * N;
      T mx = xr[0];
      for (int n = 1; n < N; ++n) mx = xr[n] > mx ? xr[n] : mx;
      T s = 0;
      for (int n = 0; n < N; ++n) s += (yr[n] = std::exp(xr[n] - mx));
      for (int n = 0; n < N; ++n) yr[n] /= s;
    }
  });
  if (y->requires_grad) g.record(&softmax_backward<T>, y).in[0] = x;
  return y;
}

#define MT_AG_INSTANTIATE(T)                                                        \
  template Tensor<T>* relu<T>(Graph<T>&, Tensor<T>*);                               \
  template void relu_gradient<T>(Graph<T>&, const T*, const T*, T*, int64_t, bool); \
  template Tensor<T>* gelu<T>(Graph<T>&, Tensor<T>*);                               \
  template Tensor<T>* swish<T>(Graph<T>&, Tensor<T>*);                              \
  template Tensor<T>* softmax<T>(Graph<T>&, Tensor<T>*);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)

}  // namespace mt::autograd
