// The CUDA kernels of libmt's GPU backend, as host launchers callable from
// plain C++ (no CUDA header needed: lib/ includes this from .cpp files).
//
// Conventions:
// - Pointers are device pointers unless a comment says otherwise. Matrices are
//   row-major; [M, C] means M rows of C floats, contiguous unless a row stride
//   (ld*, in elements) is given.
// - Every launcher enqueues on the caller's stream (the runtime's
//   cudaStream_t; null is the legacy default stream), allocates nothing and
//   returns at once. Its status reports bad arguments and launch failures
//   only; faults during execution surface at the next synchronisation.
// - Each kernel computes what the CPU reference of the same op computes
//   (platforms/ref/, signatures in mt/kernels.h), up to float rounding where
//   sums run in another order; tests/cuda/ checks each against it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mt/kernels.h"  // Activation

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace mt {

using CudaStream = CUstream_st*;

// 0 on success; otherwise a cudaError_t value, or kCublasStatusBase plus a
// cublasStatus_t value for cuBLAS failures.
using CudaStatus = int;
inline constexpr CudaStatus kCublasStatusBase = 100000;
// A readable name for a status (static storage).
const char* cuda_status_string(CudaStatus status);

// --- embeddings ---------------------------------------------------------
// Token embeddings times `scale` plus positional encodings (section 3.4),
// in the order of embed_f32_ref / embed_i8_ref, so results are bit-identical:
//   y[m, c] = table[ids[m], c] * scale + pos_table[p(m), c]
//   p(m) = positions ? positions[m] : position.   No addition when pos_table is null.
// table: [V, C] (plain row-major, not the CPU's packed panels); ids,
// positions: [M]; pos_table: [P, C]; y: [M, C].
CudaStatus embed_f32_cuda(const float* table, int C, const int32_t* ids, int M, float scale, const float* pos_table,
                          const int32_t* positions, int position, float* y, CudaStream stream);
// int8 table [V, C] with one scale per row [V]:
//   y[m, c] = float(table[ids[m], c]) * row_scales[ids[m]] * scale + pos_table[p(m), c]
CudaStatus embed_i8_cuda(const int8_t* table, const float* row_scales, int C, const int32_t* ids, int M, float scale,
                         const float* pos_table, const int32_t* positions, int position, float* y, CudaStream stream);
// fp16 table [V, C] (IEEE binary16 bits): y[m, c] = float(table[ids[m], c]) * scale + pos_table[p(m), c],
// the bits of embed_f32_cuda on the table widened to float.
CudaStatus embed_f16_cuda(const uint16_t* table, int C, const int32_t* ids, int M, float scale, const float* pos_table,
                          const int32_t* positions, int position, float* y, CudaStream stream);

// --- normalisation and epilogues ----------------------------------------
// LayerNorm of each row of s = x + residual (x alone when residual is null):
//   y = (s - mean) / sqrt(var + eps) * gamma + beta   (two passes, as layer_norm_f32_ref)
// s is also stored in sum_out when it is not null (the residual stream of a
// pre-norm layer). x, residual, sum_out, y: [M, C]; gamma, beta: [C].
// y and sum_out may alias x or residual.
CudaStatus layer_norm_f32_cuda(const float* x, const float* residual, float* sum_out, const float* gamma,
                               const float* beta, float* y, int M, int C, float eps, CudaStream stream);

// In place on a GEMM result, the epilogue of GemmF32:
//   c[m, n] = act(c[m, n] + bias[n]) + residual[m, n]
// c: [M, N] row stride ldc; bias: [N] or null; residual: [M, N] row stride
// ldr, or null.
CudaStatus bias_act_residual_f32_cuda(float* c, size_t ldc, const float* bias, Activation act, const float* residual,
                                      size_t ldr, int M, int N, CudaStream stream);

// --- softmax and search -------------------------------------------------
// Each row of x [M, N] into y [M, N] (y may alias x), as softmax_f32_ref.
CudaStatus softmax_f32_cuda(const float* x, float* y, int M, int N, CudaStream stream);
// y = x - max - log(sum(exp(x - max))) per row, as log_softmax_f32_ref; the
// log-sum-exp of each row goes to lse [M] when it is not null.
CudaStatus log_softmax_f32_cuda(const float* x, float* y, float* lse, int M, int N, CudaStream stream);

// Index of the largest value of each row of x [M, N] (the first on ties, as
// argmax_f32_ref) into index [M], its value into value [M] when not null.
CudaStatus argmax_f32_cuda(const float* x, int M, int N, int32_t* index, float* value, CudaStream stream);

inline constexpr int kCudaTopKMax = 16;
// The k best values of each row of x [M, N], best first, ties to the lower
// index (so k = 1 agrees with argmax), as search.cpp's row_top_k: -inf and
// NaN are never candidates. values, indices: [M, k], 1 <= k <= kCudaTopKMax;
// slots past a row's candidates hold -inf and index -1.
CudaStatus top_k_f32_cuda(const float* x, int M, int N, int k, float* values, int32_t* indices, CudaStream stream);

// --- beam search support -----------------------------------------------
// Row gather across `groups` blocks (the decoder layers of a KV cache):
//   dst[g * group_stride + r * row_stride + i] = src[g * group_stride + index[r] * row_stride + i]
// for r < rows, i < row_floats (<= row_stride). index: device [rows], each a
// row of src. src and dst must not overlap (rows would race).
CudaStatus gather_rows_f32_cuda(const float* src, float* dst, const int32_t* index, int rows, size_t row_stride,
                                size_t row_floats, int groups, size_t group_stride, CudaStream stream);

// The end of a decode step whose position is kept on the device (so that a
// captured step replays for every position): for every row m of logits [M, ld],
//   logits[m, column] = value   when positions[m] < *min_length  (EOS masked),
// then positions[m] += 1 and lengths[m] += 1 (the KV cache's rows, position + 1).
// positions, lengths: device [M]; min_length: device scalar.
CudaStatus decode_step_end_cuda(float* logits, size_t ld, int M, int column, float value, const int32_t* min_length,
                                int32_t* positions, int32_t* lengths, CudaStream stream);

// x[m, columns[j]] = value for every row m < M of x [M, ld] and j < count:
// the ids a model never emits (ModelConfig::suppressed_ids), masked after the
// log-softmax. columns: device [count], each < ld.
CudaStatus mask_columns_f32_cuda(float* x, size_t ld, int M, const int32_t* columns, int count, float value,
                                 CudaStream stream);
// x[i] = value for i < n: a forced target token for every row of a step.
CudaStatus fill_i32_cuda(int32_t* x, int n, int32_t value, CudaStream stream);

// --- attention ----------------------------------------------------------
// Where the rows of each sequence of a batch are, for queries or for keys.
// Sequence b has rows [first(b), first(b) + count(b)) of its matrix:
//   first(b) = begin ? begin[b] : b * stride,   count(b) = length ? length[b] : rows.
// So a packed batch (the CPU's offsets) is {offsets, lengths}, a padded one
// [B, T] with lengths is {nullptr, lengths, T, T}, a KV cache of capacity P
// holding t + 1 positions is {nullptr, nullptr, P, t + 1}.
struct CudaSequenceRows {
  const int32_t* begin = nullptr;   // device [B] or null
  const int32_t* length = nullptr;  // device [B] or null
  int stride = 0;                   // rows between sequences when begin is null
  int rows = 0;                     // count(b) when length is null, else an upper bound of length[b] (sizes the grid)
};

// Fused scaled dot-product attention (Vaswani et al. 2017, eq. 1) of every
// sequence b and head h in one launch: scores, mask, softmax and the sum over
// V without writing the scores anywhere. For query i of sequence b:
//   out[i] = sum_j softmax_j(scale * q[i] . k[j]) v[j],
//   j < min(count_kv(b'), i + causal_offset + 1), or j < count_kv(b') when causal_offset < 0,
// with b' = b / kv_group (the keys and values of sequence b'), as
// attention_f32_ref. Head h of a row is the dh floats at column h * dh:
//   query i of b:   q   + (first_q(b) + i) * q_ld + h * dh
//   key j of b':    k   + (first_kv(b') + j) * kv_ld + h * dh, value likewise from v
//   output i of b:  out + (first_q(b) + i) * out_ld + h * dh
// A query with no keys gets zeros.
//
// The runtime's cases (see lib/src/transformer/transformer.cpp):
//   encoder self-attention:  q = qkv, k = qkv + C, v = qkv + 2C, ld 3C, q_rows = kv_rows
//                            = {offsets, lengths}, causal_offset -1;
//   decoder, full sequence:  q_rows = kv_rows = {nullptr, nullptr, T, T}, causal_offset 0;
//   decoder step over the self-attention cache [R, P, 2C] (K then V per position):
//                            q_rows {nullptr, nullptr, 1, 1}, k = cache, v = cache + C,
//                            kv_ld 2C, kv_rows {nullptr, nullptr, P, t + 1}, with append;
//   cross-attention:         k, v from the memory projection [N, 2C], kv_rows
//                            {source offsets, source lengths}, kv_group = beams.
struct CudaAttention {
  const float* q = nullptr;
  size_t q_ld = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  size_t kv_ld = 0;
  float* out = nullptr;
  size_t out_ld = 0;
  CudaSequenceRows q_rows, kv_rows;
  int batch = 0;  // sequences of queries
  int heads = 0;
  int dh = 0;  // 1 <= dh <= kCudaAttentionMaxDh
  int kv_group = 1;
  float scale = 1.0f;
  int causal_offset = -1;
  // Decode step (optional): the key and value of each sequence's one query
  // row, first_q(b) of append_k / append_v (row stride append_ld), are
  // written into its last key row, first_kv(b) + count_kv(b) - 1, before it
  // attends. k and v must then point to writable memory; needs kv_group 1
  // and q_rows.rows 1.
  const float* append_k = nullptr;
  const float* append_v = nullptr;
  size_t append_ld = 0;
};
inline constexpr int kCudaAttentionMaxDh = 128;

CudaStatus attention_f32_cuda(const CudaAttention& a, CudaStream stream);

// --- GEMM through cuBLAS ------------------------------------------------
// A cuBLAS handle with its own workspace, allocated once by cublas_create
// (null on failure) so that calls allocate nothing.
struct CublasContext;
CublasContext* cublas_create(size_t workspace_bytes = size_t(32) << 20);
void cublas_destroy(CublasContext* context);

enum class GemmMath : uint8_t {
  f32 = 0,   // fp32 inputs and accumulation
  tf32 = 1,  // inputs rounded to TF32 on tensor cores, fp32 accumulation (about 1e-3 relative)
};

// A linear layer, as GemmF32 but with W plain row-major:
//   C[m, n] = act(sum_k A[m, k] * W[n, k] + bias[n]) + residual[m, n]
// A: [M, K] row stride lda; W: [N, K] row stride ldw; bias: [N] or null;
// residual: [M, N] row stride ldr, or null; C: [M, N] row stride ldc.
// C may alias residual (same pointer and stride) only when act is none.
CudaStatus linear_f32_cuda(CublasContext* context, const float* A, size_t lda, const float* W, size_t ldw,
                           const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                           int K, Activation act, GemmMath math, CudaStream stream);

// --- fp16 linear layers -------------------------------------------------
// Half-precision operands, fp32 sums: products of halves are exact in fp32,
// so what fp16 costs is the rounding of weights and activations to 11
// significant bits (weights: at upload, by f32_to_f16_bits in mt/half.h).

// Each row of A [M, K] (row stride lda) rounded to half, to nearest with ties
// to even (f32_to_f16_bits' bits), into H [M, K] (row stride ldh).
CudaStatus convert_rows_f16_cuda(const float* A, size_t lda, int M, int K, uint16_t* H, size_t ldh, CudaStream stream);

// As linear_f32_cuda with W [N, K] in half (row stride ldw): A is rounded to
// half into a16 [M, K] (row stride ld_a16) by convert_rows_f16_cuda, cuBLAS
// multiplies 16F x 16F with fp32 sums into C, then the fp32 epilogue. C may
// alias residual (same pointer and stride) only when act is none.
CudaStatus linear_f16_cuda(CublasContext* context, const float* A, size_t lda, const uint16_t* W, size_t ldw,
                           const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                           int K, Activation act, uint16_t* a16, size_t ld_a16, CudaStream stream);

// --- int8 linear layers -------------------------------------------------
// The CPU's int8 layer (quantize_rows_u8, then gemm_u8s8) on the GPU, with
// the same integer sums. cuBLAS multiplies s8 by s8, so an activation q in
// [0, 255] travels as q - 128 and the sum is corrected exactly:
//   sum_k q[k] w[k] - z sum_k w[k] = sum_k (q[k] - 128) w[k] + (128 - z) sum_k w[k].

// Each row of A [M, K] quantized as quantize_rows_u8_ref (per-row range, or
// the static scale and zero when static_scale > 0), each q stored as q - 128
// into Q [M, padded_k_i8(K)] (row stride ldq, the pad columns 0), with the
// row's scale and zero in scales [M] and zeros [M]. Bit-identical to the
// reference: the same float operations, none contracted.
CudaStatus quantize_rows_s8_cuda(const float* A, size_t lda, int M, int K, int8_t* Q, size_t ldq, float* scales,
                                 int32_t* zeros, float static_scale, int32_t static_zero, CudaStream stream);

// The epilogue of gemm_u8s8_ref from the s8 sums acc [M, N] (row stride ld_acc):
//   c = acc[m, n] + (128 - z[m]) * w_sum[n],  z[m] = a_zero ? a_zero[m] : 0
//   C[m, n] = act(float(c) * (a_scale[m] * w_scale[n]) + bias[n]) + residual[m, n]
// in the reference's order and rounding. C may alias residual.
CudaStatus dequantize_i32_cuda(const int32_t* acc, size_t ld_acc, const int32_t* w_sum, const float* w_scale,
                               const float* a_scale, const int32_t* a_zero, const float* bias, Activation act,
                               const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                               CudaStream stream);

// Rows of an int8 operand cuBLAS multiplies: a multiple of 4 (its int8
// kernels want m, k and the leading dimensions so; some GPUs refuse others).
inline constexpr int padded_rows_i8(int N) { return (N + 3) / 4 * 4; }

// An int8 layer's weights on the device: W [N, K] as padded_rows_i8(N) rows
// of ld = padded_k_i8(K) int8 (the padding zero), W[n, k] = scales[n] * q[n, k].
struct CudaInt8Weights {
  const int8_t* q = nullptr;
  size_t ld = 0;
  const int32_t* row_sums = nullptr;  // [N]: sum_k q[n, k]
  const float* scales = nullptr;      // [N]
  // Calibrated layers (input_scale > 0) quantize every row with this scale
  // and zero, and their bias already holds the zero point's compensation (as
  // on the CPU); otherwise each row gets its own range.
  float input_scale = 0.0f;
  int32_t input_zero = 0;
};

// Where an int8 layer's intermediates go: Q [M, ldq] (ldq >= padded_k_i8(K),
// a multiple of 4), scales and zeros [M], and the s8 sums acc [M, ld_acc]
// (ld_acc >= padded_rows_i8(N), a multiple of 4).
struct CudaInt8Scratch {
  int8_t* q = nullptr;
  size_t ldq = 0;
  float* scales = nullptr;
  int32_t* zeros = nullptr;
  int32_t* acc = nullptr;
  size_t ld_acc = 0;
};

// As linear_f32_cuda for an int8 layer, computed as the CPU computes it:
// quantize_rows_s8_cuda, the s8 x s8 -> s32 GEMM in cuBLAS, then
// dequantize_i32_cuda. The same inputs give the CPU's bits (GELU aside:
// erff and std::erf may differ in the last place). C may alias residual.
CudaStatus linear_i8_cuda(CublasContext* context, const float* A, size_t lda, const CudaInt8Weights& W,
                          const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                          int K, Activation act, const CudaInt8Scratch& scratch, CudaStream stream);

}  // namespace mt
