// Kernel tests: every ISA table this CPU runs against the scalar reference on
// random data at awkward sizes, hand-checked small cases, the GEMM's
// determinism and its store bounds. ISAs built in but not runnable here are
// reported with WARN.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernel_test_util.hpp"
#include "mt/kernels.h"

namespace mt {
namespace {

// Named tolerances: normalised mean squared error, mse(ref, got) / mse(ref, 0).
// Float kernels differ from the reference only by rounding (fma, reassociated
// sums, exp/erf approximations), which stays far below these.
constexpr double kLayerNormNmse = 1e-10;
// x = 100 +- 1 holds only ~100 * 2^-24 absolute precision, which the mean
// carries into every output: ~1e-5 relative, NMSE ~1e-10 from rounding alone.
constexpr double kLayerNormOffsetNmse = 1e-8;
constexpr double kSoftmaxNmse = 1e-10;
constexpr double kLogSoftmaxNmse = 1e-10;
constexpr double kEmbedNmse = 1e-12;
constexpr double kAttentionNmse = 1e-10;
// GEMM, per element: each of the K + 3 roundings (products, sums, bias,
// residual) of reference and kernel is at most 2^-24 of the magnitude
// sum |a_k w_k| + |bias| + |residual|; GELU (slope <= 1.13) adds a few ulps.
constexpr double kGemmRoundingsSlack = 2.5;
constexpr double kGeluUlps = 8;
// Absolute tolerance for the hand-checked cases.
constexpr float kHandTol = 1e-6f;

double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
  REQUIRE(ref.size() == got.size());
  double e = 0, r = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(ref[i]) - got[i];
    e += d * d;
    r += double(ref[i]) * ref[i];
  }
  return r == 0 ? e : e / r;
}

using test::act_name;
using test::random_vector;
using test::simd_tables;

// One GEMM problem with padded strides, so row strides are really used.
struct GemmCase {
  int M, N, K;
  size_t lda, ldr, ldc;
  std::vector<float> A, Wp, bias, residual;

  GemmCase(int M_, int N_, int K_, uint32_t seed) : M(M_), N(N_), K(K_), lda(K_ + 3), ldr(N_ + 2), ldc(N_ + 5) {
    A = random_vector(size_t(M) * lda, seed);
    const std::vector<float> w = random_vector(size_t(N) * K, seed + 1);
    Wp.resize(packed_size(N, K));
    pack_weights_f32(w.data(), N, K, Wp.data());
    bias = random_vector(N, seed + 2);
    residual = random_vector(size_t(M) * ldr, seed + 3);
  }

  // Error bound for C[m, n] (see kGemmRoundingsSlack).
  double tolerance(int m, int n, bool with_bias, bool with_residual, double ref_value) const {
    double mag = 0;
    for (int k = 0; k < K; ++k) mag += std::fabs(double(A[size_t(m) * lda + k]) * packed_at(Wp.data(), K, n, k));
    if (with_bias) mag += std::fabs(bias[n]);
    if (with_residual) mag += std::fabs(residual[size_t(m) * ldr + n]);
    const double u = std::ldexp(1.0, -24);
    return kGemmRoundingsSlack * (K + 3) * u * mag + kGeluUlps * u * std::fabs(ref_value);
  }

  // Every element of got (laid out as run() returns it) within tolerance() of want.
  void require_close(const std::vector<float>& want, const std::vector<float>& got, bool with_bias, bool with_residual,
                     int n_begin, int n_end) const {
    REQUIRE(want.size() == got.size());
    size_t i = 0;
    for (int m = 0; m < M; ++m)
      for (int n = n_begin; n < n_end; ++n, ++i) {
        const double err = std::fabs(double(want[i]) - got[i]);
        if (!(err <= tolerance(m, n, with_bias, with_residual, want[i]))) {
          INFO("C[" << m << "," << n << "] ref " << want[i] << " got " << got[i]);
          REQUIRE(err <= tolerance(m, n, with_bias, with_residual, want[i]));
        }
      }
  }

  // C over [n_begin, n_end) of every row, starting from `fill`.
  std::vector<float> run(const KernelTable& t, bool with_bias, bool with_residual, Activation act, int n_begin,
                         int n_end, float fill = 0.0f) const {
    std::vector<float> C(size_t(M) * ldc, fill);
    t.gemm_f32(A.data(), lda, Wp.data(), with_bias ? bias.data() : nullptr, with_residual ? residual.data() : nullptr,
               ldr, C.data(), ldc, M, N, K, n_begin, n_end, act);
    std::vector<float> out;
    for (int m = 0; m < M; ++m)
      for (int n = n_begin; n < n_end; ++n) out.push_back(C[size_t(m) * ldc + n]);
    return out;
  }
};

TEST_CASE("ISA tables not runnable on this CPU are reported", "[kernels]") {
  for (const char* isa : unavailable_kernels()) WARN("skipping ISA " << isa << ": not supported by this CPU");
  REQUIRE(std::string(available_kernels()[0]->isa) == "ref");
  // best_kernels() is one of the available tables (MT_ISA may pick a lower one).
  bool found = false;
  for (const KernelTable* t : available_kernels()) found = found || t == &best_kernels();
  INFO("best: " << best_kernels().isa);
  REQUIRE(found);
}

TEST_CASE("pack_weights_f32 round trip through packed_at", "[kernels]") {
  for (int N : {1, 7, 16, 17, 33}) {
    const int K = 5;
    const std::vector<float> w = random_vector(size_t(N) * K, 7);
    std::vector<float> packed(packed_size(N, K), -1.0f);
    pack_weights_f32(w.data(), N, K, packed.data());
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) REQUIRE(packed_at(packed.data(), K, n, k) == w[size_t(n) * K + k]);
    // The padding rows of the last panel are zeros.
    for (int n = N; n < int(packed_panels(N)) * kPanelWidth; ++n)
      for (int k = 0; k < K; ++k) REQUIRE(packed_at(packed.data(), K, n, k) == 0.0f);
    // And back.
    std::vector<float> back(size_t(N) * K, -1.0f);
    unpack_weights_f32(packed.data(), N, K, back.data());
    REQUIRE(back == w);
  }
}

TEST_CASE("gemm_f32 hand-checked 2x3", "[kernels]") {
  // A [2, 2], W [3, 2]: C = A W^T + bias, exact in float.
  const float A[] = {1, 2, 3, 4};
  const float W[] = {1, 0, 0, 1, 1, 1};
  const float bias[] = {0.5f, -1, 0};
  const float residual[] = {10, 20, 30, 40, 50, 60};
  std::vector<float> Wp(packed_size(3, 2));
  pack_weights_f32(W, 3, 2, Wp.data());
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    float C[6];
    t->gemm_f32(A, 2, Wp.data(), bias, nullptr, 0, C, 3, 2, 3, 2, 0, 3, Activation::none);
    const float expected[] = {1.5f, 1, 3, 3.5f, 3, 7};
    for (int i = 0; i < 6; ++i) REQUIRE(C[i] == expected[i]);
    // relu, then the residual; C aliases the residual.
    const float bias2[] = {-2, -3, 0};
    float CR[6];
    std::memcpy(CR, residual, sizeof CR);
    t->gemm_f32(A, 2, Wp.data(), bias2, CR, 3, CR, 3, 2, 3, 2, 0, 3, Activation::relu);
    const float expected2[] = {10, 20, 33, 41, 51, 67};
    for (int i = 0; i < 6; ++i) REQUIRE(CR[i] == expected2[i]);
  }
}

// swish's e^x (platforms/ref/activations.cpp) against the C library's in
// double: within 2 ulp over the clamped range; clamped outside it; NaN kept.
TEST_CASE("exp_f32_ref and swish_f32_ref are accurate", "[kernels]") {
  double worst_exp_ulps = 0.0, worst_swish = 0.0;
  for (float x = kExpF32Min; x <= kExpF32Max; x = std::nextafter(x + 0.0137f, 1e9f)) {
    const double want = std::exp(double(x));
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    worst_exp_ulps = std::max(worst_exp_ulps, std::fabs(double(exp_f32_ref(x)) - want) / ulp);
  }
  for (float x = -100.0f; x <= 100.0f; x += 0.00731f) {
    const double want = double(x) / (1.0 + std::exp(-double(x)));
    // Relative, plus an absolute 1e-35: below -88, e^-x is clamped and swish
    // is x / e^88 (under 1e-36) instead of a denormal.
    const double err = std::fabs(double(swish_f32_ref(x)) - want) / (std::fabs(want) + 1e-35 / 4e-7);
    worst_swish = std::max(worst_swish, err);
  }
  INFO("exp: worst " << worst_exp_ulps << " ulp; swish: worst relative error " << worst_swish);
  CHECK(worst_exp_ulps <= 2.0);
  CHECK(worst_swish <= 4e-7);
  CHECK(exp_f32_ref(1000.0f) == exp_f32_ref(kExpF32Max));
  CHECK(exp_f32_ref(-1000.0f) == exp_f32_ref(kExpF32Min));
  CHECK(std::isnan(exp_f32_ref(NAN)));
  CHECK(std::isnan(swish_f32_ref(NAN)));
  CHECK(swish_f32_ref(0.0f) == 0.0f);
  CHECK(swish_f32_ref(200.0f) == 200.0f);
  CHECK(swish_f32_ref(-200.0f) == Approx(0.0f).margin(1e-30));
}

TEST_CASE("gemm_f32 matches ref", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables()) {
    for (int M : {1, 2, 3, 4, 5, 7, 33})
      for (int N : {1, 7, 16, 17, 33, 100})
        for (int K : {1, 7, 33, 64, 257}) {
          const GemmCase g(M, N, K, uint32_t(M * 1000 + N * 10 + K));
          for (int flags = 0; flags < 4; ++flags)
            for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::swish}) {
              const bool b = flags & 1, r = flags & 2;
              INFO(t->isa << " M=" << M << " N=" << N << " K=" << K << " bias=" << b << " residual=" << r
                          << " act=" << act_name(act));
              g.require_close(g.run(ref, b, r, act, 0, N), g.run(*t, b, r, act, 0, N), b, r, 0, N);
            }
          // Partial column ranges: panel-aligned starts, ends at a panel or N.
          for (int nb = 0; nb < N; nb += kPanelWidth)
            for (int ne = nb + kPanelWidth; ne < N + kPanelWidth; ne += kPanelWidth) {
              const int end = ne < N ? ne : N;
              INFO(t->isa << " M=" << M << " N=" << N << " K=" << K << " range=[" << nb << "," << end << ")");
              g.require_close(g.run(ref, true, true, Activation::gelu, nb, end),
                              g.run(*t, true, true, Activation::gelu, nb, end), true, true, nb, end);
            }
        }
  }
}

TEST_CASE("gemm_f32 residual may alias C", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels()) {
    const int M = 5, N = 33, K = 17;
    const GemmCase g(M, N, K, 99);
    std::vector<float> C = g.residual;  // ldc == ldr
    t->gemm_f32(g.A.data(), g.lda, g.Wp.data(), g.bias.data(), C.data(), g.ldr, C.data(), g.ldr, M, N, K, 0, N,
                Activation::gelu);
    std::vector<float> got;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) got.push_back(C[size_t(m) * g.ldr + n]);
    INFO(t->isa);
    g.require_close(g.run(ref, true, true, Activation::gelu, 0, N), got, true, true, 0, N);
  }
}

TEST_CASE("gemm_f32 is bit-identical whatever M and tile and column range", "[kernels]") {
  const int M = 33, N = 100, K = 257;
  const GemmCase g(M, N, K, 4242);
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    // All rows, all columns, in one call.
    std::vector<float> full(size_t(M) * g.ldc);
    t->gemm_f32(g.A.data(), g.lda, g.Wp.data(), g.bias.data(), g.residual.data(), g.ldr, full.data(), g.ldc, M, N, K, 0,
                N, Activation::gelu);
    // Rows [m0, m0 + rows) over columns [nb, ne), as a separate call.
    auto check = [&](int m0, int rows, int nb, int ne) {
      INFO("rows [" << m0 << "," << m0 + rows << ") cols [" << nb << "," << ne << ")");
      std::vector<float> part(size_t(rows) * g.ldc);
      t->gemm_f32(g.A.data() + size_t(m0) * g.lda, g.lda, g.Wp.data(), g.bias.data(),
                  g.residual.data() + size_t(m0) * g.ldr, g.ldr, part.data(), g.ldc, rows, N, K, nb, ne,
                  Activation::gelu);
      for (int m = 0; m < rows; ++m)
        REQUIRE(std::memcmp(&part[size_t(m) * g.ldc + nb], &full[size_t(m0 + m) * g.ldc + nb],
                            sizeof(float) * (ne - nb)) == 0);
    };
    for (int m0 : {0, 5, 13, 32}) check(m0, 1, 0, N);  // M = 1: the GEMV path
    check(3, 7, 0, N);                                 // M = 7: two row tiles (6 + 1 or 4 + 3)
    check(0, 2, 0, N);
    check(10, 23, 0, N);
    check(0, M, 16, 48);  // column splits, as threads would do them
    check(0, M, 48, N);
    check(7, 1, 96, N);
    check(1, 3, 0, 16);
  }
}

// K past every ISA's long-K threshold (a tile's panels over twice the 512 KB
// L2 block: K > 4,096 for AVX-512's 4-panel tiles, > 16,384 for 1-panel ones), so
// M > 1 runs K in chunks with the accumulators parked between them: each
// C[m, n] must still be the single chain M = 1 computes, bit for bit, with
// more rows than one group of row tiles, a partial last panel, bias, GELU and
// the residual aliasing C.
TEST_CASE("gemm_f32 over a long K is the one chain of M = 1", "[kernels]") {
  const int M = 100, N = 20, K = 17000;
  const GemmCase g(M, N, K, 777);
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    std::vector<float> C = g.residual;  // ldc == ldr: C is its own residual
    t->gemm_f32(g.A.data(), g.lda, g.Wp.data(), g.bias.data(), C.data(), g.ldr, C.data(), g.ldr, M, N, K, 0, N,
                Activation::gelu);
    std::vector<float> got;
    for (int m = 0; m < M; ++m) {
      std::vector<float> row(g.ldr);
      t->gemm_f32(g.A.data() + size_t(m) * g.lda, g.lda, g.Wp.data(), g.bias.data(),
                  g.residual.data() + size_t(m) * g.ldr, g.ldr, row.data(), g.ldr, 1, N, K, 0, N, Activation::gelu);
      INFO("row " << m);
      REQUIRE(std::memcmp(row.data(), &C[size_t(m) * g.ldr], sizeof(float) * N) == 0);
      got.insert(got.end(), C.begin() + ptrdiff_t(m) * ptrdiff_t(g.ldr),
                 C.begin() + ptrdiff_t(m) * ptrdiff_t(g.ldr) + N);
    }
    g.require_close(g.run(ref, true, true, Activation::gelu, 0, N), got, true, true, 0, N);
  }
}

TEST_CASE("gemm_f32 writes only rows below M and columns in n_begin..n_end", "[kernels]") {
  const float guard = 1234.5f;
  for (const KernelTable* t : available_kernels()) {
    for (int N : {7, 17, 33, 100}) {
      const int M = 6, K = 9;
      const GemmCase g(M, N, K, 5);
      for (int nb = 0; nb < N; nb += kPanelWidth) {
        const int ne = nb + kPanelWidth < N ? nb + kPanelWidth : N;
        INFO(t->isa << " N=" << N << " range=[" << nb << "," << ne << ")");
        // One extra guard row past M; columns up to ldc are guarded too.
        std::vector<float> C(size_t(M + 1) * g.ldc, guard);
        t->gemm_f32(g.A.data(), g.lda, g.Wp.data(), g.bias.data(), g.residual.data(), g.ldr, C.data(), g.ldc, M, N, K,
                    nb, ne, Activation::relu);
        for (int m = 0; m <= M; ++m)
          for (int n = 0; n < int(g.ldc); ++n) {
            const bool inside = m < M && n >= nb && n < ne;
            if (!inside) REQUIRE(C[size_t(m) * g.ldc + n] == guard);
          }
      }
    }
  }
}

const int kRowSizes[] = {1, 7, 15, 16, 17, 33, 64, 1000};

TEST_CASE("layer_norm_f32 hand-checked on 1 2 3", "[kernels]") {
  const float x[] = {1, 2, 3}, gamma[] = {1, 1, 1}, beta[] = {0, 0, 0};
  const float s = 1.0f / std::sqrt(2.0f / 3.0f);  // var = 2/3
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    float y[3];
    t->layer_norm_f32(x, gamma, beta, y, 3, 0.0f);
    REQUIRE(std::fabs(y[0] + s) < kHandTol);
    REQUIRE(std::fabs(y[1]) < kHandTol);
    REQUIRE(std::fabs(y[2] - s) < kHandTol);
  }
}

TEST_CASE("layer_norm_f32 matches ref", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int C : kRowSizes)
      for (float offset : {0.0f, 100.0f}) {  // a large mean tests the two-pass variance
        INFO(t->isa << " C=" << C << " offset=" << offset);
        std::vector<float> x = random_vector(C, C, offset - 1, offset + 1);
        const std::vector<float> gamma = random_vector(C, C + 1, 0.5f, 1.5f);
        const std::vector<float> beta = random_vector(C, C + 2);
        std::vector<float> want(C), got(C);
        ref.layer_norm_f32(x.data(), gamma.data(), beta.data(), want.data(), C, 1e-5f);
        t->layer_norm_f32(x.data(), gamma.data(), beta.data(), got.data(), C, 1e-5f);
        REQUIRE(nmse(want, got) < (offset == 0 ? kLayerNormNmse : kLayerNormOffsetNmse));
        // In place.
        t->layer_norm_f32(x.data(), gamma.data(), beta.data(), x.data(), C, 1e-5f);
        REQUIRE(std::memcmp(x.data(), got.data(), sizeof(float) * C) == 0);
      }
}

TEST_CASE("softmax_f32 and log_softmax_f32 hand-checked on 0 and ln 2", "[kernels]") {
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    float x[] = {0.0f, std::log(2.0f)};
    float y[2];
    const float lse = t->log_softmax_f32(x, y, 2);
    REQUIRE(std::fabs(lse - std::log(3.0f)) < kHandTol);
    REQUIRE(std::fabs(y[0] - std::log(1.0f / 3)) < kHandTol);
    REQUIRE(std::fabs(y[1] - std::log(2.0f / 3)) < kHandTol);
    t->softmax_f32(x, 2);
    REQUIRE(std::fabs(x[0] - 1.0f / 3) < kHandTol);
    REQUIRE(std::fabs(x[1] - 2.0f / 3) < kHandTol);
  }
}

TEST_CASE("softmax_f32 and log_softmax_f32 match ref", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int n : kRowSizes) {
      INFO(t->isa << " n=" << n);
      const std::vector<float> x = random_vector(n, 100 + n, -8.0f, 8.0f);
      std::vector<float> want = x, got = x;
      ref.softmax_f32(want.data(), n);
      t->softmax_f32(got.data(), n);
      REQUIRE(nmse(want, got) < kSoftmaxNmse);

      std::vector<float> lwant(n), lgot(n);
      const float lse_want = ref.log_softmax_f32(x.data(), lwant.data(), n);
      const float lse_got = t->log_softmax_f32(x.data(), lgot.data(), n);
      REQUIRE(nmse(lwant, lgot) < kLogSoftmaxNmse);
      REQUIRE(std::fabs(lse_want - lse_got) <= 1e-5f * std::fabs(lse_want) + 1e-6f);
      // In place.
      std::vector<float> inplace = x;
      t->log_softmax_f32(inplace.data(), inplace.data(), n);
      REQUIRE(std::memcmp(inplace.data(), lgot.data(), sizeof(float) * n) == 0);
    }
}

TEST_CASE("softmax_f32 gives masked (-inf) entries zero weight", "[kernels]") {
  for (const KernelTable* t : available_kernels())
    for (int n : {2, 17, 33}) {
      INFO(t->isa << " n=" << n);
      std::vector<float> x = random_vector(n, 3);
      x[1] = -INFINITY;
      x[n - 1] = -INFINITY;
      t->softmax_f32(x.data(), n);
      REQUIRE(x[1] == 0.0f);
      REQUIRE(x[n - 1] == 0.0f);
    }
}

// The loss gradient's exp from a saved log-sum-exp: with scale 1 and offset 0 it
// is each table's softmax_f32 within rounding; scale and offset are applied
// after exp (within one rounding: a table may fuse them into an fma);
// accumulate adds the same values bit for bit; in place equals out of place;
// -inf gives exactly -offset.
TEST_CASE("scaled_exp_f32 is the softmax from the log-sum-exp, scaled and offset", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels())
    for (int n : {1, 7, 15, 16, 17, 33, 64, 1000, 8003}) {
      INFO(t->isa << " n=" << n);
      std::vector<float> x = random_vector(n, 700 + n, -9.0f, 9.0f);
      if (n > 2) x[2] = -INFINITY;
      float m = 0.0f, l = 0.0f;
      t->log_sum_exp_f32(x.data(), n, &m, &l);
      std::vector<float> p(static_cast<size_t>(n)), softmax = x;
      t->scaled_exp_f32(x.data(), n, m + l, 1.0f, 0.0f, p.data(), false);
      t->softmax_f32(softmax.data(), n);
      REQUIRE(nmse(softmax, p) < kSoftmaxNmse);
      const double total = std::accumulate(p.begin(), p.end(), 0.0);
      REQUIRE(std::fabs(total - 1.0) < 1e-5);

      std::vector<float> y(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      t->scaled_exp_f32(x.data(), n, m + l, 0.75f, 2e-4f, y.data(), false);
      for (int i = 0; i < n; ++i) {  // one rounding or two: an ISA may fuse the multiply and subtraction
        const float unfused = 0.75f * p[size_t(i)] - 2e-4f;
        REQUIRE(std::fabs(unfused - y[size_t(i)]) <= 0x1p-23f * (0.75f * p[size_t(i)] + 2e-4f));
      }
      if (n > 2) REQUIRE(y[2] == -2e-4f);

      const std::vector<float> before = random_vector(n, 800 + n);
      std::vector<float> sum = before;
      t->scaled_exp_f32(x.data(), n, m + l, 0.75f, 2e-4f, sum.data(), true);
      for (int i = 0; i < n; ++i) want[size_t(i)] = before[size_t(i)] + y[size_t(i)];
      REQUIRE(std::memcmp(want.data(), sum.data(), sizeof(float) * size_t(n)) == 0);

      std::vector<float> inplace = x;
      t->scaled_exp_f32(inplace.data(), n, m + l, 0.75f, 2e-4f, inplace.data(), false);
      REQUIRE(std::memcmp(inplace.data(), y.data(), sizeof(float) * size_t(n)) == 0);

      std::vector<float> from_ref(static_cast<size_t>(n));
      ref.scaled_exp_f32(x.data(), n, m + l, 0.75f, 2e-4f, from_ref.data(), false);
      REQUIRE(nmse(from_ref, y) < kSoftmaxNmse);
    }
  // n = 0 writes nothing.
  float untouched = 5.0f;
  for (const KernelTable* t : available_kernels())
    t->scaled_exp_f32(&untouched, 0, 0.0f, 1.0f, 0.0f, &untouched, false);
  REQUIRE(untouched == 5.0f);
}

TEST_CASE("argmax_f32 matches ref exactly", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int n : kRowSizes)
      for (int variant = 0; variant < 5; ++variant) {
        INFO(t->isa << " n=" << n << " variant=" << variant);
        std::vector<float> x = random_vector(n, 200 + n + variant, -5.0f, 5.0f);
        if (variant == 1)  // many ties: 3 distinct values
          for (float& v : x) v = std::floor(v / 4);
        if (variant == 2) x[n - 1] = 100.0f;  // maximum in the tail
        if (variant == 3) {                   // NaNs and signed zeros
          for (int i = 0; i < n; i += 3) x[i] = NAN;
          for (int i = 1; i < n; i += 3) x[i] = i % 2 ? 0.0f : -0.0f;
        }
        if (variant == 4) x[0] = NAN;
        float vwant = 0, vgot = 0;
        const int want = ref.argmax_f32(x.data(), n, &vwant);
        const int got = t->argmax_f32(x.data(), n, &vgot);
        REQUIRE(want == got);
        REQUIRE(std::memcmp(&vwant, &vgot, sizeof(float)) == 0);
      }
}

TEST_CASE("top_k_f32 matches ref exactly", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels())
    for (int n : {1, 7, 16, 33, 100, 1000, 8003})
      for (int k : {1, 2, 8, 64})
        for (int variant = 0; variant < 5; ++variant) {
          INFO(t->isa << " n=" << n << " k=" << k << " variant=" << variant);
          std::vector<float> x = random_vector(n, 300 + n + k + variant, -5.0f, 5.0f);
          if (variant == 1)  // many ties: 3 distinct values
            for (float& v : x) v = std::floor(v / 4);
          if (variant == 2)  // ascending: every vector holds a new best
            for (int i = 0; i < n; ++i) x[i] = float(i);
          if (variant == 3) {  // NaN, -inf and signed zeros are never taken or taken as ties
            for (int i = 0; i < n; i += 3) x[i] = NAN;
            for (int i = 1; i < n; i += 3) x[i] = i % 2 ? 0.0f : -0.0f;
            for (int i = 2; i < n; i += 5) x[i] = -INFINITY;
          }
          if (variant == 4)  // a log-softmax row: few candidates, a long flat tail
            for (int i = 0; i < n; ++i) x[i] = i % 97 == 5 ? -0.5f - float(i % 7) : -30.0f;
          std::vector<float> want_v(k), got_v(k);
          std::vector<int32_t> want_i(k), got_i(k);
          int want_n = -1, got_n = -2;
          ref.top_k_f32(x.data(), n, k, want_v.data(), want_i.data(), &want_n);
          t->top_k_f32(x.data(), n, k, got_v.data(), got_i.data(), &got_n);
          REQUIRE(want_n == got_n);
          for (int i = 0; i < want_n; ++i) {
            REQUIRE(want_i[size_t(i)] == got_i[size_t(i)]);
            REQUIRE(std::memcmp(&want_v[size_t(i)], &got_v[size_t(i)], sizeof(float)) == 0);
          }
          // The reference against a sort of the candidates: largest first, ties by index.
          std::vector<int32_t> order;
          for (int i = 0; i < n; ++i)
            if (x[size_t(i)] > -INFINITY) order.push_back(i);
          std::stable_sort(order.begin(), order.end(),
                           [&](int32_t a, int32_t b) { return x[size_t(a)] > x[size_t(b)]; });
          REQUIRE(want_n == std::min<int>(k, int(order.size())));
          for (int i = 0; i < want_n; ++i) REQUIRE(want_i[size_t(i)] == order[size_t(i)]);
        }
}

// The search's fused selection: each table's log_sum_exp_f32 gives the two
// numbers its log_softmax_f32 subtracts, and its log_softmax_top_k_f32 the
// same values and indices as its log_softmax_f32 followed by its top_k_f32,
// bit for bit, without writing the row; and they agree with the reference's.
TEST_CASE("log_sum_exp_f32 and log_softmax_top_k_f32 are log_softmax_f32 then top_k_f32 bit for bit",
          "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels())
    for (int n : {1, 7, 16, 33, 100, 1000, 8003})
      for (int k : {1, 2, 8, 64})
        for (int variant = 0; variant < 5; ++variant) {
          INFO(t->isa << " n=" << n << " k=" << k << " variant=" << variant);
          std::vector<float> x = random_vector(n, 500 + n + k + variant, -9.0f, 9.0f);
          if (variant == 1)  // many ties: 3 distinct values
            for (float& v : x) v = std::floor(v / 4);
          if (variant == 2)  // ascending: every vector holds a new best
            for (int i = 0; i < n; ++i) x[i] = float(i) * 0.25f;
          if (variant == 3)  // masked entries, as a minimum length or a shortlist leaves them
            for (int i = 2; i < n; i += 5) x[i] = -INFINITY;
          if (variant == 4)  // a peaked row: few candidates, a long flat tail
            for (int i = 0; i < n; ++i) x[i] = i % 97 == 5 ? 12.0f - float(i % 7) : -20.0f;
          const std::vector<float> before = x;
          std::vector<float> y(size_t(n), 0.0f);
          const float lse = t->log_softmax_f32(x.data(), y.data(), n);
          float m = 0.0f, l = 0.0f;
          t->log_sum_exp_f32(x.data(), n, &m, &l);
          const float m_plus_l = m + l;  // what log_softmax_f32 returns
          REQUIRE(std::memcmp(&lse, &m_plus_l, sizeof(float)) == 0);
          for (int i = 0; i < n; ++i) {
            const float yi = x[size_t(i)] - m - l;
            REQUIRE(std::memcmp(&yi, &y[size_t(i)], sizeof(float)) == 0);
          }
          std::vector<float> want_v(k), got_v(k);
          std::vector<int32_t> want_i(k), got_i(k);
          int want_n = -1, got_n = -2;
          t->top_k_f32(y.data(), n, k, want_v.data(), want_i.data(), &want_n);
          t->log_softmax_top_k_f32(x.data(), n, k, got_v.data(), got_i.data(), &got_n);
          REQUIRE(x == before);  // nothing written
          REQUIRE(want_n == got_n);
          for (int i = 0; i < want_n; ++i) {
            REQUIRE(want_i[size_t(i)] == got_i[size_t(i)]);
            REQUIRE(std::memcmp(&want_v[size_t(i)], &got_v[size_t(i)], sizeof(float)) == 0);
          }
          // Against the reference: the same tokens unless two were within rounding, close values.
          float rm = 0.0f, rl = 0.0f;
          ref.log_sum_exp_f32(x.data(), n, &rm, &rl);
          REQUIRE(rm == m);
          REQUIRE(std::fabs(rl - l) <= 1e-5f * std::fabs(rl) + 1e-6f);
          std::vector<float> ref_v(k);
          std::vector<int32_t> ref_i(k);
          int ref_n = -3;
          ref.log_softmax_top_k_f32(x.data(), n, k, ref_v.data(), ref_i.data(), &ref_n);
          REQUIRE(ref_n == got_n);
          for (int i = 0; i < ref_n; ++i) REQUIRE(std::fabs(ref_v[size_t(i)] - got_v[size_t(i)]) <= 1e-4f);
        }
}

TEST_CASE("embed_f32 matches ref", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  const int V = 33;
  for (const KernelTable* t : simd_tables())
    for (int C : kRowSizes) {
      const std::vector<float> table = random_vector(size_t(V) * C, C);
      std::vector<float> packed(packed_size(V, C));
      pack_weights_f32(table.data(), V, C, packed.data());
      const std::vector<float> position = random_vector(C, C + 1);
      for (int id : {0, 1, 15, 16, 32}) {
        INFO(t->isa << " C=" << C << " id=" << id);
        std::vector<float> want(C), got(C);
        ref.embed_f32(packed.data(), C, id, 22.6f, position.data(), want.data());
        t->embed_f32(packed.data(), C, id, 22.6f, position.data(), got.data());
        REQUIRE(nmse(want, got) < kEmbedNmse);
        // And the reference itself reads the right row.
        for (int c = 0; c < C; ++c)
          REQUIRE(std::fabs(want[c] - (table[size_t(id) * C + c] * 22.6f + position[c])) <=
                  1e-5f * (1 + std::fabs(want[c])));
      }
    }
}

TEST_CASE("attention_f32 hand-checked with 2 keys", "[kernels]") {
  // Scores [0, ln 2] give weights [1/3, 2/3]; values [3, 0] and [0, 3] give [1, 2].
  const float q[] = {1, 0};
  const float k[] = {0, 0, std::log(2.0f), 0};
  const float v[] = {3, 0, 0, 3};
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    float out[2], scratch[2];
    t->attention_f32(q, 2, k, v, 2, out, 2, 1, 2, 2, 1.0f, -1, scratch);
    REQUIRE(std::fabs(out[0] - 1.0f) < kHandTol);
    REQUIRE(std::fabs(out[1] - 2.0f) < kHandTol);
    // Causal with offset 0: query 0 sees key 0 only.
    t->attention_f32(q, 2, k, v, 2, out, 2, 1, 2, 2, 1.0f, 0, scratch);
    REQUIRE(std::fabs(out[0] - 3.0f) < kHandTol);
    REQUIRE(std::fabs(out[1]) < kHandTol);
  }
}

TEST_CASE("attention_f32 causal: query i never sees key i + offset + 1", "[kernels]") {
  const int T = 9, dh = 33;
  for (const KernelTable* t : available_kernels())
    for (int offset : {0, 2}) {
      const std::vector<float> q = random_vector(size_t(T) * dh, 1);
      std::vector<float> k = random_vector(size_t(T) * dh, 2);
      std::vector<float> v = random_vector(size_t(T) * dh, 3);
      std::vector<float> before(size_t(T) * dh), after(size_t(T) * dh), scratch(T);
      t->attention_f32(q.data(), dh, k.data(), v.data(), dh, before.data(), dh, T, T, dh, 0.2f, offset, scratch.data());
      for (int i = 0; i + offset + 1 < T; ++i) {
        INFO(t->isa << " offset=" << offset << " query=" << i);
        const int j = i + offset + 1;  // the first key query i must not see
        std::vector<float> k2 = k, v2 = v;
        for (int d = 0; d < dh; ++d) {
          k2[size_t(j) * dh + d] += 5.0f;
          v2[size_t(j) * dh + d] -= 7.0f;
        }
        t->attention_f32(q.data(), dh, k2.data(), v2.data(), dh, after.data(), dh, T, T, dh, 0.2f, offset,
                         scratch.data());
        REQUIRE(std::memcmp(&before[size_t(i) * dh], &after[size_t(i) * dh], sizeof(float) * dh) == 0);
        // ...while query j does see it.
        REQUIRE(std::memcmp(&before[size_t(j) * dh], &after[size_t(j) * dh], sizeof(float) * dh) != 0);
      }
    }
}

TEST_CASE("attention_f32 matches ref", "[kernels]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int dh : {1, 7, 16, 17, 33, 64, 128})
      for (int Tq : {1, 7})
        for (int Tk : {1, 7, 33})
          for (int offset : {-1, 0, 3}) {
            INFO(t->isa << " dh=" << dh << " Tq=" << Tq << " Tk=" << Tk << " offset=" << offset);
            // Heads interleaved in rows of 3 * dh, as in a fused QKV projection.
            const size_t q_stride = dh + 3, kv_stride = 3 * size_t(dh), out_stride = dh + 1;
            const uint32_t seed = uint32_t(dh * 100 + Tq * 10 + Tk);
            const std::vector<float> q = random_vector(Tq * q_stride, seed);
            const std::vector<float> k = random_vector(Tk * kv_stride, seed + 1);
            const std::vector<float> v = random_vector(Tk * kv_stride, seed + 2);
            const float scale = 1.0f / std::sqrt(float(dh));
            std::vector<float> want(Tq * out_stride), got(Tq * out_stride), scratch(Tk);
            ref.attention_f32(q.data(), q_stride, k.data(), v.data(), kv_stride, want.data(), out_stride, Tq, Tk, dh,
                              scale, offset, scratch.data());
            t->attention_f32(q.data(), q_stride, k.data(), v.data(), kv_stride, got.data(), out_stride, Tq, Tk, dh,
                             scale, offset, scratch.data());
            REQUIRE(nmse(want, got) < kAttentionNmse);
          }
}

}  // namespace
}  // namespace mt
