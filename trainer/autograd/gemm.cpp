// GEMM dispatch: packed platforms kernel for float, loops for double.
#include "autograd/gemm.hpp"

#include <algorithm>
#include <cstring>

#include "autograd/parallel.hpp"
#include "mt/kernels.h"

namespace mt::autograd {

namespace {

// Packs panels [p0, p1) of op(B)^T, the [N, K] "weight" gemm_f32 reads, into
// `packed` (the whole layout; only these panels are written). Rows past N are zero.
void pack_panels(const float* B, size_t ldb, BLayout layout, int N, int K, int p0, int p1, float* packed) {
  for (int p = p0; p < p1; ++p) {
    float* panel = packed + size_t(p) * K * kPanelWidth;
    const int n0 = p * kPanelWidth, width = std::min(kPanelWidth, N - n0);
    if (width < kPanelWidth) std::memset(panel, 0, size_t(K) * kPanelWidth * sizeof(float));
    if (layout == BLayout::kn) {
      // B[k, n0 .. n0 + width) is contiguous: copy it into row k of the panel.
      // A full panel's rows are copied with a constant size, inlined, rather
      // than by one library call per 64 bytes.
      if (width == kPanelWidth) {
        for (int k = 0; k < K; ++k)
          std::memcpy(panel + size_t(k) * kPanelWidth, B + size_t(k) * ldb + n0, kPanelWidth * sizeof(float));
      } else {
        for (int k = 0; k < K; ++k)
          std::memcpy(panel + size_t(k) * kPanelWidth, B + size_t(k) * ldb + n0, size_t(width) * sizeof(float));
      }
    } else {
      for (int j = 0; j < width; ++j) {
        const float* row = B + size_t(n0 + j) * ldb;
        for (int k = 0; k < K; ++k) panel[size_t(k) * kPanelWidth + j] = row[k];
      }
    }
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

}  // namespace

size_t gemm_pack_size(int N, int K) { return packed_size(N, K); }

template <>
void gemm<float>(Graph<float>& g, int M, int N, int K, const float* A, size_t lda, const float* B, size_t ldb,
                 BLayout layout, const float* bias, float* C, size_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  std::vector<float>& packed = g.pack_buffer();
  if (packed.size() < packed_size(N, K)) packed.resize(packed_size(N, K));
  const int panels = int(packed_panels(N));
  const int threads = g.num_threads();
  const int tasks = threads == 1 ? 1 : std::min(panels, threads * 4);
  const GemmF32 kernel = g.kernels().gemm_f32;
  // Each task packs its own panels, then multiplies by them: no barrier.
  parallel_tasks(g, tasks, [&](int task, int) {
    const int p0 = int(int64_t(panels) * task / tasks), p1 = int(int64_t(panels) * (task + 1) / tasks);
    if (p0 == p1) return;
    pack_panels(B, ldb, layout, N, K, p0, p1, packed.data());
    const int n_begin = p0 * kPanelWidth, n_end = std::min(N, p1 * kPanelWidth);
    kernel(A, lda, packed.data(), bias, accumulate ? C : nullptr, ldc, C, ldc, M, N, K, n_begin, n_end,
           Activation::none);
  });
}

template <>
void gemm<double>(Graph<double>& g, int M, int N, int K, const double* A, size_t lda, const double* B, size_t ldb,
                  BLayout layout, const double* bias, double* C, size_t ldc, bool accumulate) {
  parallel_range(g, M, 1, [&](int64_t m0, int64_t m1, int) {
    gemm_rows_f64(int(m0), int(m1), N, K, A, lda, B, ldb, layout, bias, C, ldc, accumulate);
  });
}

template <>
void gemm_serial<float>(const Graph<float>& g, float* pack, int M, int N, int K, const float* A, size_t lda,
                        const float* B, size_t ldb, BLayout layout, const float* bias, float* C, size_t ldc,
                        bool accumulate) {
  if (M <= 0 || N <= 0) return;
  pack_panels(B, ldb, layout, N, K, 0, int(packed_panels(N)), pack);
  g.kernels().gemm_f32(A, lda, pack, bias, accumulate ? C : nullptr, ldc, C, ldc, M, N, K, 0, N, Activation::none);
}

template <>
void gemm_serial<double>(const Graph<double>&, double*, int M, int N, int K, const double* A, size_t lda,
                         const double* B, size_t ldb, BLayout layout, const double* bias, double* C, size_t ldc,
                         bool accumulate) {
  gemm_rows_f64(0, M, N, K, A, lda, B, ldb, layout, bias, C, ldc, accumulate);
}

template <class T>
void transpose(const T* src, int R, int Cn, size_t ld, T* dst) {
  // Blocked so both sides stay in cache; the inner loop writes a contiguous
  // run of dst (strided reads hit the block's cached src lines), 2-9x faster
  // than writing with a stride of R on the [4096, N] gradients of a step.
  constexpr int kBlock = 32;
  for (int r0 = 0; r0 < R; r0 += kBlock) {
    const int r1 = std::min(R, r0 + kBlock);
    for (int c0 = 0; c0 < Cn; c0 += kBlock) {
      const int c1 = std::min(Cn, c0 + kBlock);
      for (int c = c0; c < c1; ++c) {
        T* d = dst + size_t(c) * R;
        const T* s = src + c;
        for (int r = r0; r < r1; ++r) d[r] = s[size_t(r) * ld];
      }
    }
  }
}

template <class T>
void add_transposed(const T* src, int R, int Cn, T* dst) {
  constexpr int kBlock = 32;  // as transpose: both sides stay in cache
  for (int r0 = 0; r0 < R; r0 += kBlock) {
    const int r1 = std::min(R, r0 + kBlock);
    for (int c0 = 0; c0 < Cn; c0 += kBlock) {
      const int c1 = std::min(Cn, c0 + kBlock);
      for (int c = c0; c < c1; ++c) {
        T* d = dst + size_t(c) * R;
        const T* s = src + c;
        for (int r = r0; r < r1; ++r) d[r] += s[size_t(r) * Cn];
      }
    }
  }
}

template void add_transposed<float>(const float*, int, int, float*);
template void add_transposed<double>(const double*, int, int, double*);
template void transpose<float>(const float*, int, int, size_t, float*);
template void transpose<double>(const double*, int, int, size_t, double*);

}  // namespace mt::autograd
