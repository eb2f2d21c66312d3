// GEMM on packed weights, written once with xsimd and instantiated per ISA
// (platforms/x86/). C[m, n] = act(A[m, :] . W[n, :] + bias[n]) + residual[m, n].
//
// Determinism (mt/kernels.h): every C[m, n] is computed by the same sequence
// whatever M, the tile it falls in and [n_begin, n_end): a float accumulator
// starting at 0, one fma per k in increasing k, then + bias, activation,
// + residual. Tiles only change how many such chains run side by side. Do not
// keep several partial sums per element here: a long K runs in chunks only by
// parking each chain's accumulator between them (gemm_f32_long_k), which
// continues the same chain.
//
// Everything is a template on Arch, so the ISA translation units share no
// symbol that could leak their instructions into generic code; for the same
// reason this code avoids std:: functions (an inline std::max compiled with
// -mavx512f could be the copy the linker keeps for everybody).
#pragma once

#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"

namespace mt::simd {

// Everything a tile needs besides its position.
struct GemmArgs {
  const float* A;
  size_t lda;
  const float* Wp;
  const float* bias;
  const float* residual;
  size_t ldr;
  float* C;
  size_t ldc;
  int K;
  int n_end;
  Activation act;
};

// Register tiling per ISA. A panel is kPanelWidth floats: one zmm, two ymm.
template <class Arch>
struct GemmTiling {
  using V = xsimd::batch<float, Arch>;
  static constexpr int kVecPerPanel = kPanelWidth / int(V::size);
  // Rows per tile, and panels per tile for MR = kMaxMR: kMaxMR * kMaxNP *
  // kVecPerPanel accumulators plus the weight vectors must fit the register
  // file (32 zmm; 16 ymm on AVX2). AVX-512: 6 x 4 (24 accumulators, 4
  // weight vectors, 1 broadcast: 29 zmm) reads the weights from L2 once per
  // 6 rows; on an Intel Xeon with two FMA ports (175 GFLOP/s peak) it runs
  // M = 256 GEMMs with N >= 1024 17-21% faster than 4 x 4, others alike
  // (bench_kernels --benchmark_filter=gemm_f32/avx512/M:256). AVX2: 6 x 1
  // (12 accumulators, 2 weight vectors, 1 broadcast: 15 ymm), the 6 x 16
  // tile of BLAS's Haswell kernels; 4 x 1 had 8 chains, just enough for two
  // FMA pipes of latency 4, and loaded each weight vector for 4 rows only
  // (a tiny training step, one thread, AMD EPYC Zen 3: 8.7% faster, best of
  // 5 alternating runs). NEON (4 vectors per panel) stays 4 x 1.
  static constexpr int kMaxMR = kVecPerPanel == 4 ? 4 : 6;
  static constexpr int kMaxNP = kVecPerPanel == 1 ? 4 : 1;
  // M = 1 (decoding) is a weight stream: more panels at once hide the FMA
  // latency with independent chains.
  static constexpr int kGemvNP = kVecPerPanel == 1 ? 8 : 4;
  // ... except where the weights of the call fit in L2 (under kGemvL2Bytes):
  // there 6 zmm panels beat 8 by 3-11% on Zen 5 (256x256 .. 512x512), while
  // 8 stays ahead on 256x1024 (1 MiB, 8% faster than 6) and beyond.
  static constexpr int kGemvNPL2 = kVecPerPanel == 1 ? 6 : 4;
  static constexpr size_t kGemvL2Bytes = 1024 * 1024;
  // Weight bytes one N block keeps in L2 while every row tile passes over it.
  static constexpr size_t kL2BlockBytes = 512 * 1024;
  // How far ahead (in k rows of a panel) to prefetch weights.
  static constexpr int kPrefetchRows = 16;
  // Longest K for which gemm_f32 prefetches the next row tile of A.
  static constexpr int kPrefetchNextRowsK = 768;
};

template <class Arch>
inline xsimd::batch<float, Arch> gelu_f32(xsimd::batch<float, Arch> x) {
  using V = xsimd::batch<float, Arch>;
  const V half(0.5f), one(1.0f), inv_sqrt2(0.70710678118654752f);
  return half * x * (one + xsimd::erf(x * inv_sqrt2));
}

// swish_f32_ref's operations one for one (platforms/ref/activations.cpp), so
// in a translation unit compiled with -ffp-contract=off (the int8 kernels')
// the bits are the reference's. Internal linkage: the fp32 kernels' unit
// (which may contract into fmas) instantiates them for the same Arch, and the
// linker must not give the int8 unit that copy (it did, on aarch64).
namespace {

template <class Arch>
inline xsimd::batch<float, Arch> exp_f32(xsimd::batch<float, Arch> x) {
  using V = xsimd::batch<float, Arch>;
  using I = xsimd::batch<int32_t, Arch>;
  x = xsimd::select(x < V(kExpF32Min), V(kExpF32Min), x);  // NaN stays NaN, as ref
  x = xsimd::select(x > V(kExpF32Max), V(kExpF32Max), x);
  const V shifted = x * V(kLog2E) + V(kRoundShift);
  const V n = shifted - V(kRoundShift);
  V r = x - n * V(kLn2Hi);
  r = r - n * V(kLn2Lo);
  V p(kExpP0);
  p = p * r + V(kExpP1);
  p = p * r + V(kExpP2);
  p = p * r + V(kExpP3);
  p = p * r + V(kExpP4);
  p = p * r + V(kExpP5);
  const V y = p * (r * r) + r + V(1.0f);
  const I n_bits = xsimd::bitwise_cast<I>(shifted) - xsimd::bitwise_cast<I>(V(kRoundShift));
  return y * xsimd::bitwise_cast<V>((n_bits + I(127)) << 23);
}

// a / b rounded once, as the reference's: xsimd divides on NEON by a
// reciprocal estimate and Newton steps, which is not.
template <class Arch>
inline xsimd::batch<float, Arch> divide_exact(xsimd::batch<float, Arch> a, xsimd::batch<float, Arch> b) {
#if defined(__aarch64__)
  if constexpr (std::is_base_of_v<xsimd::neon64, Arch>) return xsimd::batch<float, Arch>(vdivq_f32(a, b));
#endif
  return a / b;
}

template <class Arch>
inline xsimd::batch<float, Arch> swish_f32(xsimd::batch<float, Arch> x) {
  using V = xsimd::batch<float, Arch>;
  return divide_exact<Arch>(x, V(1.0f) + exp_f32<Arch>(-x));
}

}  // namespace

// Bias, activation, residual on one vector of outputs. bias and residual
// point at this vector's columns (or are null).
template <class Arch>
inline xsimd::batch<float, Arch> gemm_epilogue(xsimd::batch<float, Arch> x, const float* bias, const float* residual,
                                               Activation act) {
  using V = xsimd::batch<float, Arch>;
  if (bias) x += V::load_unaligned(bias);
  if (act == Activation::relu) x = xsimd::select(x > V(0.0f), x, V(0.0f));  // as ref, NaN -> 0
  if (act == Activation::gelu) x = gelu_f32<Arch>(x);
  if (act == Activation::swish) x = swish_f32<Arch>(x);
  if (residual) x += V::load_unaligned(residual);
  return x;
}

// The k a tile runs, [k0, k1), and where its accumulators wait between the
// chunks of a long K: `park` holds them raw, row r's vector j at
// park[r * kParkStride + j * W]. resume: start from the parked values, not
// 0; suspend: park them, not finish through the epilogue into C.
// next_rows: T::kMaxMR rows of A (row stride g.lda, K columns) the tile
// fetches into cache as it goes, one line every few k, or null.
struct GemmKRange {
  int k0, k1;
  float* park;
  bool resume, suspend;
  const float* next_rows = nullptr;
};

// One MR x NP tile: rows [m0, m0 + MR), panels [p0, p0 + NP). Columns at or
// past g.n_end are computed (on zero padding or neighbouring columns) but
// never stored.
template <class Arch, int MR, int NP, bool kNext = false>
void gemm_tile_f32(const GemmArgs& g, int m0, int p0, const GemmKRange& kr) {
  using T = GemmTiling<Arch>;
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  constexpr int VP = T::kVecPerPanel;
  constexpr int NV = NP * VP;
  const size_t panel_stride = size_t(g.K) * kPanelWidth;
  // k counts from the range's start, so the loop is the whole-K loop's.
  const int K = kr.k1 - kr.k0, prefetch_end = g.K - kr.k0 - T::kPrefetchRows;
  const float* w = g.Wp + size_t(p0) * panel_stride + size_t(kr.k0) * kPanelWidth;
  const float* a[MR];
  for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda + kr.k0;
  // Past its panels' last rows, row k - prefetch_end of the next NP panels
  // (the next tile's in a row of tiles), which tiles had started cold (1-3%
  // faster on every shape but the longest K): at wk + next_offset, or at wk
  // itself (offset 0) where those panels do not all exist or K is short, so
  // that the address stays inside Wp.
  const int panels = (g.n_end + kPanelWidth - 1) / kPanelWidth;
  const bool next_exist = p0 + 2 * NP <= panels && K >= T::kPrefetchRows;
  const ptrdiff_t next_offset =
      next_exist ? ptrdiff_t(NP) * ptrdiff_t(panel_stride) - ptrdiff_t(prefetch_end) * kPanelWidth : 0;

  // The tile's lines of C, fetched while its fmas run: with a short K the
  // stores at the end found them in L3 or memory and waited (a [4096, 128]
  // x [128, 256] product 10-17% faster on an Intel Xeon, bench/gemm_ab.cpp).
  if (!kr.suspend)
    for (int r = 0; r < MR; ++r)
      for (int p = 0; p < NP; ++p) __builtin_prefetch(g.C + size_t(m0 + r) * g.ldc + (p0 + p) * kPanelWidth);
  constexpr size_t kParkStride = size_t(T::kMaxNP) * kPanelWidth;
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) acc[r][j] = kr.resume ? V::load_unaligned(kr.park + r * kParkStride + j * W) : V(0.0f);

  for (int k = 0; k < K; ++k) {
    const float* wk = w + size_t(k) * kPanelWidth;
    V wv[NV];
    const bool prefetch = k < prefetch_end;  // these panels' rows ahead
    // Row k % 16's line at column k - k % 16: every line of the rows once
    // in 16 k, spread out, as a burst of them stalled on the fill buffers.
    if constexpr (kNext)
      if ((k & 15) < T::kMaxMR) __builtin_prefetch(kr.next_rows + size_t(k & 15) * g.lda + (k & ~15));
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      if (prefetch)
        __builtin_prefetch(wk + p * panel_stride + T::kPrefetchRows * kPanelWidth);
      else
        __builtin_prefetch(wk + (ptrdiff_t(p * panel_stride) + next_offset));
      for (int v = 0; v < VP; ++v) wv[p * VP + v] = V::load_unaligned(wk + p * panel_stride + v * W);
    }
#pragma GCC unroll 8  // whole: a partly unrolled loop keeps acc in memory (half the speed at MR 6)
    for (int r = 0; r < MR; ++r) {
      const V ar(a[r][k]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[r][j] = xsimd::fma(ar, wv[j], acc[r][j]);
    }
  }

  if (kr.suspend) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NV; ++j) acc[r][j].store_unaligned(kr.park + r * kParkStride + j * W);
    return;
  }
  for (int p = 0; p < NP; ++p) {
    const int n0 = (p0 + p) * kPanelWidth;
    const int cols = g.n_end - n0 < kPanelWidth ? g.n_end - n0 : kPanelWidth;
    for (int r = 0; r < MR; ++r) {
      float* c = g.C + size_t(m0 + r) * g.ldc + n0;
      const float* res = g.residual ? g.residual + size_t(m0 + r) * g.ldr + n0 : nullptr;
      if (cols == kPanelWidth) {
        for (int v = 0; v < VP; ++v) {
          const V y = gemm_epilogue<Arch>(acc[r][p * VP + v], g.bias ? g.bias + n0 + v * W : nullptr,
                                          res ? res + v * W : nullptr, g.act);
          y.store_unaligned(c + v * W);
        }
      } else {
        // Last, partial panel: bias, residual and C end at column n_end, so
        // go through padded copies; the arithmetic is the same as above.
        alignas(64) float b[kPanelWidth] = {}, rs[kPanelWidth] = {}, out[kPanelWidth];
        for (int i = 0; i < cols; ++i) {
          if (g.bias) b[i] = g.bias[n0 + i];
          if (res) rs[i] = res[i];
        }
        for (int v = 0; v < VP; ++v) {
          const V y =
              gemm_epilogue<Arch>(acc[r][p * VP + v], g.bias ? b + v * W : nullptr, res ? rs + v * W : nullptr, g.act);
          y.store_unaligned(out + v * W);
        }
        for (int i = 0; i < cols; ++i) c[i] = out[i];
      }
    }
  }
}

// Picks the tile instantiation for a run-time (mr, np) with mr <= MR, np <= NP.
template <class Arch, int MR, int NP>
void gemm_tile_dispatch_f32(const GemmArgs& g, int m0, int p0, int mr, int np, const GemmKRange& kr) {
  if constexpr (MR > 1) {
    if (mr < MR) return gemm_tile_dispatch_f32<Arch, MR - 1, NP>(g, m0, p0, mr, np, kr);
  }
  if constexpr (NP > 1) {
    if (np < NP) return gemm_tile_dispatch_f32<Arch, MR, NP - 1>(g, m0, p0, mr, np, kr);
  }
  // kr.next_rows (set for full-height tiles only): a copy of the loop that
  // prefetches them (a test at every k cost compute-bound tiles 2-4%).
  if constexpr (MR == GemmTiling<Arch>::kMaxMR) {
    if (kr.next_rows) return gemm_tile_f32<Arch, MR, NP, true>(g, m0, p0, kr);
  }
  gemm_tile_f32<Arch, MR, NP>(g, m0, p0, kr);
}

// M > 1 where one tile's panels outgrow twice the L2 block (K above 4,096
// for AVX-512's 4 panels, 16,384 for one panel): whole-K tiles would stream
// their weights from L3 or memory once per MR rows (the output layer's input
// gradient in training, K = 8,000, ran at ~105 GFLOP/s at best against
// ~140 chunked, on an AVX-512 Xeon). Instead, per group of panels, a
// group of row tiles passes over K chunk by chunk, each chunk of weights (the
// L2 block) read once for all of them; between chunks every accumulator is
// parked on the stack and taken up again, so each C[m, n] is still the one
// chain of fmas. (At K = 4,096 the whole-K tiles were as fast: 1 MB of
// panels stays in a 2 MB L2.)
template <class Arch>
void gemm_f32_long_k(const GemmArgs& g, int M, int p_begin, int p_end) {
  using T = GemmTiling<Arch>;
  constexpr int kGroupRows = T::kMaxMR * 16;
  constexpr int kChunk = int(T::kL2BlockBytes / (size_t(T::kMaxNP) * kPanelWidth * sizeof(float)));
  constexpr size_t kTileFloats = size_t(T::kMaxMR) * T::kMaxNP * kPanelWidth;
  alignas(64) float park[kGroupRows / T::kMaxMR * kTileFloats];
  for (int p = p_begin; p < p_end; p += T::kMaxNP) {
    const int np = p_end - p < T::kMaxNP ? p_end - p : T::kMaxNP;
    for (int m0 = 0; m0 < M; m0 += kGroupRows) {
      const int m1 = M - m0 < kGroupRows ? M : m0 + kGroupRows;
      for (int k0 = 0; k0 < g.K; k0 += kChunk) {
        const int k1 = g.K - k0 < kChunk ? g.K : k0 + kChunk;
        for (int m = m0; m < m1; m += T::kMaxMR) {
          const int mr = m1 - m < T::kMaxMR ? m1 - m : T::kMaxMR;
          const GemmKRange kr{k0, k1, park + size_t((m - m0) / T::kMaxMR) * kTileFloats, k0 > 0, k1 < g.K};
          gemm_tile_dispatch_f32<Arch, T::kMaxMR, T::kMaxNP>(g, m, p, mr, np, kr);
        }
      }
    }
  }
}

template <class Arch>
void gemm_f32(const float* A, size_t lda, const float* Wp, const float* bias, const float* residual, size_t ldr,
              float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act) {
  using T = GemmTiling<Arch>;
  if (M <= 0 || n_begin >= n_end) return;
  const GemmArgs g{A, lda, Wp, bias, residual, ldr, C, ldc, K, n_end, act};
  const int p_begin = n_begin / kPanelWidth;
  const int p_end = (n_end + kPanelWidth - 1) / kPanelWidth;
  const GemmKRange whole_k{0, K, nullptr, false, false};

  if (M == 1) {
    if constexpr (T::kGemvNPL2 != T::kGemvNP) {
      const size_t bytes = size_t(p_end - p_begin) * size_t(K) * kPanelWidth * sizeof(float);
      if (bytes < T::kGemvL2Bytes) {
        for (int p = p_begin; p < p_end; p += T::kGemvNPL2) {
          const int np = p_end - p < T::kGemvNPL2 ? p_end - p : T::kGemvNPL2;
          gemm_tile_dispatch_f32<Arch, 1, T::kGemvNPL2>(g, 0, p, 1, np, whole_k);
        }
        return;
      }
    }
    for (int p = p_begin; p < p_end; p += T::kGemvNP) {
      const int np = p_end - p < T::kGemvNP ? p_end - p : T::kGemvNP;
      gemm_tile_dispatch_f32<Arch, 1, T::kGemvNP>(g, 0, p, 1, np, whole_k);
    }
    return;
  }

  // N blocks sized for L2, each swept by every row tile while it is hot.
  const size_t panel_bytes = size_t(K) * kPanelWidth * sizeof(float);
  if (size_t(T::kMaxNP) * panel_bytes > 2 * T::kL2BlockBytes) return gemm_f32_long_k<Arch>(g, M, p_begin, p_end);
  int block = int(T::kL2BlockBytes / (panel_bytes ? panel_bytes : 1));
  block = block < T::kMaxNP ? T::kMaxNP : block / T::kMaxNP * T::kMaxNP;
  for (int pb = p_begin; pb < p_end; pb += block) {
    const int pe = p_end - pb < block ? p_end : pb + block;
    for (int m = 0; m < M; m += T::kMaxMR) {
      const int mr = M - m < T::kMaxMR ? M - m : T::kMaxMR;
      // The first tile of a row fetches the next row tile's A as it runs:
      // with K up to T::kPrefetchNextRowsK those rows are a few KB, and the
      // tiles of a narrow N (128-256 columns) are too few to hide their
      // fetch (K = 768, N = 256: 15% faster). With a longer K the lines
      // crowd L1 (K = 1,024: 1-4% slower; 4,096: 10% in a first version).
      GemmKRange first = whole_k;
      if (K <= T::kPrefetchNextRowsK && m + 2 * T::kMaxMR <= M) first.next_rows = A + size_t(m + T::kMaxMR) * lda;
      for (int p = pb; p < pe; p += T::kMaxNP) {
        const int np = pe - p < T::kMaxNP ? pe - p : T::kMaxNP;
        gemm_tile_dispatch_f32<Arch, T::kMaxMR, T::kMaxNP>(g, m, p, mr, np, p == pb ? first : whole_k);
      }
    }
  }
}

}  // namespace mt::simd
