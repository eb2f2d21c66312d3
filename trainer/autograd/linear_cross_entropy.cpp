// cross_entropy(linear(x, w, b)) in one op. Unfused, a tiny training step's
// logits [4096 x 8000] (131 MB) were written by the forward GEMM, read for
// the log-sum-exp, read and their gradient (another 131 MB) written, then
// read twice by the input gradient's GEMM, and once more, 64 columns at a
// time from rows 32 KB apart, packed for the weight gradient's. Here each
// block of rows does all of that in a per-thread buffer that stays in cache,
// at the price of reading the packed weights once per block, and leaves the
// gradient in memory only as the weight gradient's GEMM reads it: packed in
// panels of columns (mt/kernels.h's layout, rows in order), written while
// the block is in cache and read back in order. Bit for bit the unfused
// ops': the same kernels on the same operands (gemm_f32: every output the
// same chain of fmas; row_loss and row_loss_gradient: cross_entropy's own;
// the bias gradient's sums row by row, as gemm's packing takes them), so the
// tests compare the two.
#include "autograd/linear_cross_entropy.hpp"

#include <algorithm>
#include <cstring>

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

// Rows [r0, r1) of the block's gradient zb [rows, V] (row r0 first) into
// dz [panels of V][M][kPanelWidth]: panel by panel, so each write is a run of
// the block's rows; columns past V are zero.
void pack_block_rows(const float* zb, int V, int M, int r0, int r1, float* dz) {
  const int full = V / kPanelWidth, tail = V - full * kPanelWidth;
  for (int p = 0; p < full; ++p) {
    float* dst = dz + (size_t(p) * M + size_t(r0)) * kPanelWidth;
    const float* src = zb + size_t(p) * kPanelWidth;
    for (int r = r0; r < r1; ++r, dst += kPanelWidth, src += V) std::memcpy(dst, src, kPanelWidth * sizeof(float));
  }
  if (tail) {
    float* dst = dz + (size_t(full) * M + size_t(r0)) * kPanelWidth;
    const float* src = zb + size_t(full) * kPanelWidth;
    for (int r = r0; r < r1; ++r, dst += kPanelWidth, src += V) {
      std::memcpy(dst, src, size_t(tail) * sizeof(float));
      std::memset(dst + tail, 0, size_t(kPanelWidth - tail) * sizeof(float));
    }
  }
}

// op: in = {x, w, b}, saved = {d logits packed by pack_block_rows or null
// (no weight or bias gradient), dx [M, K] or null} for a loss seed of 1,
// args = the linear's MatmulArgs.
void linear_cross_entropy_backward(Graph<float>& g, const Op<float>& op) {
  Tensor<float>* x = op.in[0];
  Tensor<float>* w = op.in[1];
  Tensor<float>* b = op.in[2];
  Tensor<float>* dz = op.saved[0];
  Tensor<float>* dx = op.saved[1];
  const MatmulArgs& args = std::get<MatmulArgs>(op.args);
  const int M = args.M, V = args.N, K = args.K;
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
  if (dz == nullptr) return;
  float* dw = w->requires_grad ? w->grad_data() : nullptr;
  float* db = b && b->requires_grad ? b->grad_data() : nullptr;
  // dw [V, K] += g^T, g [K, V] = x^T dz: dz is the GEMM's packed right-hand
  // side as it stands (element (v, m) of its [V, M] "weight"), x^T its left.
  float* xt = dw ? g.scratch(0, size_t(K) * M + size_t(K) * V) : nullptr;
  float* gt = dw ? xt + size_t(K) * M : nullptr;
  if (dw) {
    parallel_range(g, (M + 31) / 32, 8, [&](int64_t b0, int64_t b1, int) {
      transpose(x->data(), M, K, size_t(K), xt, int(b0 * 32), int(std::min<int64_t>(M, b1 * 32)));
    });
  }
  // Groups of the kernel's 4-panel tile, one per task (the pool hands them
  // out a few at a time, so the threads finish together); each sums its own
  // columns of db row by row (reading its panels into cache), then
  // multiplies them.
  constexpr int kGroupPanels = 4;
  const int panels = int(packed_panels(V)), groups = (panels + kGroupPanels - 1) / kGroupPanels;
  const KernelTable& kernels = g.kernels();
  parallel_tasks(g, groups, [&](int group, int) {
    const int p0 = group * kGroupPanels, p1 = std::min(panels, p0 + kGroupPanels);
    if (db) {
      for (int p = p0; p < p1; ++p) {
        // Each column's sum in row order from db's value, held in a local
        // row (registers) rather than stored back at every row.
        const float* row = dz->data() + size_t(p) * M * kPanelWidth;
        const int n0 = p * kPanelWidth, width = std::min(kPanelWidth, V - n0);
        float sums[kPanelWidth] = {};
        std::copy(db + n0, db + n0 + width, sums);
        for (int m = 0; m < M; ++m, row += kPanelWidth)
          for (int j = 0; j < kPanelWidth; ++j) sums[j] += row[j];
        std::copy(sums, sums + width, db + n0);
      }
    }
    if (dw) {
      kernels.gemm_f32(xt, size_t(M), dz->data(), nullptr, nullptr, 0, gt, size_t(V), K, V, M, p0 * kPanelWidth,
                       std::min(V, p1 * kPanelWidth), Activation::none);
    }
  });
  if (dw) {
    parallel_range(g, (K + 31) / 32, 1, [&](int64_t b0, int64_t b1, int) {
      add_transposed(gt, K, V, dw, int(b0 * 32), int(std::min<int64_t>(K, b1 * 32)));  // dw[V, K] += g^T
    });
  }
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
  const bool weight_grads = w->requires_grad || (b && b->requires_grad);
  // The logits' gradient, packed for the weight gradient's GEMM.
  Tensor<float>* dz = weight_grads ? g.make(Shape{int(packed_panels(V)), M, kPanelWidth}, false) : nullptr;
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
  const int blocks = (M + R - 1) / R;
  // One task per block (ranges of four or five blocks a task, 33 blocks on
  // two threads, could leave one thread idle for a range at the end).
  parallel_tasks(g, blocks, [&](int block, int thread) {
    // This thread's block of logits, then (rg) their gradient in their place.
    float* zb = g.scratch(thread, size_t(std::min(M, R)) * V);
    const int r0 = block * R, r1 = std::min(M, r0 + R);
    gemm_packed(kernels, r1 - r0, V, K, x->data() + size_t(r0) * K, size_t(K), w_forward->data(),
                b ? b->data() : nullptr, zb, size_t(V), false);
    for (int r = r0; r < r1; ++r) {
      float* zr = zb + size_t(r - r0) * V;
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
    if (dz) pack_block_rows(zb, V, M, r0, r1, dz->data());
  });
  CrossEntropy<float> result =
      sum_row_losses(g, row_nll->data(), row_smooth->data(), targets, pad_id, label_smoothing, rg);
  if (rg) {
    Op<float>& op = g.record(&linear_cross_entropy_backward, result.loss);
    op.in = {x, w, b, nullptr};
    op.saved = {dz, dx, nullptr};
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
