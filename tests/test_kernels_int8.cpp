// int8 kernel tests (mt/kernels.h, "--- int8 ---"): packing, the u8 x s8
// GEMM and its float epilogue, per-row activation quantization and the int8
// embedding, every ISA table this CPU runs against the scalar reference.
// Integer sums and the none/relu epilogues must match bit for bit; GELU
// within a few ulps (exp/erf approximations). ISAs built in but not runnable
// here are reported with WARN.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernel_test_util.hpp"
#include "mt/kernels.h"

namespace mt {
namespace {

// GELU: the SIMD erf differs from std::erf by a few ulps of the input's
// magnitude (the slope of GELU is at most 1.13).
constexpr double kGeluUlps = 8;
// Quantization error beyond half a step, in steps: the rounding of
// a * (1 / scale) is at most 255 * 2^-23 steps.
constexpr double kQuantizeSlackSteps = 1e-4;
// Bytes of Aq rows between Kp and the row stride: kernels must ignore them.
constexpr uint8_t kStrideJunk = 0xAB;

using test::act_name;
using test::simd_tables;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  return test::random_vector(n, seed, lo, hi);
}

template <class T>
std::vector<T> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = T(dist(rng));
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One int8 GEMM problem: quantized activations (zero padding in [K, Kp),
// junk past Kp up to the row stride), packed weights with their row sums,
// scales, zeros, bias and residual. Strides are padded so they are really used.
struct Int8Case {
  int M, N, K, Kp;
  size_t lda, ldr, ldc;
  std::vector<uint8_t> Aq;
  std::vector<int8_t> W, Wp;
  std::vector<int32_t> w_sum, a_zero;
  std::vector<float> w_scale, a_scale, bias, residual;

  Int8Case(int M_, int N_, int K_) : M(M_), N(N_), K(K_), Kp(padded_k_i8(K_)) {
    lda = size_t(Kp) + 8;
    ldr = size_t(N) + 3;
    ldc = size_t(N) + 5;
    Aq.assign(size_t(M) * lda, kStrideJunk);
    W.assign(size_t(N) * K, 0);
    a_zero.assign(M, 0);
    a_scale.assign(M, 1.0f);
    w_scale.assign(N, 1.0f);
  }

  // Random activations in [a_lo, a_hi] and weights in [w_lo, w_hi].
  void fill(uint32_t seed, int a_lo = 0, int a_hi = 255, int w_lo = -128, int w_hi = 127) {
    const auto a = random_ints<uint8_t>(size_t(M) * K, seed, a_lo, a_hi);
    for (int m = 0; m < M; ++m) set_row(m, a.data() + size_t(m) * K);
    W = random_ints<int8_t>(size_t(N) * K, seed + 1, w_lo, w_hi);
    pack();
  }
  void set_row(int m, const uint8_t* a) {
    uint8_t* row = Aq.data() + size_t(m) * lda;
    std::memcpy(row, a, size_t(K));
    for (int k = K; k < Kp; ++k) row[k] = 0;  // as QuantizeRowsU8 leaves it
  }
  void pack() {
    Wp.assign(packed_size_i8(N, K), 0);
    pack_weights_i8(W.data(), N, K, Wp.data());
    w_sum.assign(N, 0);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) w_sum[n] += W[size_t(n) * K + k];
  }
  // Nonzero zero points, scales, bias and residual.
  void fill_epilogue(uint32_t seed) {
    a_zero = random_ints<int32_t>(M, seed, 0, 255);
    a_scale = random_floats(M, seed + 1, 0.001f, 0.05f);
    w_scale = random_floats(N, seed + 2, 0.001f, 0.02f);
    bias = random_floats(N, seed + 3, -1.0f, 1.0f);
    residual = random_floats(size_t(M) * ldr, seed + 4, -1.0f, 1.0f);
  }

  // The exact sum of row m and column n, in int64.
  int64_t exact(int m, int n) const {
    int64_t s = 0;
    for (int k = 0; k < K; ++k) s += int64_t(Aq[size_t(m) * lda + k]) * W[size_t(n) * K + k];
    return s;
  }

  // C (M x ldc, starting from `fill`) after one call on rows [m0, m0 + rows).
  std::vector<float> run(const KernelTable& t, bool with_bias, bool with_residual, Activation act, int n_begin,
                         int n_end, float fill = 0.0f, int m0 = 0, int rows = -1) const {
    if (rows < 0) rows = M;
    std::vector<float> C(size_t(M) * ldc, fill);
    t.gemm_u8s8(Aq.data() + size_t(m0) * lda, lda, Wp.data(), w_sum.data(), w_scale.data(), a_scale.data() + m0,
                a_zero.data() + m0, with_bias ? bias.data() : nullptr,
                with_residual ? residual.data() + size_t(m0) * ldr : nullptr, ldr, C.data() + size_t(m0) * ldc, ldc,
                rows, N, K, n_begin, n_end, act);
    return C;
  }
};

// Every C[m, n] with n in [n_begin, n_end) of the same bits in want and got.
void require_same_bits(const Int8Case& g, const std::vector<float>& want, const std::vector<float>& got, int n_begin,
                       int n_end) {
  for (int m = 0; m < g.M; ++m)
    for (int n = n_begin; n < n_end; ++n) {
      const size_t i = size_t(m) * g.ldc + n;
      if (!same_bits(want[i], got[i])) {
        INFO("C[" << m << "," << n << "] want " << want[i] << " got " << got[i]);
        REQUIRE(same_bits(want[i], got[i]));
      }
    }
}

TEST_CASE("int8 ISA tables not runnable on this CPU are reported", "[kernels][int8]") {
  for (const char* isa : unavailable_kernels()) WARN("skipping ISA " << isa << ": not supported by this CPU");
  // Every table fills the int8 entries.
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    REQUIRE(t->quantize_rows_u8 != nullptr);
    REQUIRE(t->gemm_u8s8 != nullptr);
    REQUIRE(t->embed_i8 != nullptr);
  }
#if defined(__x86_64__)
  // The VNNI table is built on x86: either runnable or reported.
  bool listed = false;
  for (const KernelTable* t : available_kernels()) listed = listed || std::string(t->isa) == "avx512vnni";
  for (const char* isa : unavailable_kernels()) listed = listed || std::string(isa) == "avx512vnni";
  REQUIRE(listed);
#elif defined(__aarch64__)
  // NEON always runs; the dot-product table is either runnable or reported.
  bool neon = false, dotprod = false;
  for (const KernelTable* t : available_kernels()) {
    neon = neon || std::string(t->isa) == "neon";
    dotprod = dotprod || std::string(t->isa) == "neon_dotprod";
  }
  for (const char* isa : unavailable_kernels()) dotprod = dotprod || std::string(isa) == "neon_dotprod";
  REQUIRE(neon);
  REQUIRE(dotprod);
#elif defined(__EMSCRIPTEN__)
  // SIMD128 is what the build targets: always there, and the best table.
  REQUIRE(std::string(best_kernels().isa) == "wasm_simd128");
#endif
}

TEST_CASE("pack_weights_i8 round trip through packed_at_i8", "[kernels][int8]") {
  // Hand-checked offset: panel 1 of Kp = 12, k group 1, column 1, k % 4 = 2.
  REQUIRE(packed_offset_i8(10, 17, 6) == 192 + 64 + 4 + 2);
  for (int N : {1, 7, 16, 17, 33})
    for (int K : {1, 3, 4, 5, 9, 64}) {
      INFO("N=" << N << " K=" << K);
      const auto w = random_ints<int8_t>(size_t(N) * K, uint32_t(N * 100 + K), -128, 127);
      std::vector<int8_t> packed(packed_size_i8(N, K), int8_t(0x5A));
      REQUIRE(packed.size() == packed_panels(N) * kPanelWidth * size_t(padded_k_i8(K)));
      pack_weights_i8(w.data(), N, K, packed.data());
      std::vector<bool> used(packed.size(), false);
      for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k) {
          REQUIRE(packed_at_i8(packed.data(), K, n, k) == w[size_t(n) * K + k]);
          used[packed_offset_i8(K, n, k)] = true;
        }
      // Everything else (columns past N, k in [K, Kp)) is zero padding.
      for (size_t i = 0; i < packed.size(); ++i)
        if (!used[i]) REQUIRE(packed[i] == 0);
      // And back.
      std::vector<int8_t> back(w.size(), int8_t(0x5A));
      unpack_weights_i8(packed.data(), N, K, back.data());
      REQUIRE(back == w);
    }
}

TEST_CASE("gemm_u8s8 hand-checked 2x3 with K 5", "[kernels][int8]") {
  const uint8_t a[2][5] = {{1, 2, 3, 4, 5}, {10, 0, 255, 1, 2}};
  const int8_t w[3][5] = {{1, -1, 2, 0, 3}, {-128, 127, 0, 5, -2}, {0, 0, 0, 0, 1}};
  Int8Case g(2, 3, 5);
  for (int m = 0; m < 2; ++m) g.set_row(m, a[m]);
  std::memcpy(g.W.data(), w, sizeof w);
  g.pack();
  REQUIRE(g.w_sum == std::vector<int32_t>{5, 2, 1});
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    // Unit scales, zero points 0: the plain integer sums.
    std::vector<float> C = g.run(*t, false, false, Activation::none, 0, 3);
    const float sums[2][3] = {{20, 136, 5}, {526, -1279, 2}};
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 3; ++n) REQUIRE(C[size_t(m) * g.ldc + n] == sums[m][n]);

    // (acc - zero * w_sum) * (a_scale * w_scale) + bias, then relu, then the residual.
    Int8Case e = g;
    e.a_zero = {2, 0};
    e.a_scale = {0.5f, 0.25f};
    e.w_scale = {1, 2, 4};
    e.bias = {1, -1, 0.5f};
    e.residual.assign(2 * e.ldr, 0.0f);
    e.residual[e.ldr] = 100;  // row 1, column 0
    C = e.run(*t, true, true, Activation::none, 0, 3);
    const float none[2][3] = {{6, 131, 6.5f}, {232.5f, -640.5f, 2.5f}};
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 3; ++n) REQUIRE(C[size_t(m) * e.ldc + n] == none[m][n]);
    C = e.run(*t, true, true, Activation::relu, 0, 3);
    const float relu[2][3] = {{6, 131, 6.5f}, {232.5f, 0, 2.5f}};
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 3; ++n) REQUIRE(C[size_t(m) * e.ldc + n] == relu[m][n]);
  }
}

// C == the exact int64 sums (as floats: the same rounding as from int32).
void require_exact_sums(const KernelTable& t, const Int8Case& g) {
  const std::vector<float> C = g.run(t, false, false, Activation::none, 0, g.N);
  for (int m = 0; m < g.M; ++m)
    for (int n = 0; n < g.N; ++n) {
      const int64_t want = g.exact(m, n);
      const float got = C[size_t(m) * g.ldc + n];
      if (got != float(want)) {
        INFO(t.isa << " M=" << g.M << " N=" << g.N << " K=" << g.K << " C[" << m << "," << n << "] want " << want
                   << " got " << got);
        REQUIRE(got == float(want));
      }
    }
}

TEST_CASE("gemm_u8s8 integer sums are exact on awkward sizes", "[kernels][int8]") {
  const int Ms[] = {1, 2, 3, 5, 7, 8, 9, 17, 33};
  const int Ns[] = {1, 15, 16, 17, 33, 100};
  const int Ks[] = {1, 3, 4, 5, 63, 64, 65, 256, 1024};
  for (int M : Ms)
    for (int N : Ns)
      for (int K : Ks) {
        Int8Case g(M, N, K);
        g.fill(uint32_t(M * 10000 + N * 100 + K));
        for (const KernelTable* t : available_kernels()) require_exact_sums(*t, g);
      }
}

TEST_CASE("gemm_u8s8 does not saturate on extreme values", "[kernels][int8]") {
  // vpmaddubsw would saturate int16 pair sums here: 255 * -128 * 2 < INT16_MIN.
  for (int M : {1, 5, 9})
    for (int N : {1, 17, 33})
      for (int K : {1, 4, 5, 64, 65, 1024})
        for (int w : {-128, 127}) {
          Int8Case g(M, N, K);
          g.fill(1, 255, 255, w, w);
          for (const KernelTable* t : available_kernels()) {
            require_exact_sums(*t, g);
            // And the sum itself: K * 255 * w.
            const std::vector<float> C = g.run(*t, false, false, Activation::none, 0, N);
            REQUIRE(C[0] == float(int64_t(K) * 255 * w));
          }
        }
}

TEST_CASE("gemm_u8s8 epilogue matches ref bit for bit", "[kernels][int8]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int M : {1, 3, 8, 9})
      for (int N : {15, 16, 33, 100})
        for (int K : {5, 64, 65, 300}) {
          Int8Case g(M, N, K);
          const uint32_t seed = uint32_t(M * 10000 + N * 100 + K);
          g.fill(seed);
          g.fill_epilogue(seed + 7);
          for (int flags = 0; flags < 4; ++flags)
            for (Activation act : {Activation::none, Activation::relu, Activation::swish}) {
              const bool b = flags & 1, r = flags & 2;
              INFO(t->isa << " M=" << M << " N=" << N << " K=" << K << " bias=" << b << " residual=" << r
                          << " act=" << act_name(act));
              require_same_bits(g, g.run(ref, b, r, act, 0, N), g.run(*t, b, r, act, 0, N), 0, N);
            }
          // GELU: within a few ulps of the pre-activation and residual magnitudes.
          const std::vector<float> pre = g.run(ref, true, false, Activation::none, 0, N);
          const std::vector<float> want = g.run(ref, true, true, Activation::gelu, 0, N);
          const std::vector<float> got = g.run(*t, true, true, Activation::gelu, 0, N);
          const double u = std::ldexp(1.0, -24);
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
              const size_t i = size_t(m) * g.ldc + n;
              const double tol =
                  kGeluUlps * u * (std::fabs(pre[i]) + std::fabs(g.residual[size_t(m) * g.ldr + n])) + FLT_MIN;
              if (!(std::fabs(double(want[i]) - got[i]) <= tol)) {
                INFO(t->isa << " gelu M=" << M << " N=" << N << " K=" << K << " C[" << m << "," << n << "] ref "
                            << want[i] << " got " << got[i]);
                REQUIRE(std::fabs(double(want[i]) - got[i]) <= tol);
              }
            }
        }
}

TEST_CASE("gemm_u8s8 without zero points leaves the compensation out", "[kernels][int8]") {
  // a_zero == nullptr (and w_sum == nullptr): C is the plain dequantized sum,
  // the same bits as with every zero point 0, on every ISA.
  for (const KernelTable* t : available_kernels())
    for (int M : {1, 5})
      for (int N : {15, 33}) {
        Int8Case g(M, N, 65);
        g.fill(uint32_t(M * 100 + N));
        g.fill_epilogue(uint32_t(M * 100 + N + 1));
        g.a_zero.assign(size_t(M), 0);
        const std::vector<float> want = g.run(*t, true, true, Activation::relu, 0, N);
        std::vector<float> got(size_t(M) * g.ldc, 0.0f);
        t->gemm_u8s8(g.Aq.data(), g.lda, g.Wp.data(), nullptr, g.w_scale.data(), g.a_scale.data(), nullptr,
                     g.bias.data(), g.residual.data(), g.ldr, got.data(), g.ldc, M, N, g.K, 0, N, Activation::relu);
        INFO(t->isa);
        require_same_bits(g, want, got, 0, N);
      }
}

TEST_CASE("gemm_u8s8 residual may alias C", "[kernels][int8]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : available_kernels())
    for (int N : {17, 100}) {
      INFO(t->isa << " N=" << N);
      Int8Case g(5, N, 37);
      g.fill(11);
      g.fill_epilogue(12);
      g.ldr = g.ldc;
      g.residual = random_floats(size_t(g.M) * g.ldc, 13, -1.0f, 1.0f);
      const std::vector<float> want = g.run(ref, true, true, Activation::relu, 0, N);
      std::vector<float> C = g.residual;
      t->gemm_u8s8(g.Aq.data(), g.lda, g.Wp.data(), g.w_sum.data(), g.w_scale.data(), g.a_scale.data(), g.a_zero.data(),
                   g.bias.data(), C.data(), g.ldc, C.data(), g.ldc, g.M, N, g.K, 0, N, Activation::relu);
      require_same_bits(g, want, C, 0, N);
    }
}

TEST_CASE("gemm_u8s8 writes only rows below M and columns in n_begin..n_end", "[kernels][int8]") {
  const float guard = 1234.5f;
  for (const KernelTable* t : available_kernels())
    for (int N : {7, 17, 33, 100}) {
      const int M = 6, K = 9;
      Int8Case g(M + 1, N, K);  // one guard row past M
      g.fill(21);
      g.fill_epilogue(22);
      for (int nb = 0; nb < N; nb += kPanelWidth)
        for (int ne : {nb + kPanelWidth < N ? nb + kPanelWidth : N, N}) {
          INFO(t->isa << " N=" << N << " range=[" << nb << "," << ne << ")");
          std::vector<float> C(size_t(M + 1) * g.ldc, guard);
          t->gemm_u8s8(g.Aq.data(), g.lda, g.Wp.data(), g.w_sum.data(), g.w_scale.data(), g.a_scale.data(),
                       g.a_zero.data(), g.bias.data(), g.residual.data(), g.ldr, C.data(), g.ldc, M, N, K, nb, ne,
                       Activation::relu);
          int written = 0;
          for (int m = 0; m <= M; ++m)
            for (int n = 0; n < int(g.ldc); ++n) {
              const bool inside = m < M && n >= nb && n < ne;
              const bool untouched = C[size_t(m) * g.ldc + n] == guard;
              if (inside == untouched) {
                INFO("C[" << m << "," << n << "] inside=" << inside);
                REQUIRE(inside != untouched);
              }
              written += inside;
            }
          REQUIRE(written == M * (ne - nb));
        }
    }
}

TEST_CASE("gemm_u8s8 is bit-identical whatever M and column range", "[kernels][int8]") {
  for (const KernelTable* t : available_kernels())
    for (Activation act : {Activation::none, Activation::gelu}) {
      const int M = 13, N = 70, K = 77;
      INFO(t->isa << " act=" << act_name(act));
      Int8Case g(M, N, K);
      g.fill(31);
      g.fill_epilogue(32);
      const std::vector<float> all = g.run(*t, true, true, act, 0, N);
      // Each row alone (the M = 1 path), and rows in odd-sized groups.
      for (int m = 0; m < M; ++m) {
        const std::vector<float> one = g.run(*t, true, true, act, 0, N, 0.0f, m, 1);
        for (int n = 0; n < N; ++n) REQUIRE(same_bits(one[size_t(m) * g.ldc + n], all[size_t(m) * g.ldc + n]));
      }
      for (int m0 = 0; m0 < M; m0 += 3) {
        const int rows = M - m0 < 3 ? M - m0 : 3;
        const std::vector<float> part = g.run(*t, true, true, act, 0, N, 0.0f, m0, rows);
        for (int m = m0; m < m0 + rows; ++m)
          for (int n = 0; n < N; ++n) REQUIRE(same_bits(part[size_t(m) * g.ldc + n], all[size_t(m) * g.ldc + n]));
      }
      // Column ranges split at panels.
      std::vector<float> split(size_t(M) * g.ldc, 0.0f);
      for (const auto& range : {std::pair{0, 16}, std::pair{16, 48}, std::pair{48, N}}) {
        const std::vector<float> part = g.run(*t, true, true, act, range.first, range.second);
        for (int m = 0; m < M; ++m)
          for (int n = range.first; n < range.second; ++n) split[size_t(m) * g.ldc + n] = part[size_t(m) * g.ldc + n];
      }
      require_same_bits(g, all, split, 0, N);
    }
}

// Rows of one quantization problem, with the kernel's outputs.
struct QuantizeCase {
  int M, K, Kp;
  size_t lda, ldq;
  std::vector<float> A;
  static constexpr uint8_t kGuard = 0xCD;

  QuantizeCase(int M_, int K_) : M(M_), K(K_), Kp(padded_k_i8(K_)), lda(size_t(K_) + 3), ldq(size_t(Kp) + 5) {
    A.assign(size_t(M) * lda, 0.0f);
  }
  float* row(int m) { return A.data() + size_t(m) * lda; }

  struct Out {
    std::vector<uint8_t> q;
    std::vector<float> scales;
    std::vector<int32_t> zeros;
  };
  Out run(const KernelTable& t, float static_scale = 0.0f, int32_t static_zero = 0) const {
    Out o{std::vector<uint8_t>(size_t(M) * ldq, kGuard), std::vector<float>(M, -1.0f), std::vector<int32_t>(M, -1)};
    t.quantize_rows_u8(A.data(), lda, M, K, o.q.data(), ldq, o.scales.data(), o.zeros.data(), static_scale,
                       static_zero);
    return o;
  }
};

// Rows of every kind: random at several magnitudes, all zeros, constants of
// both signs, one-signed ranges, exact half steps.
QuantizeCase quantize_rows_of_every_kind(int K, uint32_t seed) {
  const float magnitudes[] = {1.0f, 1e-30f, 1e30f, 3e-3f, 700.0f};
  QuantizeCase c(12, K);
  for (int i = 0; i < 5; ++i) {
    const auto r = random_floats(K, seed + i, -magnitudes[i], magnitudes[i]);
    std::copy(r.begin(), r.end(), c.row(i));
  }
  for (int k = 0; k < K; ++k) {
    c.row(5)[k] = 0.0f;
    c.row(6)[k] = 3.25f;
    c.row(7)[k] = -1e-3f;
    c.row(8)[k] = 0.5f + float(k % 7);           // positive only
    c.row(9)[k] = -2.0f - float(k % 5) * 0.25f;  // negative only
    c.row(10)[k] = float(k % 9) - 4.5f;          // .5 ties under scale 1
    c.row(11)[k] = k % 2 ? -0.0f : 1e-45f;       // signed zero, a denormal
  }
  return c;
}

void require_same_quantization(const QuantizeCase& c, const QuantizeCase::Out& want, const QuantizeCase::Out& got) {
  for (int m = 0; m < c.M; ++m) {
    INFO("row " << m);
    REQUIRE(same_bits(want.scales[m], got.scales[m]));
    REQUIRE(want.zeros[m] == got.zeros[m]);
    for (size_t k = 0; k < c.ldq; ++k) {
      const size_t i = size_t(m) * c.ldq + k;
      if (want.q[i] != got.q[i]) {
        INFO("q[" << m << "," << k << "] want " << int(want.q[i]) << " got " << int(got.q[i]));
        REQUIRE(want.q[i] == got.q[i]);
      }
    }
  }
}

TEST_CASE("quantize_rows_u8 matches ref bit for bit", "[kernels][int8]") {
  const KernelTable& ref = reference_kernels();
  for (const KernelTable* t : simd_tables())
    for (int K : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1000}) {
      const QuantizeCase c = quantize_rows_of_every_kind(K, uint32_t(K));
      INFO(t->isa << " K=" << K << " dynamic");
      require_same_quantization(c, c.run(ref), c.run(*t));
      for (const auto& [s, z] : {std::pair{0.01f, 128}, std::pair{1.0f, 128}, std::pair{0.5f, 0}, std::pair{3e-5f, 255},
                                 std::pair{7.0f, -3}, std::pair{0.1f, 300}}) {
        INFO(t->isa << " K=" << K << " static scale " << s << " zero " << z);
        require_same_quantization(c, c.run(ref, s, z), c.run(*t, s, z));
      }
    }
}

TEST_CASE("quantize_rows_u8 hand-checked rounding padding and strides", "[kernels][int8]") {
  for (const KernelTable* t : available_kernels()) {
    INFO(t->isa);
    // Scale 1, zero 128: ties round to even; outside the range clamps.
    QuantizeCase c(1, 11);
    const float a[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 0.49f, 127.0f, 128.0f, -128.0f, -129.0f, 1e20f};
    std::copy(a, a + 11, c.row(0));
    const QuantizeCase::Out o = c.run(*t, 1.0f, 128);
    const uint8_t want[] = {128, 130, 130, 128, 126, 128, 255, 255, 0, 0, 255};
    for (int k = 0; k < 11; ++k) {
      INFO("k=" << k);
      REQUIRE(int(o.q[k]) == int(want[k]));
    }
    REQUIRE(o.scales[0] == 1.0f);
    REQUIRE(o.zeros[0] == 128);
    // [K, Kp) zeroed; past Kp up to the stride untouched.
    REQUIRE(o.q[11] == 0);
    for (size_t k = 12; k < c.ldq; ++k) REQUIRE(o.q[k] == QuantizeCase::kGuard);

    // Dynamic, hand-checked: range [-1, 4] -> scale 5 / 255, zero 51.
    QuantizeCase d(2, 3);
    d.row(0)[0] = -1.0f, d.row(0)[1] = 4.0f, d.row(0)[2] = 0.0f;
    // All zeros: scale 1, zero 0, q 0.
    const QuantizeCase::Out od = d.run(*t);
    REQUIRE(od.scales[0] == 5.0f / 255.0f);
    REQUIRE(od.zeros[0] == 51);
    REQUIRE(int(od.q[0]) == 0);
    REQUIRE(int(od.q[1]) == 255);
    REQUIRE(int(od.q[2]) == 51);
    REQUIRE(od.q[3] == 0);
    REQUIRE(od.scales[1] == 1.0f);
    REQUIRE(od.zeros[1] == 0);
    for (int k = 0; k < 4; ++k) REQUIRE(od.q[d.ldq + k] == 0);
  }
}

TEST_CASE("quantize_rows_u8 dequantizes within half a step", "[kernels][int8]") {
  for (const KernelTable* t : available_kernels())
    for (int K : {1, 5, 16, 33, 300}) {
      const QuantizeCase c = quantize_rows_of_every_kind(K, uint32_t(K + 100));
      const QuantizeCase::Out o = c.run(*t);
      for (int m = 0; m < c.M; ++m) {
        const double scale = o.scales[m];
        REQUIRE(scale > 0);
        REQUIRE(o.zeros[m] >= 0);
        REQUIRE(o.zeros[m] <= 255);
        for (int k = 0; k < K; ++k) {
          const double a = c.A[size_t(m) * c.lda + k];
          const double back = (double(o.q[size_t(m) * c.ldq + k]) - o.zeros[m]) * scale;
          INFO(t->isa << " K=" << K << " row " << m << " k=" << k << " a=" << a << " back=" << back);
          REQUIRE(std::fabs(a - back) <= scale * (0.5 + kQuantizeSlackSteps));
        }
      }
      // Static scale: values inside [(0 - zero) * s, (255 - zero) * s] within
      // half a step, values outside clamp to 0 or 255.
      const float s = 0.02f;
      const int32_t z = 100;
      const QuantizeCase::Out st = c.run(*t, s, z);
      for (int m = 0; m < c.M; ++m)
        for (int k = 0; k < K; ++k) {
          const double a = c.A[size_t(m) * c.lda + k];
          const int q = st.q[size_t(m) * c.ldq + k];
          INFO(t->isa << " static K=" << K << " row " << m << " k=" << k << " a=" << a << " q=" << q);
          if (a < (0 - z - 0.5) * double(s))
            REQUIRE(q == 0);
          else if (a > (255 - z + 0.5) * double(s))
            REQUIRE(q == 255);
          else
            REQUIRE(std::fabs(a - (q - z) * double(s)) <= s * (0.5 + kQuantizeSlackSteps));
        }
    }
}

TEST_CASE("embed_i8 matches a direct computation", "[kernels][int8]") {
  const int V = 37;
  for (const KernelTable* t : available_kernels())
    for (int C : {1, 5, 16, 33, 100}) {
      const auto w = random_ints<int8_t>(size_t(V) * C, uint32_t(C), -128, 127);
      std::vector<int8_t> packed(packed_size_i8(V, C));
      pack_weights_i8(w.data(), V, C, packed.data());
      const std::vector<float> row_scales = random_floats(V, 2, 0.001f, 0.1f);
      const std::vector<float> position = random_floats(C, 3, -1.0f, 1.0f);
      const float scale = 22.627417f;  // sqrt(512)
      for (int id : {0, 15, 16, 36})
        for (bool with_position : {true, false}) {
          INFO(t->isa << " C=" << C << " id=" << id << " position=" << with_position);
          std::vector<float> y(C + 1, -7.0f);
          t->embed_i8(packed.data(), row_scales.data(), C, id, scale, with_position ? position.data() : nullptr,
                      y.data());
          for (int c = 0; c < C; ++c) {
            // The order of mt/kernels.h, one rounding per statement.
            float want = float(w[size_t(id) * C + c]) * row_scales[id];
            want = want * scale;
            if (with_position) want = want + position[c];
            REQUIRE(same_bits(y[c], want));
          }
          REQUIRE(y[C] == -7.0f);
        }
    }
}

}  // namespace
}  // namespace mt
