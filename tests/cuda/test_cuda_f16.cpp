// The GPU's fp16 layers against the host: rounding activations to half must
// give f32_to_f16_bits' bits (mt/half.h, which rounds the weights), an fp16
// embedding embed_f32_ref's bits on the table widened, and a whole layer
// (round, cuBLAS 16F x 16F with fp32 sums, epilogue) the exact sum of the
// rounded operands up to fp32 summation. Without a CUDA device every case
// says why and passes; the argument checks run anyway.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_test_util.hpp"
#include "kernel_test_util.hpp"
#include "mt/cuda_kernels.h"
#include "mt/half.h"
#include "mt/kernels.h"

namespace mt {
namespace {

using test::act_name;
using test::DeviceVector;
using test::random_vector;
using test::require_finished;
using test::require_ok;
using test::TestStream;

constexpr uint16_t kUntouched = 0xabcd;  // in the pad columns, which must stay as they are

// Rows of K floats (row stride lda) with every kind of value rounding to
// half meets: ties either way, the overflow threshold, subnormals and the
// smallest of them, signed zeros, infinities and NaN; the rest random over
// a wide range.
std::vector<float> awkward_rows(int M, int K, size_t lda, uint32_t seed) {
  std::vector<float> a = random_vector(size_t(M) * lda, seed, -300.0f, 300.0f);
  const float special[] = {0.0f,
                           -0.0f,
                           1.0f + 0x1p-11f,  // a tie, down to even
                           1.0f + 0x3p-11f,  // a tie, up to even
                           65504.0f,
                           65519.996f,
                           -65520.0f,  // rounds to -infinity
                           1e9f,
                           0x1p-24f,
                           0x1p-25f,  // ties to zero
                           -0x1.8p-25f,
                           0x1.ffep-15f,  // carries into the smallest normal
                           3e-6f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  size_t next = 0;
  for (int m = 0; m < M; ++m) {
    float* row = a.data() + size_t(m) * lda;
    if (m % 3 == 1) row[0] *= 1e-6f;  // subnormal halves
    for (int k = m % 2; k < K; k += 5) row[k] = special[next++ % (sizeof(special) / sizeof(special[0]))];
  }
  return a;
}

std::vector<int32_t> random_ids(int n, int bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(bound));
  return ids;
}

TEST_CASE("cuda: convert_rows_f16 gives f32_to_f16_bits' bits", "[cuda][fp16]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  for (const test::LinearShape s : test::kLinearShapes) {
    const int M = s.M, K = s.K;
    const size_t lda = size_t(K) + 3, ldh = size_t(K) + 5;
    INFO("M " << M << ", K " << K);
    const std::vector<float> A = awkward_rows(M, K, lda, uint32_t(M * 31 + K));
    DeviceVector<float> d_A(A);
    DeviceVector<uint16_t> d_H(std::vector<uint16_t>(size_t(M) * ldh, kUntouched));
    require_ok(convert_rows_f16_cuda(d_A.get(), lda, M, K, d_H.get(), ldh, stream.get()), "convert_rows_f16_cuda");
    require_finished(stream.get(), "convert_rows_f16_cuda");
    const std::vector<uint16_t> H = d_H.download();
    for (int m = 0; m < M; ++m) {
      for (size_t k = 0; k < ldh; ++k) {
        const uint16_t got = H[size_t(m) * ldh + k];
        if (k >= size_t(K)) {
          if (got != kUntouched) FAIL("pad column " << k << " of row " << m << " was written");
          continue;
        }
        const float a = A[size_t(m) * lda + k];
        const uint16_t want = f32_to_f16_bits(a);
        // A NaN must stay a NaN; its payload is the hardware's choice.
        const bool ok = std::isnan(a) ? std::isnan(f16_bits_to_f32(got)) : got == want;
        if (!ok)
          FAIL("row " << m << ", column " << k << ": " << a << " became 0x" << std::hex << got << ", not 0x" << want);
      }
    }
  }
}

TEST_CASE("cuda: embed_f16 gives embed_f32_ref's bits on the table widened", "[cuda][fp16]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  const int V = 37, P = 11;
  for (int C : {1, 7, 512, 515}) {
    const int M = 19;
    const float scale = std::sqrt(float(C));
    const std::vector<int32_t> ids = random_ids(M, V, uint32_t(3 * C)), positions = random_ids(M, P, uint32_t(5 * C));
    const std::vector<float> pos_table = random_vector(size_t(P) * C, uint32_t(C + 1));
    std::vector<uint16_t> table(size_t(V) * C);
    std::vector<float> widened(table.size());
    const std::vector<float> values = random_vector(table.size(), uint32_t(C), -2.0f, 2.0f);
    for (size_t i = 0; i < table.size(); ++i) {
      table[i] = f32_to_f16_bits(values[i]);
      widened[i] = f16_bits_to_f32(table[i]);
    }
    std::vector<float> packed(packed_size(V, C));
    pack_weights_f32(widened.data(), V, C, packed.data());
    DeviceVector<uint16_t> d_table(table);
    DeviceVector<float> d_pos(pos_table), d_y(size_t(M) * C);
    DeviceVector<int32_t> d_ids(ids), d_positions(positions);
    for (int mode = 0; mode < 3; ++mode) {  // positions per row, one for all rows (4), none
      INFO("C " << C << ", positions " << (mode == 0 ? "per row" : mode == 1 ? "scalar 4" : "none"));
      std::vector<float> want(size_t(M) * C);
      for (int m = 0; m < M; ++m) {
        const float* pe = mode == 2 ? nullptr : pos_table.data() + size_t(mode == 0 ? positions[m] : 4) * C;
        ref.embed_f32(packed.data(), C, ids[m], scale, pe, want.data() + size_t(m) * C);
      }
      require_ok(embed_f16_cuda(d_table.get(), C, d_ids.get(), M, scale, mode == 2 ? nullptr : d_pos.get(),
                                mode == 0 ? d_positions.get() : nullptr, 4, d_y.get(), stream.get()),
                 "embed_f16_cuda");
      require_finished(stream.get(), "embed_f16_cuda");
      test::require_equal(want, d_y.download(), "embed_f16");
    }
  }
}

// One fp16 layer's operands, and its result computed on the host in double
// from the operands rounded to half: exact products, so the GPU differs only
// by its fp32 sums (and erff in GELU).
struct HalfLayer {
  int M, N, K;
  size_t lda, ldc;
  std::vector<float> A, bias, residual;
  std::vector<uint16_t> W;  // [N, K] half bits

  HalfLayer(int M_, int N_, int K_, uint32_t seed) : M(M_), N(N_), K(K_), lda(size_t(K_) + 2), ldc(size_t(N_) + 3) {
    A = random_vector(size_t(M) * lda, seed, -3.0f, 3.0f);
    const std::vector<float> w = random_vector(size_t(N) * K, seed + 1, -0.2f, 0.2f);
    W.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) W[i] = f32_to_f16_bits(w[i]);
    bias = random_vector(size_t(N), seed + 2);
    residual = random_vector(size_t(M) * ldc, seed + 3);
  }

  // C as the layer computes it (rows of ldc; the stride's columns keep
  // init's), and in *bound each element's scale: the sum of the magnitudes
  // that went into it. Without rounding A to half when round_a is false.
  std::vector<float> reference(bool with_bias, bool with_res, Activation act, const std::vector<float>& init,
                               bool round_a, std::vector<double>* bound) const {
    std::vector<float> C = init;
    bound->assign(C.size(), 0.0);
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        double sum = 0.0, magnitude = 0.0;
        for (int k = 0; k < K; ++k) {
          const float a = A[size_t(m) * lda + k];
          const double p = double(round_a ? round_to_f16(a) : a) * double(f16_bits_to_f32(W[size_t(n) * K + k]));
          sum += p;
          magnitude += std::fabs(p);
        }
        double c = sum + (with_bias ? double(bias[n]) : 0.0);
        if (act == Activation::relu) c = c > 0.0 ? c : 0.0;
        if (act == Activation::gelu) c = 0.5 * c * (1.0 + std::erf(c / std::sqrt(2.0)));
        if (act == Activation::swish) c = c / (1.0 + std::exp(-c));
        const size_t i = size_t(m) * ldc + n;
        if (with_res) c += double(residual[i]);
        C[i] = float(c);
        (*bound)[i] = magnitude + (with_bias ? std::fabs(bias[n]) : 0.0) + (with_res ? std::fabs(residual[i]) : 0.0);
      }
    }
    return C;
  }
};

// The worst |got - want| / (1 + scale) over the rows' N columns (NaN: 1e30);
// the stride's columns must be untouched.
double worst_error(const std::vector<float>& want, const std::vector<float>& got, const std::vector<double>& scale,
                   const HalfLayer& g) {
  REQUIRE(want.size() == got.size());
  double worst = 0.0;
  for (int m = 0; m < g.M; ++m) {
    for (size_t n = 0; n < g.ldc; ++n) {
      const size_t i = size_t(m) * g.ldc + n;
      if (n >= size_t(g.N)) {
        if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0)
          FAIL("C[" << m << "," << n << "] (padding) was written");
        continue;
      }
      const double error = std::fabs(double(want[i]) - double(got[i])) / (1.0 + scale[i]);
      worst = std::max(worst, std::isnan(error) ? 1e30 : error);
    }
  }
  return worst;
}

// fp32 sums of up to 1,024 terms, on tensor cores that may truncate inside a
// block of products: some units of 2^-24 of the magnitudes. A wrong operand,
// transposition or epilogue is off by far more.
constexpr double kF32SumTol = 1e-5;

TEST_CASE("cuda: linear_f16 is the exact product of the operands rounded to half, summed in fp32", "[cuda][fp16]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const test::TestCublas cublas;
  for (const test::LinearShape s : test::kLinearShapes) {
    const HalfLayer g(s.M, s.N, s.K, uint32_t(s.M + s.N + s.K));
    DeviceVector<float> d_A(g.A), d_bias(g.bias), d_res(g.residual), d_C(size_t(g.M) * g.ldc);
    DeviceVector<uint16_t> d_W(g.W), d_a16(size_t(g.M) * g.K);
    const std::vector<float> init = random_vector(size_t(g.M) * g.ldc, 99);
    std::vector<double> scale;
    for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::swish}) {
      for (int with_bias = 0; with_bias < 2; ++with_bias) {
        for (int with_res = 0; with_res < 2; ++with_res) {
          INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", act " << act_name(act) << ", bias " << with_bias
                    << ", residual " << with_res);
          d_C.upload(init);
          require_ok(linear_f16_cuda(cublas.get(), d_A.get(), g.lda, d_W.get(), size_t(g.K),
                                     with_bias ? d_bias.get() : nullptr, with_res ? d_res.get() : nullptr, g.ldc,
                                     d_C.get(), g.ldc, g.M, g.N, g.K, act, d_a16.get(), size_t(g.K), stream.get()),
                     "linear_f16_cuda");
          require_finished(stream.get(), "linear_f16_cuda");
          const std::vector<float> got = d_C.download();
          const double worst = worst_error(g.reference(with_bias, with_res, act, init, true, &scale), got, scale, g);
          CHECK(worst <= kF32SumTol);
          if (act == Activation::none && with_bias && with_res && g.K >= 512) {
            // Closer to the sum of the rounded operands than to that of A
            // unrounded by a wide margin: A was rounded to half, as it must be.
            const double unrounded = worst_error(g.reference(true, true, act, init, false, &scale), got, scale, g);
            INFO("worst error " << worst << " against A rounded to half, " << unrounded << " against A unrounded");
            CHECK(unrounded > 8 * worst);
          }
        }
      }
    }
    // x += linear(x'): C aliasing the residual, as the runtime's sublayers do.
    INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", C aliasing the residual");
    std::vector<float> aliased = init;
    for (int m = 0; m < g.M; ++m)
      std::copy_n(g.residual.begin() + size_t(m) * g.ldc, g.N, aliased.begin() + size_t(m) * g.ldc);
    d_C.upload(aliased);
    require_ok(
        linear_f16_cuda(cublas.get(), d_A.get(), g.lda, d_W.get(), size_t(g.K), d_bias.get(), d_C.get(), g.ldc,
                        d_C.get(), g.ldc, g.M, g.N, g.K, Activation::none, d_a16.get(), size_t(g.K), stream.get()),
        "linear_f16_cuda (aliased)");
    require_finished(stream.get(), "linear_f16_cuda (aliased)");
    CHECK(worst_error(g.reference(true, true, Activation::none, init, true, &scale), d_C.download(), scale, g) <=
          kF32SumTol);
  }
}

TEST_CASE("cuda: linear_f16 and convert_rows_f16 refuse bad arguments", "[cuda][fp16]") {
  // Arguments are checked before anything is touched (mt/cuda_kernels.h),
  // so made-up pointers do, and no device is needed.
  CublasContext* context = reinterpret_cast<CublasContext*>(16);
  const int M = 2, N = 8, K = 6;
  const float* A = reinterpret_cast<const float*>(16);
  const uint16_t* W = reinterpret_cast<const uint16_t*>(16);
  uint16_t* a16 = reinterpret_cast<uint16_t*>(16);
  float* C = reinterpret_cast<float*>(16);
  auto call = [&](CublasContext* c, size_t lda, size_t ldw, size_t ld_a16, size_t ldc, const float* residual,
                  size_t ldr, Activation act) {
    return linear_f16_cuda(c, A, lda, W, ldw, nullptr, residual, ldr, C, ldc, M, N, K, act, a16, ld_a16, nullptr);
  };
  CHECK(call(nullptr, K, K, K, N, nullptr, 0, Activation::none) != 0);
  CHECK(call(context, K - 1, K, K, N, nullptr, 0, Activation::none) != 0);  // rows shorter than K
  CHECK(call(context, K, K - 1, K, N, nullptr, 0, Activation::none) != 0);
  CHECK(call(context, K, K, K - 1, N, nullptr, 0, Activation::none) != 0);
  CHECK(call(context, K, K, K, N - 1, nullptr, 0, Activation::none) != 0);
  CHECK(call(context, K, K, K, N, C, N + 1, Activation::none) != 0);  // aliased, other stride
  CHECK(call(context, K, K, K, N, C, N, Activation::relu) != 0);      // aliased with an activation
  CHECK(linear_f16_cuda(context, A, K, W, K, nullptr, nullptr, 0, C, N, -1, N, K, Activation::none, a16, K, nullptr) !=
        0);
  CHECK(convert_rows_f16_cuda(A, K - 1, M, K, a16, K, nullptr) != 0);
  CHECK(convert_rows_f16_cuda(A, K, M, K, a16, K - 1, nullptr) != 0);
  CHECK(convert_rows_f16_cuda(A, K, -1, K, a16, K, nullptr) != 0);
  CHECK(embed_f16_cuda(W, -1, nullptr, 1, 1.0f, nullptr, nullptr, 0, C, nullptr) != 0);
  // Nothing to do is no error, and touches nothing.
  CHECK(convert_rows_f16_cuda(A, K, 0, K, a16, K, nullptr) == 0);
  CHECK(linear_f16_cuda(context, A, K, W, K, nullptr, nullptr, 0, C, N, 0, N, K, Activation::none, a16, K, nullptr) ==
        0);
}

}  // namespace
}  // namespace mt
