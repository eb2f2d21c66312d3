// The GPU's int8 layers against the CPU reference: quantizing rows must give
// quantize_rows_u8_ref's bits (stored minus 128), and a whole layer
// (quantize, cuBLAS s8 GEMM, dequantize) gemm_u8s8_ref's bits, for per-row
// and calibrated input scales. Without a CUDA device every case says why
// and passes.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_test_util.hpp"
#include "kernel_test_util.hpp"
#include "mt/cuda_kernels.h"
#include "mt/kernels.h"

namespace mt {
namespace {

using test::act_name;
using test::DeviceVector;
using test::random_vector;
using test::require_finished;
using test::require_ok;
using test::TestStream;

constexpr double kGeluTol = 1e-5;  // erff and std::erf may differ in the last place

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

std::vector<int8_t> random_i8(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = int8_t(dist(rng));
  return v;
}

// Rows of K activations (row stride lda) with the values that stress a
// quantizer: a row of zeros, a constant row, signed zeros, NaN and
// infinities, and a wide range.
std::vector<float> awkward_rows(int M, int K, size_t lda, uint32_t seed) {
  std::vector<float> a = random_vector(size_t(M) * lda, seed, -4.0f, 6.0f);
  for (int m = 0; m < M; ++m) {
    float* row = a.data() + size_t(m) * lda;
    switch (m % 6) {
      case 1:
        std::fill(row, row + K, 0.0f);
        break;
      case 2:
        std::fill(row, row + K, 1.5f);
        break;
      case 3:
        row[0] = -0.0f, row[K / 2] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 4:
        row[K - 1] = 1e30f;
        break;
      case 5:
        row[K / 3] = std::numeric_limits<float>::infinity();
        break;
      default:
        break;
    }
  }
  return a;
}

TEST_CASE("cuda: quantize_rows_s8 gives quantize_rows_u8_ref's bits, minus 128", "[cuda][int8]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const KernelTable& ref = reference_kernels();
  struct Shape {
    int M, K;
  };
  for (const Shape s : {Shape{1, 1}, Shape{7, 3}, Shape{12, 64}, Shape{6, 513}, Shape{13, 2048}}) {
    const int Kp = padded_k_i8(s.K);
    const size_t lda = size_t(s.K) + 3, ldq = size_t(Kp) + 4;
    const std::vector<float> A = awkward_rows(s.M, s.K, lda, 5u + s.K);
    for (const float static_scale : {0.0f, 0.037f}) {
      const int32_t static_zero = static_scale > 0.0f ? 91 : 0;
      INFO("M " << s.M << ", K " << s.K << ", static scale " << static_scale);
      std::vector<uint8_t> want(size_t(s.M) * ldq, 0);
      std::vector<float> want_scales(s.M);
      std::vector<int32_t> want_zeros(s.M);
      ref.quantize_rows_u8(A.data(), lda, s.M, s.K, want.data(), ldq, want_scales.data(), want_zeros.data(),
                           static_scale, static_zero);
      DeviceVector<float> d_A(A);
      DeviceVector<int8_t> d_Q(std::vector<int8_t>(size_t(s.M) * ldq, 55));
      DeviceVector<float> d_scales(s.M);
      DeviceVector<int32_t> d_zeros(s.M);
      require_ok(quantize_rows_s8_cuda(d_A.get(), lda, s.M, s.K, d_Q.get(), ldq, d_scales.get(), d_zeros.get(),
                                       static_scale, static_zero, stream.get()),
                 "quantize_rows_s8_cuda");
      require_finished(stream.get(), "quantize_rows_s8_cuda");
      const std::vector<int8_t> got = d_Q.download();
      const std::vector<float> scales = d_scales.download();
      const std::vector<int32_t> zeros = d_zeros.download();
      for (int m = 0; m < s.M; ++m) {
        INFO("row " << m);
        REQUIRE(same_bits(scales[m], want_scales[m]));
        REQUIRE(zeros[m] == want_zeros[m]);
        for (int k = 0; k < Kp; ++k) {
          const size_t i = size_t(m) * ldq + k;
          const int expected = k < s.K ? int(want[i]) - 128 : 0;
          if (int(got[i]) != expected) FAIL("q[" << m << "," << k << "] is " << int(got[i]) << ", want " << expected);
        }
        // Past the padded row the stride's bytes are left alone.
        for (size_t k = size_t(Kp); k < ldq; ++k) REQUIRE(got[size_t(m) * ldq + k] == 55);
      }
    }
  }
}

// One int8 layer's inputs, on the host in both the CPU's layout (packed
// panels) and the GPU's (rows and their count padded to 4).
struct Int8Layer {
  Int8Layer(int M_, int N_, int K_, uint32_t seed) : M(M_), N(N_), K(K_), Kp(padded_k_i8(K_)) {
    lda = size_t(K) + 5;
    ldc = size_t(N) + 3;
    A = random_vector(size_t(M) * lda, seed, -3.0f, 4.0f);
    W = random_i8(size_t(N) * K, seed + 1);
    packed.assign(packed_size_i8(N, K), 0);
    pack_weights_i8(W.data(), N, K, packed.data());
    rows.assign(size_t(padded_rows_i8(N)) * Kp, 0);  // the padding rows zero, as uploaded
    w_sum.assign(N, 0);
    for (int n = 0; n < N; ++n) {
      for (int k = 0; k < K; ++k) {
        rows[size_t(n) * Kp + k] = W[size_t(n) * K + k];
        w_sum[n] += W[size_t(n) * K + k];
      }
    }
    w_scale = random_vector(N, seed + 2, 0.001f, 0.02f);
    bias = random_vector(N, seed + 3, -1.0f, 1.0f);
    residual = random_vector(size_t(M) * ldc, seed + 4, -1.0f, 1.0f);
  }

  // The CPU's layer: quantize_rows_u8_ref, then gemm_u8s8_ref onto C = init.
  std::vector<float> reference(float static_scale, int32_t static_zero, bool with_bias, bool with_residual,
                               Activation act, const std::vector<float>& init) const {
    const KernelTable& ref = reference_kernels();
    const size_t ldq = size_t(Kp);
    std::vector<uint8_t> q(size_t(M) * ldq);
    std::vector<float> a_scale(M);
    std::vector<int32_t> a_zero(M);
    ref.quantize_rows_u8(A.data(), lda, M, K, q.data(), ldq, a_scale.data(), a_zero.data(), static_scale, static_zero);
    std::vector<float> C = init;
    // Calibrated layers pass no zero points: their compensation is in the bias.
    ref.gemm_u8s8(q.data(), ldq, packed.data(), w_sum.data(), w_scale.data(), a_scale.data(),
                  static_scale > 0.0f ? nullptr : a_zero.data(), with_bias ? bias.data() : nullptr,
                  with_residual ? residual.data() : nullptr, ldc, C.data(), ldc, M, N, K, 0, N, act);
    return C;
  }

  int M, N, K, Kp;
  size_t lda, ldc;
  std::vector<float> A, w_scale, bias, residual;
  std::vector<int8_t> W, packed, rows;
  std::vector<int32_t> w_sum;
};

// The GPU's scratch for a layer of M rows.
struct DeviceScratch {
  DeviceScratch(int M, int N, int K)
      : q(size_t(M) * padded_k_i8(K)), scales(M), zeros(M), acc(size_t(M) * ((N + 3) / 4 * 4)) {}
  CudaInt8Scratch view(int N, int K) const {
    return {q.get(), size_t(padded_k_i8(K)), scales.get(), zeros.get(), acc.get(), size_t((N + 3) / 4 * 4)};
  }
  DeviceVector<int8_t> q;
  DeviceVector<float> scales;
  DeviceVector<int32_t> zeros;
  DeviceVector<int32_t> acc;
};

void require_same_or_close(const std::vector<float>& want, const std::vector<float>& got, const Int8Layer& g,
                           Activation act) {
  REQUIRE(want.size() == got.size());
  for (int m = 0; m < g.M; ++m) {
    for (size_t n = 0; n < g.ldc; ++n) {  // the stride's columns too: untouched
      const size_t i = size_t(m) * g.ldc + n;
      const bool ok = act == Activation::gelu && n < size_t(g.N)
                          ? std::fabs(double(want[i]) - double(got[i])) <= kGeluTol * (1.0 + std::fabs(double(want[i])))
                          : same_bits(want[i], got[i]);
      if (!ok) FAIL("C[" << m << "," << n << "] is " << got[i] << ", the reference " << want[i]);
    }
  }
}

TEST_CASE("cuda: linear_i8 (quantize, cuBLAS s8 GEMM, dequantize) gives gemm_u8s8_ref's bits", "[cuda][int8]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const test::TestCublas cublas;
  CublasContext* context = cublas.get();
  for (const test::LinearShape s : test::kLinearShapes) {
    const Int8Layer g(s.M, s.N, s.K, uint32_t(s.M + s.N + s.K));
    DeviceVector<float> d_A(g.A), d_w_scale(g.w_scale), d_bias(g.bias), d_res(g.residual), d_C(size_t(g.M) * g.ldc);
    DeviceVector<int8_t> d_W(g.rows);
    DeviceVector<int32_t> d_w_sum(g.w_sum);
    const DeviceScratch scratch(g.M, g.N, g.K);
    const std::vector<float> init = random_vector(size_t(g.M) * g.ldc, 99);
    for (const float static_scale : {0.0f, 0.03f}) {
      const int32_t static_zero = static_scale > 0.0f ? 100 : 0;
      const CudaInt8Weights weights{d_W.get(), size_t(g.Kp), d_w_sum.get(), d_w_scale.get(), static_scale, static_zero};
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::swish}) {
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
          for (int with_res = 0; with_res < 2; ++with_res) {
            INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", static scale " << static_scale << ", act "
                      << act_name(act) << ", bias " << with_bias << ", residual " << with_res);
            d_C.upload(init);
            require_ok(linear_i8_cuda(context, d_A.get(), g.lda, weights, with_bias ? d_bias.get() : nullptr,
                                      with_res ? d_res.get() : nullptr, g.ldc, d_C.get(), g.ldc, g.M, g.N, g.K, act,
                                      scratch.view(g.N, g.K), stream.get()),
                       "linear_i8_cuda");
            require_finished(stream.get(), "linear_i8_cuda");
            require_same_or_close(g.reference(static_scale, static_zero, with_bias, with_res, act, init),
                                  d_C.download(), g, act);
          }
        }
      }
      // x += linear(x'): C aliasing the residual, as the runtime's sublayers do.
      INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", static scale " << static_scale
                << ", C aliasing the residual");
      std::vector<float> aliased = init;
      for (int m = 0; m < g.M; ++m) {
        std::copy_n(g.residual.begin() + size_t(m) * g.ldc, g.N, aliased.begin() + size_t(m) * g.ldc);
      }
      d_C.upload(aliased);
      require_ok(linear_i8_cuda(context, d_A.get(), g.lda, weights, d_bias.get(), d_C.get(), g.ldc, d_C.get(), g.ldc,
                                g.M, g.N, g.K, Activation::relu, scratch.view(g.N, g.K), stream.get()),
                 "linear_i8_cuda (aliased)");
      require_finished(stream.get(), "linear_i8_cuda (aliased)");
      require_same_or_close(g.reference(static_scale, static_zero, true, true, Activation::relu, init), d_C.download(),
                            g, Activation::relu);
    }
  }
}

TEST_CASE("cuda: linear_i8 refuses leading dimensions cuBLAS's int8 GEMM cannot take", "[cuda][int8]") {
  // Arguments are checked before anything is touched (mt/cuda_kernels.h),
  // so made-up pointers do, and no device is needed.
  CublasContext* context = reinterpret_cast<CublasContext*>(16);
  const int M = 2, N = 8, K = 6;  // padded K: 8
  const CudaInt8Weights w{reinterpret_cast<const int8_t*>(16), 8, nullptr, nullptr, 0.0f, 0};
  const CudaInt8Scratch scratch{reinterpret_cast<int8_t*>(16), 8, nullptr, nullptr, nullptr, 8};
  const float* A = reinterpret_cast<const float*>(16);
  float* C = reinterpret_cast<float*>(16);
  auto call = [&](CublasContext* c, const CudaInt8Weights& weights, const CudaInt8Scratch& s) {
    return linear_i8_cuda(c, A, K, weights, nullptr, nullptr, 0, C, N, M, N, K, Activation::none, s, nullptr);
  };
  CudaInt8Weights short_rows = w;
  short_rows.ld = 6;  // less than the padded K
  CHECK(call(context, short_rows, scratch) != 0);
  CudaInt8Weights odd_rows = w;
  odd_rows.ld = 10;  // not a multiple of 4
  CHECK(call(context, odd_rows, scratch) != 0);
  CudaInt8Scratch odd_q = scratch;
  odd_q.ldq = 9;
  CHECK(call(context, w, odd_q) != 0);
  CudaInt8Scratch narrow_acc = scratch;
  narrow_acc.ld_acc = 7;  // fewer than N
  CHECK(call(context, w, narrow_acc) != 0);
  CudaInt8Scratch odd_acc = scratch;
  odd_acc.ld_acc = 10;  // not a multiple of 4
  CHECK(call(context, w, odd_acc) != 0);
  CHECK(call(nullptr, w, scratch) != 0);
  CHECK(quantize_rows_s8_cuda(A, K, M, K, scratch.q, 7, nullptr, nullptr, 0.0f, 0, nullptr) != 0);
  CHECK(dequantize_i32_cuda(nullptr, 7, nullptr, nullptr, nullptr, nullptr, nullptr, Activation::none, nullptr, 0, C, N,
                            M, N, nullptr) != 0);
}

}  // namespace
}  // namespace mt
