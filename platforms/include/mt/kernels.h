// The compute kernels libmt runs on: a table of function pointers per ISA.
//
// Every kernel is a free function on raw pointers and sizes: no allocation,
// no exceptions, no state. Each SIMD kernel (platforms/simd/, instantiated per
// ISA in platforms/x86/) has a scalar reference of the same name in
// platforms/ref/, and tests/test_kernels.cpp runs every ISA against it.
//
// Determinism: in every kernel each output element is computed by one fixed
// sequence of operations that does not depend on M, on the tile it falls in or
// on the [n_begin, n_end) split. Results are therefore bit-identical whatever
// the batch composition and the number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mt/activation.hpp"

namespace mt {

// The constants of the e^x every swish computes (platforms/ref/activations.cpp
// says how): the clamp, 1 / ln 2, the rounding shift 1.5 * 2^23, ln 2 in two
// parts, and Cephes expf's polynomial, highest power first.
inline constexpr float kExpF32Min = -87.0f, kExpF32Max = 88.0f;
inline constexpr float kLog2E = 1.44269504088896341f, kRoundShift = 12582912.0f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f, kExpP2 = 8.3334519073e-3f,
                       kExpP3 = 4.1665795894e-2f, kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;

// swish / SiLU, x * sigmoid(x) (Ramachandran et al. 2017), through that e^x:
// the reference whose bits every int8 epilogue and the GPU repeat.
float swish_f32_ref(float x);
float exp_f32_ref(float x);  // within 2 ulp on [kExpF32Min, kExpF32Max], clamped outside

// Weights of a linear layer W[N, K] are stored packed in panels of
// kPanelWidth output columns: element (n, k) lives at
//   (n / kPanelWidth) * K * kPanelWidth + k * kPanelWidth + n % kPanelWidth.
// Rows past N in the last panel are zero. One layout for every ISA (a zmm is
// one panel row, two ymm on AVX2, four q-registers on NEON), so model files
// are used in place from the mapping on any machine.
inline constexpr int kPanelWidth = 16;

inline constexpr size_t packed_panels(int N) { return (size_t(N) + kPanelWidth - 1) / kPanelWidth; }
inline constexpr size_t packed_size(int N, int K) { return packed_panels(N) * kPanelWidth * size_t(K); }

// Writes W[N, K] (row-major) into the packed layout above; `packed` holds packed_size(N, K) floats.
void pack_weights_f32(const float* w, int N, int K, float* packed);
// The inverse: W[N, K] row-major from the packed layout (padding rows dropped).
void unpack_weights_f32(const float* packed, int N, int K, float* w);
// Reads W[n, k] back from the packed layout.
inline float packed_at(const float* packed, int K, int n, int k) {
  return packed[size_t(n / kPanelWidth) * K * kPanelWidth + size_t(k) * kPanelWidth + n % kPanelWidth];
}

// C[m, n] = act(sum_k A[m, k] * W[n, k] + bias[n]) + residual[m, n]   for n in [n_begin, n_end)
// A: [M, K] with row stride lda; Wp: packed W[N, K]; bias: [N] or null;
// residual: [M, N] with row stride ldr, or null; C: [M, N] with row stride ldc.
// n_begin is a multiple of kPanelWidth; n_end is a multiple of it or N.
// C may alias residual (same pointer and stride), never A.
using GemmF32 = void (*)(const float* A, size_t lda, const float* Wp, const float* bias, const float* residual,
                         size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);

// One row: y = (x - mean) / sqrt(var + eps) * gamma + beta, over C values. y may alias x.
using LayerNormF32 = void (*)(const float* x, const float* gamma, const float* beta, float* y, int C, float eps);

// One row in place: x = exp(x - max) / sum.
using SoftmaxF32 = void (*)(float* x, int n);

// One row: y = x - max - log(sum(exp(x - max))). y may alias x. Returns the log-sum-exp.
using LogSoftmaxF32 = float (*)(const float* x, float* y, int n);

// One row's log-sum-exp, nothing written: *max = max(x) and *log_sum =
// log(sum(exp(x - max))), the two numbers log_softmax_f32 subtracts
// (y = x - max - log_sum, in that order), computed exactly as it computes
// them. n <= 0: -inf and 0.
using LogSumExpF32 = void (*)(const float* x, int n, float* max, float* log_sum);

// top_k_f32 of log_softmax_f32(x) without writing the row: the k largest
// log-probabilities x - max - log_sum (the same floats log_softmax_f32
// writes), largest first, equal values in index order. The search's
// selection when nothing else changes the row between the two.
using LogSoftmaxTopKF32 = void (*)(const float* x, int n, int k, float* values, int32_t* indices, int* count);

// One row from a saved log-sum-exp `shift`, i < n (n <= 0: nothing written):
//   y[i] = scale * exp(x[i] - shift) - offset   (accumulate: y[i] += that)
// The multiply and subtraction may be one fma; y may alias x. With shift =
// log_sum_exp(x), exp(x - shift) is softmax(x) without its max and sum
// passes: the gradient of mt_train's cross entropy (trainer/autograd/loss.cpp).
using ScaledExpF32 = void (*)(const float* x, int n, float shift, float scale, float offset, float* y, bool accumulate);

// One row: index of the largest value (first one on ties); its value in *max_value.
using ArgmaxF32 = int (*)(const float* x, int n, float* max_value);

// One row: the k largest values of x[0, n), largest first, equal values in
// index order (so k = 1 agrees with argmax); -inf and NaN are never taken.
// Writes *count <= k pairs into values and indices (fewer when the row has
// fewer candidates). 1 <= k <= kTopKMax. Beam search's selection.
inline constexpr int kTopKMax = 512;
using TopKF32 = void (*)(const float* x, int n, int k, float* values, int32_t* indices, int* count);

// One token: y[c] = table[id, c] * scale + position[c], c < C.
// table: packed [V, C] (the layout above, so tied output projections share it).
using EmbedF32 = void (*)(const float* table_packed, int C, int id, float scale, const float* position, float* y);

// Scaled dot-product attention of one head (Vaswani et al. 2017, eq. 1):
// for each query i < Tq:
//   out[i] = sum_j softmax_j(scale * q[i] . k[j]) v[j],   j < min(Tk, i + causal_offset + 1)
// or j < Tk when causal_offset < 0 (no causal mask). Rows are dh floats:
// q[i] at q + i * q_stride, k[j] at k + j * kv_stride, v[j] at v + j * kv_stride,
// out[i] at out + i * out_stride. scratch holds Tk floats; after the call it
// holds the last query's attention weights (its softmax, one per key it saw),
// which word alignments read.
// Padding is expressed by Tk: keys past the sentence are never read.
using AttentionF32 = void (*)(const float* q, size_t q_stride, const float* k, const float* v, size_t kv_stride,
                              float* out, size_t out_stride, int Tq, int Tk, int dh, float scale, int causal_offset,
                              float* scratch);

// --- int8 ---------------------------------------------------------------
// Linear layers of int8 models (quantize/, mt_quantize) multiply unsigned
// 8-bit activations by signed 8-bit weights into exact int32 sums, then
// dequantize in a fused float epilogue.
//
// Weights W[N, K] (int8, one scale per output row n) are stored in panels of
// kPanelWidth output columns with K in groups of 4 ("packed_k4n16"): element
// (n, k) lives at
//   (n / 16) * Kp * 16 + (k / 4) * 64 + (n % 16) * 4 + k % 4,   Kp = round_up(K, 4).
// One 64-byte row of a panel is the operand of one vpdpbusd (16 columns x 4
// k). Padding (n >= N or k >= K) is zero.
inline constexpr int kInt8KGroup = 4;
inline constexpr int padded_k_i8(int K) { return (K + kInt8KGroup - 1) / kInt8KGroup * kInt8KGroup; }
inline constexpr size_t packed_size_i8(int N, int K) { return packed_panels(N) * kPanelWidth * size_t(padded_k_i8(K)); }
inline constexpr size_t packed_offset_i8(int K, int n, int k) {
  return size_t(n / kPanelWidth) * size_t(padded_k_i8(K)) * kPanelWidth + size_t(k / 4) * 64 +
         size_t(n % kPanelWidth) * 4 + size_t(k % 4);
}
// Writes W[N, K] (row-major int8) into the layout above; `packed` holds packed_size_i8(N, K) bytes.
void pack_weights_i8(const int8_t* w, int N, int K, int8_t* packed);
// Its inverse: the row-major W[N, K] back from `packed`.
void unpack_weights_i8(const int8_t* packed, int N, int K, int8_t* w);
inline int8_t packed_at_i8(const int8_t* packed, int K, int n, int k) { return packed[packed_offset_i8(K, n, k)]; }

// Activations are quantized per row: a = (q - zero) * scale with q in [0, 255]:
//   q[m, k] = clamp(nearbyint(A[m, k] * (1 / scale[m])) + zero[m], 0, 255)  (round half to even)
// Dynamic (static_scale <= 0): each row's scale and zero come from its own
// range, widened to include 0 so that 0 is exact:
//   lo = min(0, min_k A), hi = max(0, max_k A), scale = (hi - lo) / 255
//   (1 when that is not positive, e.g. hi == lo), zero = clamp(nearbyint(-lo / scale), 0, 255).
// NaN inputs are skipped by the range and quantize to 0.
// Static: every row uses (static_scale, static_zero), e.g. from calibration.
// Columns [K, Kp) of each row of Aq are set to 0. scales[m] and zeros[m] are written for every row.
// A: [M, K] row stride lda; Aq: [M, Kp] row stride ldq >= Kp.
// The u8 grid of a range [lo, hi] containing 0, as above: what dynamic rows
// use, and what calibration (quantize/) turns its chosen ranges into. Out of
// line and shared by every ISA, so scales and zeros are bit-identical everywhere.
void quantize_range_u8(float lo, float hi, float* scale, int32_t* zero);

using QuantizeRowsU8 = void (*)(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                                int32_t* zeros, float static_scale, int32_t static_zero);

// C[m, n] = act(float(acc[m, n] - a_zero[m] * w_sum[n]) * (a_scale[m] * w_scale[n]) + bias[n]) + residual[m, n]
//   acc[m, n] = sum_{k < Kp} Aq[m, k] * W[n, k]     (exact in int32)
// for n in [n_begin, n_end). w_sum[n] = sum_k W[n, k] (precomputed with the
// packing). a_zero == nullptr leaves the zero point out (w_sum may then be
// null too): for layers whose compensation is folded into the bias. The float epilogue runs in exactly this order (no
// fma contraction), so every ISA gives bit-identical C. Aq: [M, Kp] row stride lda (quantized by QuantizeRowsU8); Wp:
// packed_k4n16; bias and residual as in GemmF32 (either may be null; C may alias residual). n_begin is a multiple of
// kPanelWidth; n_end is a multiple of it or N.
using GemmU8S8 = void (*)(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                          const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                          size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end,
                          Activation act);

// One token of an int8 embedding table (packed_k4n16 [V, C], scales [V]):
//   y[c] = float(W[id, c]) * row_scale[id] * scale + position[c]   (in this order)
using EmbedI8 = void (*)(const int8_t* table_packed, const float* row_scales, int C, int id, float scale,
                         const float* position, float* y);

struct KernelTable {
  const char* isa;  // "ref", "avx2", "avx512", "avx512vnni", "neon", "neon_dotprod", "wasm_simd128"
  GemmF32 gemm_f32;
  LayerNormF32 layer_norm_f32;
  SoftmaxF32 softmax_f32;
  LogSoftmaxF32 log_softmax_f32;
  ArgmaxF32 argmax_f32;
  TopKF32 top_k_f32;
  LogSumExpF32 log_sum_exp_f32;
  LogSoftmaxTopKF32 log_softmax_top_k_f32;
  ScaledExpF32 scaled_exp_f32;
  EmbedF32 embed_f32;
  AttentionF32 attention_f32;
  QuantizeRowsU8 quantize_rows_u8;
  GemmU8S8 gemm_u8s8;
  EmbedI8 embed_i8;
};

// The scalar reference kernels: plain C++, the ground truth of the tests.
const KernelTable& reference_kernels();

// The best table this CPU runs, chosen once on first use. The environment
// variable MT_ISA (ref, avx2, avx512, avx512vnni; neon, neon_dotprod on
// aarch64; wasm_simd128 in WebAssembly) asks for a lower one, e.g. to compare.
const KernelTable& best_kernels();

// Every table this CPU can run, reference first: what the kernel tests iterate over.
std::span<const KernelTable* const> available_kernels();

// Names of the ISA tables compiled into this build that this CPU cannot run
// (reported as skipped by the tests).
std::span<const char* const> unavailable_kernels();

}  // namespace mt
