// GEMM dispatch: packed platforms kernel for float, loops for double.
#include "autograd/gemm.hpp"

#include <algorithm>
#include <cstring>

#include "autograd/parallel.hpp"
#include "autograd/transpose_block.hpp"
#include "mt/kernels.h"

namespace mt::autograd {

namespace {

// Packs the first `panels` panels of op(B)^T, the [N, K] "weight" gemm_f32
// reads, into `packed`. Rows past N are zero. kn: adds each row into sums
// (the block's columns; may be null) as it goes, in row order.
void pack_panels(const float* B, size_t ldb, BLayout layout, int N, int K, int panels, float* packed, float* sums) {
  const size_t panel_stride = size_t(K) * kPanelWidth;
  const int full = std::min(panels, N / kPanelWidth);  // panels of kPanelWidth columns
  const int tail = panels > full ? N - full * kPanelWidth : 0;
  if (tail) std::memset(packed + size_t(full) * panel_stride, 0, panel_stride * sizeof(float));
  if (layout == BLayout::kn) {
    // Row by row: row k of B gives its next kPanelWidth values to each panel.
    // The block's part of a row is read once, contiguously, and the rows
    // ahead are prefetched: B can be a gradient of over 100 MB with a row
    // stride of tens of KB, where a walk panel by panel waits on memory
    // latency at every row. Full panels copy a constant size, inlined.
    constexpr int kAhead = 8;
    const size_t row_bytes = (size_t(full) * kPanelWidth + size_t(tail)) * sizeof(float);
    for (int k = 0; k < K; ++k) {
      const float* row = B + size_t(k) * ldb;
      if (k + kAhead < K) {
        const char* ahead = reinterpret_cast<const char*>(row + kAhead * ldb);
        for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(ahead + b);
      }
      float* dst = packed + size_t(k) * kPanelWidth;
      for (int p = 0; p < full; ++p)
        std::memcpy(dst + size_t(p) * panel_stride, row + p * kPanelWidth, kPanelWidth * sizeof(float));
      if (tail) std::memcpy(dst + size_t(full) * panel_stride, row + full * kPanelWidth, size_t(tail) * sizeof(float));
      if (sums) accumulate(sums, row, int64_t(full) * kPanelWidth + tail);
    }
    return;
  }
  // [N, K]: each panel is the transpose of its kPanelWidth rows of B.
  for (int p = 0; p < panels; ++p) {
    const int n0 = p * kPanelWidth, width = std::min(kPanelWidth, N - n0);
    transpose_block<false>(B + size_t(n0) * ldb, ldb, packed + size_t(p) * panel_stride, size_t(kPanelWidth), width, K);
  }
}

// Rows [m0, m1) of C in double: dot products for B[N, K], row updates for B[K, N].
void gemm_rows_f64(int m0, int m1, int N, int K, const double* A, size_t lda, const double* B, size_t ldb,
                   BLayout layout, const double* bias, double* C, size_t ldc, bool accumulate) {
  for (int m = m0; m < m1; ++m) {
    const double* a = A + size_t(m) * lda;
    double* c = C + size_t(m) * ldc;
    if (!accumulate) std::fill(c, c + N, 0.0);
    if (bias)
      for (int n = 0; n < N; ++n) c[n] += bias[n];
    if (layout == BLayout::nk) {
      for (int n = 0; n < N; ++n) {
        const double* b = B + size_t(n) * ldb;
        double acc = 0.0;
        for (int k = 0; k < K; ++k) acc += a[k] * b[k];
        c[n] += acc;
      }
    } else {
      for (int k = 0; k < K; ++k) {
        const double* b = B + size_t(k) * ldb;
        const double ak = a[k];
        for (int n = 0; n < N; ++n) c[n] += ak * b[n];
      }
    }
  }
}

// Panels of B packed at a time: about 512 KB of packed values, a whole number
// of the kernel's 4-panel tiles (GemmTiling::kMaxNP), and no more than B has.
// Each block is packed into a buffer that stays in L2 and every row tile of A
// passes over it there, instead of all of B being packed to memory and read
// back: B can be a [tokens, vocabulary] gradient of over 100 MB.
constexpr size_t kBlockBytes = 512 * 1024;

int panels_per_block(int N, int K) {
  const size_t panel_bytes = size_t(std::max(K, 1)) * kPanelWidth * sizeof(float);
  const int fit = std::max(4, int(kBlockBytes / panel_bytes) / 4 * 4);
  return std::min(fit, int(packed_panels(N)));
}

// C's columns of panels [p0, p1): C = (C +) A op(B) + bias, block by block.
// `block` holds panels_per_block(N, K) packed panels. Every C[m, n] is the
// same chain of fmas whatever the blocks (mt/kernels.h). sums: gemm's
// col_sums (kn), or null.
void gemm_panels(const KernelTable& kernels, int M, int N, int K, const float* A, size_t lda, const float* B,
                 size_t ldb, BLayout layout, const float* bias, float* C, size_t ldc, bool accumulate, int p0, int p1,
                 float* block, float* sums, Activation act = Activation::none) {
  const int per_block = panels_per_block(N, K);
  for (int pb = p0; pb < p1; pb += per_block) {
    const int pe = std::min(p1, pb + per_block);
    const int n0 = pb * kPanelWidth, n1 = std::min(N, pe * kPanelWidth);
    // Columns [n0, n1) of op(B) as panels 0, 1, ... of their own.
    const float* b = layout == BLayout::kn ? B + n0 : B + size_t(n0) * ldb;
    pack_panels(b, ldb, layout, N - n0, K, pe - pb, block, sums ? sums + n0 : nullptr);
    kernels.gemm_f32(A, lda, block, bias ? bias + n0 : nullptr, accumulate ? C + n0 : nullptr, ldc, C + n0, ldc, M,
                     N - n0, K, 0, n1 - n0, act);
  }
}

}  // namespace

// At least panels_per_block(N, K) panels, and growing with N and K (callers
// size scratch for the largest product they run).
size_t gemm_pack_size(int N, int K) {
  return std::min(packed_size(N, K), std::max(kBlockBytes / sizeof(float), size_t(4) * K * kPanelWidth));
}

// Column sums of B[K, N] in row order, where no packing takes them.
template <class T>
void add_column_sums(const T* B, size_t ldb, int N, int K, T* sums) {
  for (int k = 0; k < K; ++k) accumulate(sums, B + size_t(k) * ldb, N);
}

void gemm_pack(const float* B, size_t ldb, BLayout layout, int N, int K, int p0, int p1, float* packed) {
  const int n0 = p0 * kPanelWidth;
  const float* b = layout == BLayout::kn ? B + n0 : B + size_t(n0) * ldb;
  pack_panels(b, ldb, layout, N - n0, K, p1 - p0, packed + size_t(p0) * K * kPanelWidth, nullptr);
}

void gemm_packed(const KernelTable& kernels, int M, int N, int K, const float* A, size_t lda, const float* packed,
                 const float* bias, float* C, size_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  kernels.gemm_f32(A, lda, packed, bias, accumulate ? C : nullptr, ldc, C, ldc, M, N, K, 0, N, Activation::none);
}

template <>
void gemm<float>(Graph<float>& g, int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                 BLayout layout, const float* bias, float* C, size_t ldc, bool accumulate, float* col_sums,
                 Activation act) {
  MT_AG_CHECK(!col_sums || layout == BLayout::kn, "gemm: column sums need B as [K, N]");
  MT_AG_CHECK(act == Activation::none || (act == Activation::relu && !accumulate),
              "gemm: the activation is none, or relu without accumulate");
  if (N <= 0) return;
  if (M <= 0) {
    if (col_sums) add_column_sums(B, ldb, N, K, col_sums);
    return;
  }
  const size_t pack = size_t(panels_per_block(N, K)) * K * kPanelWidth;  // per thread
  const int panels = int(packed_panels(N));
  const int threads = g.num_threads();
  std::vector<float>& packed = g.pack_buffer();
  if (packed.size() < pack * size_t(threads)) packed.resize(pack * size_t(threads));
  // Tasks: groups of at least kGroupPanels panels (the kernel's widest tile,
  // GemmTiling::kMaxNP), times ranges of rows when there are fewer groups
  // than tasks wanted. Split by panels alone, N = 128 (8 panels) made eight
  // one-panel tasks that ran 6 x 1 tiles, far below the 6 x 4's speed.
  constexpr int kGroupPanels = 4, kMinRows = 64;
  const int wanted = threads == 1 ? 1 : threads * 4;
  const int units = (panels + kGroupPanels - 1) / kGroupPanels;  // whole 4-panel tiles
  const int groups = std::clamp(panels / kGroupPanels, 1, wanted);
  const int row_ranges = std::clamp(wanted / groups, 1, std::max(1, M / kMinRows));
  // Each task packs its own panels block by block, then multiplies: no
  // barrier. Every C[m, n] is the same whatever its task (mt/kernels.h).
  // Column sums are taken by the first row range's tasks, which pack every
  // column once (the others pack the same panels again).
  parallel_tasks(g, groups * row_ranges, [&](int task, int thread) {
    const int group = task / row_ranges, range = task % row_ranges;
    // Boundaries on whole tiles: 48 panels in 8 groups of 6 ran a 6 x 2
    // tile beside every 6 x 4 (3% of a two-thread small step).
    const int p0 = std::min(panels, kGroupPanels * int(int64_t(units) * group / groups));
    const int p1 = std::min(panels, kGroupPanels * int(int64_t(units) * (group + 1) / groups));
    const int m0 = int(int64_t(M) * range / row_ranges), m1 = int(int64_t(M) * (range + 1) / row_ranges);
    if (p0 == p1 || m0 == m1) return;
    gemm_panels(g.kernels(), m1 - m0, N, K, A + size_t(m0) * lda, lda, B, ldb, layout, bias, C + size_t(m0) * ldc, ldc,
                accumulate, p0, p1, packed.data() + pack * size_t(thread), range == 0 ? col_sums : nullptr, act);
  });
}

template <>
void gemm<double>(Graph<double>& g, int M, int N, int K, const double* A, size_t lda, const double* B, size_t ldb,
                  BLayout layout, const double* bias, double* C, size_t ldc, bool accumulate, double* col_sums,
                  Activation act) {
  MT_AG_CHECK(!col_sums || layout == BLayout::kn, "gemm: column sums need B as [K, N]");
  MT_AG_CHECK(act == Activation::none || (act == Activation::relu && !accumulate),
              "gemm: the activation is none, or relu without accumulate");
  parallel_range(g, M, 1, [&](int64_t m0, int64_t m1, int) {
    gemm_rows_f64(int(m0), int(m1), N, K, A, lda, B, ldb, layout, bias, C, ldc, accumulate);
    if (act == Activation::relu)
      for (int64_t m = m0; m < m1; ++m)
        for (double* c = C + size_t(m) * ldc; c < C + size_t(m) * ldc + N; ++c) *c = *c > 0.0 ? *c : 0.0;
  });
  if (col_sums) add_column_sums(B, ldb, N, K, col_sums);
}

template <>
void gemm_serial<float>(const Graph<float>& g, float* pack, int M, int N, int K, const float* A, size_t lda,
                        const float* B, size_t ldb, BLayout layout, const float* bias, float* C, size_t ldc,
                        bool accumulate) {
  if (M <= 0 || N <= 0) return;
  gemm_panels(g.kernels(), M, N, K, A, lda, B, ldb, layout, bias, C, ldc, accumulate, 0, int(packed_panels(N)), pack,
              nullptr);
}

template <>
void gemm_serial<double>(const Graph<double>&, double*, int M, int N, int K, const double* A, size_t lda,
                         const double* B, size_t ldb, BLayout layout, const double* bias, double* C, size_t ldc,
                         bool accumulate) {
  gemm_rows_f64(0, M, N, K, A, lda, B, ldb, layout, bias, C, ldc, accumulate);
}

template <class T>
void transpose(const T* src, int R, int Cn, size_t ld, T* dst, int r_begin, int r_end) {
  // Blocked so both sides stay in cache; each block writes contiguous runs
  // of dst (strided reads hit the block's cached src lines), 2-9x faster
  // than writing with a stride of R on the [4096, N] gradients of a step.
  constexpr int kBlock = 32;
  for (int r0 = r_begin; r0 < r_end; r0 += kBlock) {
    const int r1 = std::min(r_end, r0 + kBlock);
    for (int c0 = 0; c0 < Cn; c0 += kBlock) {
      const int c1 = std::min(Cn, c0 + kBlock);
      transpose_block<false>(src + size_t(r0) * ld + c0, ld, dst + size_t(c0) * R + r0, size_t(R), r1 - r0, c1 - c0);
    }
  }
}

template <class T>
void add_transposed(const T* src, int R, int Cn, T* dst, int r_begin, int r_end) {
  constexpr int kBlock = 32;  // as transpose: both sides stay in cache
  for (int r0 = r_begin; r0 < r_end; r0 += kBlock) {
    const int r1 = std::min(r_end, r0 + kBlock);
    for (int c0 = 0; c0 < Cn; c0 += kBlock) {
      const int c1 = std::min(Cn, c0 + kBlock);
      transpose_block<true>(src + size_t(r0) * Cn + c0, size_t(Cn), dst + size_t(c0) * R + r0, size_t(R), r1 - r0,
                            c1 - c0);
    }
  }
}

template void add_transposed<float>(const float*, int, int, float*, int, int);
template void add_transposed<double>(const double*, int, int, double*, int, int);
template void transpose<float>(const float*, int, int, size_t, float*, int, int);
template void transpose<double>(const double*, int, int, size_t, double*, int, int);

}  // namespace mt::autograd
