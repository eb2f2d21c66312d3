// cross_entropy(linear(x, w, b)) in one op. Unfused, a tiny training step's
// logits [4096 x 8000] (131 MB) were written by the forward GEMM, read for
// the log-sum-exp, read and their gradient (another 131 MB) written, then
// read twice by the input gradient's GEMM. Here each block of rows does all
// of that while it is in cache, at the price of reading the packed weights
// once per block, and only the gradient is kept, read once more for the
// weight gradient. Bit for bit the unfused ops': the same kernels on the
// same operands (gemm_packed: every output the same chain of fmas;
// row_loss and row_loss_gradient: cross_entropy's own), so the tests
// compare the two.
#include "autograd/linear_cross_entropy.hpp"

#include <algorithm>

#include "mt/kernels.h"

#include "autograd/gemm.hpp"
#include "autograd/linear.hpp"
#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

// Rows per block, a multiple of the GEMM tile's 6. Every block reads all of
// w twice (both packed copies, V K floats each), so blocks of fewer rows
// than K would read more of w than the unfused ops move logits; at least
// 2 MB of logits a block, and at least K rows.
int block_rows(int V, int K) {
  constexpr size_t kMinBlockBytes = 2 << 20;
  const int rows = std::max(int(kMinBlockBytes / (sizeof(float) * size_t(std::max(V, 1)))), K) / 6 * 6;
  return std::clamp(rows, 6, 4096);
}

// op: in = {x, w, b}, saved = {d logits [M, V], dx [M, K] or null} for a
// loss seed of 1, args = the linear's MatmulArgs.
void linear_cross_entropy_backward(Graph<float>& g, const Op<float>& op) {
  Tensor<float>* x = op.in[0];
  Tensor<float>* dz = op.saved[0];
  Tensor<float>* dx = op.saved[1];
  const MatmulArgs& args = std::get<MatmulArgs>(op.args);
  const float dl = op.out->grad[0];
  if (dl != 1.0f) {
    // Both gradients are linear in the seed (equal to the unfused ops'
    // within rounding then, not bit for bit).
    for (Tensor<float>* t : {dz, dx}) {
      if (t == nullptr) continue;
      float* v = t->data();
      parallel_range(g, t->numel(), int64_t(1) << 14, [&](int64_t i0, int64_t i1, int) {
        for (int64_t i = i0; i < i1; ++i) v[i] *= dl;
      });
    }
  }
  if (dx) {
    float* gx = x->grad_data();
    const float* d = dx->data();
    const bool fresh = x->grad_pending;  // Op::writes_fresh
    parallel_range(g, dx->numel(), int64_t(1) << 14, [&](int64_t i0, int64_t i1, int) {
      if (fresh)
        std::copy(d + i0, d + i1, gx + i0);
      else
        accumulate(gx + i0, d + i0, i1 - i0);
    });
  }
  matmul_gradients(g, x, op.in[1], op.in[2], args, dz->data(), false);
}

}  // namespace

template <>
CrossEntropy<float> linear_cross_entropy<float>(Graph<float>& g, Tensor<float>* x, Tensor<float>* w, Tensor<float>* b,
                                                std::span<const int> targets, int pad_id, double label_smoothing) {
  const MatmulArgs margs = linear_args(x->shape, w->shape, b ? &b->shape : nullptr);
  const int M = margs.M, V = margs.N, K = margs.K;
  cross_entropy_args(Shape{M, V}, targets, pad_id, label_smoothing);  // checks the targets
  // The gradients are made here, in the forward: a forward that no backward
  // follows (a dev loss) pays for them, a third of the op's products more.
  const bool rg = x->requires_grad || w->requires_grad || (b && b->requires_grad);
  // The logits, block by block, then (rg) their gradient in their place.
  Tensor<float>* z = g.make(Shape{M, V}, false);
  Tensor<float>* dx = x->requires_grad ? g.make(Shape{M, K}, false) : nullptr;
  Tensor<float>* row_nll = g.make(Shape{M}, false);     // -log p[t], 0 on padding
  Tensor<float>* row_smooth = g.make(Shape{M}, false);  // -mean log p, 0 on padding
  // w packed once for every block: as the forward's [V, K] and as the input
  // gradient's [K, N = K] operand (w read as [V rows, K columns]).
  Tensor<float>* w_forward = g.make(Shape{int(packed_size(V, K))}, false);
  Tensor<float>* w_backward = dx ? g.make(Shape{int(packed_size(K, V))}, false) : nullptr;
  parallel_range(g, int64_t(packed_panels(V)), 8, [&](int64_t p0, int64_t p1, int) {
    gemm_pack(w->data(), size_t(K), BLayout::nk, V, K, int(p0), int(p1), w_forward->data());
  });
  if (w_backward) {
    parallel_range(g, int64_t(packed_panels(K)), 1, [&](int64_t p0, int64_t p1, int) {
      gemm_pack(w->data(), size_t(K), BLayout::kn, K, V, int(p0), int(p1), w_backward->data());
    });
  }
  const KernelTable& kernels = g.kernels();
  const float eps = float(label_smoothing);
  const int R = block_rows(V, K);
  parallel_range(g, (M + R - 1) / R, 1, [&](int64_t b0, int64_t b1, int) {
    for (int64_t block = b0; block < b1; ++block) {
      const int r0 = int(block) * R, r1 = std::min(M, r0 + R);
      float* zb = z->data() + size_t(r0) * V;
      gemm_packed(kernels, r1 - r0, V, K, x->data() + size_t(r0) * K, size_t(K), w_forward->data(),
                  b ? b->data() : nullptr, zb, size_t(V), false);
      for (int r = r0; r < r1; ++r) {
        float* zr = z->data() + size_t(r) * V;
        if (targets[r] == pad_id) {
          row_nll->value[r] = row_smooth->value[r] = 0.0f;
          if (rg) std::fill(zr, zr + V, 0.0f);
          continue;
        }
        const RowLoss<float> l = row_loss(g, zr, V, targets[r]);
        row_nll->value[r] = l.nll;
        row_smooth->value[r] = l.smooth;
        if (rg) row_loss_gradient(g, zr, V, l.lse, 1.0f, eps, targets[r], zr, false);
      }
      if (dx) {
        gemm_packed(kernels, r1 - r0, K, V, zb, size_t(V), w_backward->data(), nullptr, dx->data() + size_t(r0) * K,
                    size_t(K), false);
      }
    }
  });
  CrossEntropy<float> result =
      sum_row_losses(g, row_nll->data(), row_smooth->data(), targets, pad_id, label_smoothing, rg);
  if (rg) {
    Op<float>& op = g.record(&linear_cross_entropy_backward, result.loss);
    op.in = {x, w, b, nullptr};
    op.saved = {z, dx, nullptr};
    op.args = margs;
    op.writes_fresh[0] = true;  // x's gradient
  }
  return result;
}

template <>
CrossEntropy<double> linear_cross_entropy<double>(Graph<double>& g, Tensor<double>* x, Tensor<double>* w,
                                                  Tensor<double>* b, std::span<const int> targets, int pad_id,
                                                  double label_smoothing) {
  return cross_entropy(g, linear(g, x, w, b), targets, pad_id, label_smoothing);
}

}  // namespace mt::autograd
