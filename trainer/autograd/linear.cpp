// Linear layers and matrix products. With y = a op(b) and dy = d loss / dy:
//   da = dy op(b)^T,   d op(b) = a^T dy   (so db = dy^T a when op(b) = b^T),
//   dbias = sum over rows of dy.
// Every product goes through gemm.hpp, accumulating into the gradients.
#include "autograd/linear.hpp"

#include <algorithm>

#include "autograd/activations.hpp"
#include "autograd/gemm.hpp"
#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

// Whether matmul_grads transposes dy (else a) for the weight gradient.
inline bool transposes_dy(int M, int N, int K) { return size_t(M) * N <= size_t(M) * K + size_t(K) * N; }

// Scratch values matmul_grads needs: the transposed operand, and the
// gradient's transpose when it comes out the other way round.
inline size_t grads_scratch_size(int M, int N, int K, bool trans_b) {
  if (transposes_dy(M, N, K)) return size_t(M) * N + (trans_b ? 0 : size_t(N) * K);
  return size_t(M) * K + (trans_b ? size_t(K) * N : 0);
}

// Gradients of y[M, N] = a[M, K] op(b) for one pair of matrices, added into
// da and db (either may be null); da is written instead when da_fresh (its
// first use, Op::writes_fresh). mm(M, N, K, A, lda, B, ldb, layout, C,
// ldc, accumulate, col_sums) computes C (+)= A op(B) (gemm.hpp); rows(R, fn)
// runs fn(r0, r1) over [0, R), on the pool or not, for the transposes; tmp
// holds grads_scratch_size(M, N, K, trans_b) values. Returns whether it
// added dy's column sums into dbias (may be null): it does when dy is the
// packed operand of the weight gradient's GEMM.
//
// The weight gradient sums over the M rows, so one of dy [M, N] and a [M, K]
// is transposed for the GEMM's left operand. Transposing a instead of dy
// yields the gradient transposed ([K, N] for a [N, K] weight), added back
// with a transpose of the weight's size: chosen when M K + K N < M N, e.g.
// the output projection (N = vocabulary) or the first FFN layer. Either way
// each gradient element is the same sum of the same products in the same
// row order, so the choice does not change its value.
template <class T, class Mm, class Rows>
bool matmul_grads(Mm&& mm, Rows&& rows, T* tmp, const T* a, T* da, bool da_fresh, const T* b, T* db, T* dbias,
                  const T* dy, int M, int N, int K, bool trans_b) {
  if (da) {
    // da[M, K] (+)= dy[M, N] op(b)^T: b read as [N, K] (kn: inner N) or [K, N] (nk).
    if (trans_b)
      mm(M, K, N, dy, size_t(N), b, size_t(K), BLayout::kn, da, size_t(K), !da_fresh, nullptr);
    else
      mm(M, K, N, dy, size_t(N), b, size_t(N), BLayout::nk, da, size_t(K), !da_fresh, nullptr);
  }
  if (!db) return false;
  // g[N, K] = dy^T a, the gradient of b when op(b) = b^T; g^T = a^T dy otherwise.
  const bool want_nk = trans_b;
  if (transposes_dy(M, N, K)) {
    rows(M, [&](int r0, int r1) { transpose(dy, M, N, size_t(N), tmp, r0, r1); });  // dy^T [N, M]
    if (want_nk) {
      mm(N, K, M, tmp, size_t(M), a, size_t(K), BLayout::kn, db, size_t(K), true, nullptr);
    } else {
      T* g = tmp + size_t(M) * N;
      mm(N, K, M, tmp, size_t(M), a, size_t(K), BLayout::kn, g, size_t(K), false, nullptr);
      rows(N, [&](int r0, int r1) { add_transposed(g, N, K, db, r0, r1); });  // db[K, N] += g^T
    }
    return false;
  }
  rows(M, [&](int r0, int r1) { transpose(a, M, K, size_t(K), tmp, r0, r1); });  // a^T [K, M]
  if (!want_nk) {
    mm(K, N, M, tmp, size_t(M), dy, size_t(N), BLayout::kn, db, size_t(N), true, dbias);
  } else {
    T* g = tmp + size_t(M) * K;
    mm(K, N, M, tmp, size_t(M), dy, size_t(N), BLayout::kn, g, size_t(N), false, dbias);
    rows(K, [&](int r0, int r1) { add_transposed(g, K, N, db, r0, r1); });  // db[N, K] += g^T
  }
  return dbias != nullptr;
}

template <class T>
T* grad_or_null(Tensor<T>* t) {
  return t && t->requires_grad ? t->grad_data() : nullptr;
}

// op: in = {a, b, bias}, args = MatmulArgs
template <class T>
void matmul_backward(Graph<T>& g, const Op<T>& op) {
  matmul_gradients(g, op.in[0], op.in[1], op.in[2], std::get<MatmulArgs>(op.args), op.out->grad_data(), true);
}

// op: in = {x, w, bias}, args = MatmulArgs. dy is masked in place: nothing
// reads y's gradient after this op (y is its own output).
template <class T>
void linear_relu_backward(Graph<T>& g, const Op<T>& op) {
  T* dy = op.out->grad_data();
  relu_gradient(g, op.out->data(), dy, dy, op.out->numel(), true);
  matmul_gradients(g, op.in[0], op.in[1], op.in[2], std::get<MatmulArgs>(op.args), dy, true);
}

// act: none, or relu (linear_relu: b is the weight, trans_b).
template <class T>
Tensor<T>* matmul_impl(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, Tensor<T>* bias, const MatmulArgs& args,
                       Activation act = Activation::none) {
  const int M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  const bool rg = a->requires_grad || b->requires_grad || (bias && bias->requires_grad);
  Tensor<T>* y = g.make(args.out, rg);
  gemm(g, M, N, K, a->data(), size_t(K), b->data(), size_t(trans_b ? K : N), trans_b ? BLayout::nk : BLayout::kn,
       bias ? bias->data() : nullptr, y->data(), size_t(N), false, static_cast<T*>(nullptr), act);
  if (rg) {
    Op<T>& op = g.record(act == Activation::relu ? &linear_relu_backward<T> : &matmul_backward<T>, y);
    op.in = {a, b, bias, nullptr};
    op.args = args;
    op.writes_fresh[0] = true;  // a's gradient (matmul_gradients)
  }
  return y;
}

// op: in = {a, b}, args = BatchedMatmulArgs
template <class T>
void batched_matmul_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* a = op.in[0];
  Tensor<T>* b = op.in[1];
  const BatchedMatmulArgs& args = std::get<BatchedMatmulArgs>(op.args);
  const int Bt = args.batch, M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  T* da = grad_or_null(a);
  T* db = grad_or_null(b);
  const size_t pack = std::max({gemm_pack_size(K, N), gemm_pack_size(K, M), gemm_pack_size(N, M)});
  const size_t tmp = grads_scratch_size(M, N, K, trans_b);
  parallel_tasks(g, Bt, [&](int item, int thread) {
    T* s = g.scratch(thread, pack + tmp);
    auto mm = [&](int m, int n, int k, const T* A, size_t lda, const T* B, size_t ldb, BLayout l, T* C, size_t ldc,
                  bool accumulate, T*) {  // no bias here: no column sums
      gemm_serial(g, s, m, n, k, A, lda, B, ldb, l, static_cast<const T*>(nullptr), C, ldc, accumulate);
    };
    const size_t ao = size_t(item) * M * K, bo = size_t(item) * K * N;
    auto rows = [](int R, auto&& fn) { fn(0, R); };  // this task's thread only
    matmul_grads(mm, rows, s + pack, a->data() + ao, da ? da + ao : nullptr, false, b->data() + bo,
                 db ? db + bo : nullptr, static_cast<T*>(nullptr), op.out->grad_data() + size_t(item) * M * N, M, N, K,
                 trans_b);
  });
}

}  // namespace

template <class T>
void matmul_gradients(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, Tensor<T>* bias, const MatmulArgs& args, const T* dy,
                      bool with_da) {
  const int M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  T* tmp = g.scratch(0, grads_scratch_size(M, N, K, trans_b));
  auto mm = [&](int m, int n, int k, const T* A, size_t lda, const T* B, size_t ldb, BLayout l, T* C, size_t ldc,
                bool accumulate, T* col_sums) {
    gemm(g, m, n, k, A, lda, B, ldb, l, static_cast<const T*>(nullptr), C, ldc, accumulate, col_sums);
  };
  // Transposes split by rows of 32 (their blocks) over the pool.
  auto rows = [&](int R, auto&& fn) {
    parallel_range(g, (R + 31) / 32, 8,
                   [&](int64_t b0, int64_t b1, int) { fn(int(b0 * 32), int(std::min<int64_t>(R, b1 * 32))); });
  };
  // a's gradient is written on its first use, unless a is also b or bias (Graph::backward zeroes it then).
  T* dbias = grad_or_null(bias);
  const bool bias_summed = matmul_grads(mm, rows, tmp, a->data(), with_da ? grad_or_null(a) : nullptr, a->grad_pending,
                                        b->data(), grad_or_null(b), dbias, dy, M, N, K, trans_b);
  if (T* db = bias_summed ? nullptr : dbias) {
    // Each task sums its own columns over every row, in row order as the
    // GEMM's packing does when it takes them.
    parallel_range(g, N, 64, [&](int64_t n0, int64_t n1, int) {
      for (int m = 0; m < M; ++m) accumulate(db + n0, dy + size_t(m) * N + n0, n1 - n0);
    });
  }
}

template <class T>
Tensor<T>* linear(Graph<T>& g, Tensor<T>* x, Tensor<T>* w, Tensor<T>* b) {
  return matmul_impl(g, x, w, b, linear_args(x->shape, w->shape, b ? &b->shape : nullptr));
}

template <class T>
Tensor<T>* linear_relu(Graph<T>& g, Tensor<T>* x, Tensor<T>* w, Tensor<T>* b) {
  return matmul_impl(g, x, w, b, linear_args(x->shape, w->shape, b ? &b->shape : nullptr), Activation::relu);
}

template <class T>
Tensor<T>* matmul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, bool trans_b) {
  return matmul_impl(g, a, b, static_cast<Tensor<T>*>(nullptr), matmul_args(a->shape, b->shape, trans_b));
}

template <class T>
Tensor<T>* batched_matmul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b, bool trans_b) {
  const BatchedMatmulArgs args = batched_matmul_args(a->shape, b->shape, trans_b);
  const int Bt = args.batch, M = args.M, N = args.N, K = args.K;
  const bool rg = a->requires_grad || b->requires_grad;
  Tensor<T>* y = g.make(Shape{Bt, M, N}, rg);
  const size_t pack = gemm_pack_size(N, K);
  parallel_tasks(g, Bt, [&](int item, int thread) {
    gemm_serial(g, g.scratch(thread, pack), M, N, K, a->data() + size_t(item) * M * K, size_t(K),
                b->data() + size_t(item) * K * N, size_t(trans_b ? K : N), trans_b ? BLayout::nk : BLayout::kn,
                static_cast<const T*>(nullptr), y->data() + size_t(item) * M * N, size_t(N), false);
  });
  if (rg) {
    Op<T>& op = g.record(&batched_matmul_backward<T>, y);
    op.in = {a, b, nullptr, nullptr};
    op.args = args;
  }
  return y;
}

#define MT_AG_INSTANTIATE(T)                                                         \
  template Tensor<T>* linear<T>(Graph<T>&, Tensor<T>*, Tensor<T>*, Tensor<T>*);      \
  template Tensor<T>* linear_relu<T>(Graph<T>&, Tensor<T>*, Tensor<T>*, Tensor<T>*); \
  template Tensor<T>* matmul<T>(Graph<T>&, Tensor<T>*, Tensor<T>*, bool);            \
  template Tensor<T>* batched_matmul<T>(Graph<T>&, Tensor<T>*, Tensor<T>*, bool);    \
  template void matmul_gradients<T>(Graph<T>&, Tensor<T>*, Tensor<T>*, Tensor<T>*, const MatmulArgs&, const T*, bool);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)

}  // namespace mt::autograd
