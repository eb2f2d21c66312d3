// CUDA kernels against libmt's CPU reference kernels (reference_kernels()) on
// random data at awkward sizes: embeddings, LayerNorm, the GEMM epilogue,
// softmax, argmax and top-k, and cuBLAS linear layers. Attention has its own
// file. Without a CUDA device every case says why and passes.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
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
using test::require_close;
using test::require_equal;
using test::require_finished;
using test::require_ok;
using test::TestStream;

// Named tolerances, relative (x (1 + |ref|)). Kernels and references differ
// only by rounding: reductions summed in another order, fma contraction,
// CUDA's expf/logf/erff (within 2 ulp). A float sum of n terms changes by
// ~sqrt(n) roundings with the order, hence the tolerances growing with rows.
constexpr double kLayerNormTol = 1e-5;
// x = 10 +- 1: the reference's running float sum of the row rounds at ulp(10 C),
// an error the mean carries into every output (~2e-5 at C = 512).
constexpr double kLayerNormOffsetTol = 1e-4;
constexpr double kEpilogueTol = 1e-5;  // exact but for erff in GELU
double softmax_tol(int n) { return 1e-5 * std::max(1.0, std::sqrt(n / 1024.0)); }
// GEMM, per element, relative to sum_k |a_k w_k| + |bias| + |residual|: each
// of the K + 3 roundings of kernel and reference is at most 2^-24 of it; GELU
// (slope <= 1.13) adds little. TF32 rounds both inputs to 10 mantissa bits.
constexpr double kGemmRoundingsSlack = 2.5;
constexpr double kTf32InputError = 2.0 / 1024;

// Row-major ids in [0, V).
std::vector<int32_t> random_ids(size_t n, int V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, V - 1);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = dist(rng);
  return ids;
}

// Values on a coarse grid (steps of 1/4 in [-3, 3]), so rows have many ties.
std::vector<float> tied_vector(size_t n, uint32_t seed) {
  std::vector<float> v = random_vector(n, seed, -3.0f, 3.0f);
  for (float& x : v) x = std::round(x * 4.0f) / 4.0f;
  return v;
}

TEST_CASE("cuda: device", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  int device = 0;
  require_ok(int(cudaGetDevice(&device)), "cudaGetDevice");
  cudaDeviceProp prop{};
  require_ok(int(cudaGetDeviceProperties(&prop, device)), "cudaGetDeviceProperties");
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  WARN("CUDA device " << device << ": " << prop.name << ", sm_" << prop.major << prop.minor << ", "
                      << (prop.totalGlobalMem >> 20) << " MiB; runtime " << runtime << ", driver " << driver);
  // The kernels are built for sm_80 and sm_90 (CMAKE_CUDA_ARCHITECTURES).
  REQUIRE(prop.major >= 8);
}

TEST_CASE("cuda: launchers reject bad arguments without touching the device", "[cuda]") {
  // Runs without a GPU too: these return before any CUDA call.
  CudaAttention a;
  a.batch = 1, a.heads = 1, a.dh = kCudaAttentionMaxDh + 1, a.q_rows.rows = 1;
  REQUIRE(attention_f32_cuda(a, nullptr) != 0);
  a.dh = 64, a.kv_group = 0;
  REQUIRE(attention_f32_cuda(a, nullptr) != 0);
  a.kv_group = 2;
  a.append_k = a.append_v = reinterpret_cast<const float*>(16);  // append needs kv_group 1
  REQUIRE(attention_f32_cuda(a, nullptr) != 0);
  REQUIRE(top_k_f32_cuda(nullptr, 1, 10, 0, nullptr, nullptr, nullptr) != 0);
  REQUIRE(top_k_f32_cuda(nullptr, 1, 10, kCudaTopKMax + 1, nullptr, nullptr, nullptr) != 0);
  REQUIRE(linear_f32_cuda(nullptr, nullptr, 4, nullptr, 4, nullptr, nullptr, 0, nullptr, 4, 1, 4, 4, Activation::none,
                          GemmMath::f32, nullptr) != 0);
  REQUIRE(std::string(cuda_status_string(0)) == "success");
}

TEST_CASE("cuda: embed_f32 and embed_i8 give the reference's bits", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  const int V = 37, P = 11;
  for (int C : {1, 7, 33, 512, 515}) {
    for (int M : {1, 19}) {
      const float scale = std::sqrt(float(C));
      const std::vector<int32_t> ids = random_ids(M, V, 3 * C + M);
      const std::vector<int32_t> positions = random_ids(M, P, 5 * C + M);
      const std::vector<float> table = random_vector(size_t(V) * C, C);
      const std::vector<float> pos_table = random_vector(size_t(P) * C, C + 1);
      std::vector<float> packed(packed_size(V, C));
      pack_weights_f32(table.data(), V, C, packed.data());
      std::vector<int8_t> table_i8(size_t(V) * C);
      for (size_t i = 0; i < table_i8.size(); ++i) table_i8[i] = int8_t(int(table[i] * 127.0f));
      std::vector<int8_t> packed_i8(packed_size_i8(V, C));
      pack_weights_i8(table_i8.data(), V, C, packed_i8.data());
      const std::vector<float> row_scales = random_vector(V, C + 2, 0.001f, 0.02f);

      DeviceVector<float> d_table(table), d_pos(pos_table), d_scales(row_scales), d_y(size_t(M) * C);
      DeviceVector<int8_t> d_table_i8(table_i8);
      DeviceVector<int32_t> d_ids(ids), d_positions(positions);
      // Positions per row, one position for all rows, and none.
      for (int mode = 0; mode < 3; ++mode) {
        INFO("C " << C << ", M " << M << ", positions " << (mode == 0 ? "per row" : mode == 1 ? "scalar 4" : "none"));
        const float* pos = mode == 2 ? nullptr : d_pos.get();
        const int32_t* per_row = mode == 0 ? d_positions.get() : nullptr;
        std::vector<float> want(size_t(M) * C), want_i8(size_t(M) * C);
        for (int m = 0; m < M; ++m) {
          const float* pe = mode == 2 ? nullptr : pos_table.data() + size_t(mode == 0 ? positions[m] : 4) * C;
          ref.embed_f32(packed.data(), C, ids[m], scale, pe, want.data() + size_t(m) * C);
          ref.embed_i8(packed_i8.data(), row_scales.data(), C, ids[m], scale, pe, want_i8.data() + size_t(m) * C);
        }
        require_ok(embed_f32_cuda(d_table.get(), C, d_ids.get(), M, scale, pos, per_row, 4, d_y.get(), stream.get()),
                   "embed_f32_cuda");
        require_finished(stream.get(), "embed_f32_cuda");
        require_equal(want, d_y.download(), "embed_f32");
        require_ok(embed_i8_cuda(d_table_i8.get(), d_scales.get(), C, d_ids.get(), M, scale, pos, per_row, 4, d_y.get(),
                                 stream.get()),
                   "embed_i8_cuda");
        require_finished(stream.get(), "embed_i8_cuda");
        require_equal(want_i8, d_y.download(), "embed_i8");
      }
    }
  }
}

TEST_CASE("cuda: layer_norm_f32 matches layer_norm_f32_ref", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  const float eps = 1e-5f;
  for (int C : {1, 7, 31, 33, 512, 515, 1024, 4097}) {
    for (int M : {1, 13}) {
      for (float offset : {0.0f, 10.0f}) {
        if (offset != 0.0f && C != 33 && C != 512) continue;
        const double tol = offset != 0.0f ? kLayerNormOffsetTol : kLayerNormTol;
        const size_t n = size_t(M) * C;
        const std::vector<float> x = random_vector(n, C + M, offset - 1.0f, offset + 1.0f);
        const std::vector<float> r = random_vector(n, C + M + 1);
        const std::vector<float> gamma = random_vector(C, C + 2, 0.5f, 1.5f);
        const std::vector<float> beta = random_vector(C, C + 3);
        // The references: LayerNorm of x, and of x + r.
        std::vector<float> sum(n), want(n), want_sum(n);
        for (size_t i = 0; i < n; ++i) sum[i] = x[i] + r[i];
        for (int m = 0; m < M; ++m) {
          ref.layer_norm_f32(x.data() + size_t(m) * C, gamma.data(), beta.data(), want.data() + size_t(m) * C, C, eps);
          ref.layer_norm_f32(sum.data() + size_t(m) * C, gamma.data(), beta.data(), want_sum.data() + size_t(m) * C, C,
                             eps);
        }
        DeviceVector<float> d_x(x), d_r(r), d_gamma(gamma), d_beta(beta), d_y(n), d_s(n);
        INFO("C " << C << ", M " << M << ", x = " << offset << " +- 1");

        require_ok(layer_norm_f32_cuda(d_x.get(), nullptr, nullptr, d_gamma.get(), d_beta.get(), d_y.get(), M, C, eps,
                                       stream.get()),
                   "layer_norm_f32_cuda");
        require_finished(stream.get(), "layer_norm_f32_cuda");
        require_close(want, d_y.download(), tol, "layer_norm");

        // Residual sum stored, normalised out of place.
        require_ok(layer_norm_f32_cuda(d_x.get(), d_r.get(), d_s.get(), d_gamma.get(), d_beta.get(), d_y.get(), M, C,
                                       eps, stream.get()),
                   "layer_norm_f32_cuda (residual)");
        require_finished(stream.get(), "layer_norm_f32_cuda (residual)");
        require_equal(sum, d_s.download(), "layer_norm residual sum");
        require_close(want_sum, d_y.download(), tol, "layer_norm of x + residual");

        // Post-norm in place: x = LN(x + r), y aliasing x.
        require_ok(layer_norm_f32_cuda(d_x.get(), d_r.get(), nullptr, d_gamma.get(), d_beta.get(), d_x.get(), M, C, eps,
                                       stream.get()),
                   "layer_norm_f32_cuda (in place)");
        require_finished(stream.get(), "layer_norm_f32_cuda (in place)");
        require_close(want_sum, d_x.download(), tol, "layer_norm in place");
      }
    }
  }
}

TEST_CASE("cuda: bias_act_residual_f32 matches gemm_f32_ref's epilogue", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  for (int N : {1, 31, 33, 1000}) {
    // The reference: gemm_f32_ref with A = c and W = I, whose sums are exactly
    // c (every other term is a zero), followed by its epilogue.
    std::vector<float> identity(size_t(N) * N, 0.0f), packed(packed_size(N, N));
    for (int n = 0; n < N; ++n) identity[size_t(n) * N + n] = 1.0f;
    pack_weights_f32(identity.data(), N, N, packed.data());
    for (int M : {1, 7, 70}) {
      if (N == 1000 && M == 70) continue;     // the identity reference costs M N^2
      const size_t ldc = N + 3, ldr = N + 1;  // padded rows: strides are really used
      const std::vector<float> c = random_vector(M * ldc, M + N, -2.0f, 2.0f);
      const std::vector<float> bias = random_vector(N, M + N + 1);
      const std::vector<float> residual = random_vector(M * ldr, M + N + 2);
      DeviceVector<float> d_c(c.size()), d_bias(bias), d_res(residual);
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::swish}) {
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
          for (int with_res = 0; with_res < 2; ++with_res) {
            INFO("M " << M << ", N " << N << ", act " << act_name(act) << ", bias " << with_bias << ", residual "
                      << with_res);
            // Padding columns keep c's values: the kernel must not write them.
            std::vector<float> want = c;
            ref.gemm_f32(c.data(), ldc, packed.data(), with_bias ? bias.data() : nullptr,
                         with_res ? residual.data() : nullptr, ldr, want.data(), ldc, M, N, N, 0, N, act);
            d_c.upload(c);
            require_ok(bias_act_residual_f32_cuda(d_c.get(), ldc, with_bias ? d_bias.get() : nullptr, act,
                                                  with_res ? d_res.get() : nullptr, ldr, M, N, stream.get()),
                       "bias_act_residual_f32_cuda");
            require_finished(stream.get(), "bias_act_residual_f32_cuda");
            require_close(want, d_c.download(), kEpilogueTol, "bias_act_residual");
          }
        }
      }
    }
  }
}

TEST_CASE("cuda: softmax_f32 and log_softmax_f32 match the reference", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  for (int N : {1, 7, 31, 33, 1000, 32000, 32003}) {
    for (int M : {1, 5}) {
      INFO("M " << M << ", N " << N);
      const size_t n = size_t(M) * N;
      std::vector<float> x = random_vector(n, N + M, -10.0f, 10.0f);
      // A masked entry (as search.cpp masks EOS) in the last row.
      if (N > 1) x[size_t(M - 1) * N + N / 2] = -INFINITY;
      std::vector<float> want = x, want_log(n), want_lse(M);
      for (int m = 0; m < M; ++m) {
        ref.softmax_f32(want.data() + size_t(m) * N, N);
        want_lse[m] = ref.log_softmax_f32(x.data() + size_t(m) * N, want_log.data() + size_t(m) * N, N);
      }
      const double tol = softmax_tol(N);
      DeviceVector<float> d_x(x), d_y(n), d_lse(M);
      require_ok(softmax_f32_cuda(d_x.get(), d_y.get(), M, N, stream.get()), "softmax_f32_cuda");
      require_finished(stream.get(), "softmax_f32_cuda");
      require_close(want, d_y.download(), tol, "softmax");
      require_ok(log_softmax_f32_cuda(d_x.get(), d_y.get(), d_lse.get(), M, N, stream.get()), "log_softmax_f32_cuda");
      require_finished(stream.get(), "log_softmax_f32_cuda");
      require_close(want_log, d_y.download(), tol, "log_softmax");
      require_close(want_lse, d_lse.download(), tol, "log_softmax's log-sum-exp");
      // In place, as search.cpp runs it.
      require_ok(log_softmax_f32_cuda(d_x.get(), d_x.get(), nullptr, M, N, stream.get()), "log_softmax_f32_cuda");
      require_finished(stream.get(), "log_softmax_f32_cuda (in place)");
      require_close(want_log, d_x.download(), tol, "log_softmax in place");
      d_x.upload(x);
      require_ok(softmax_f32_cuda(d_x.get(), d_x.get(), M, N, stream.get()), "softmax_f32_cuda");
      require_finished(stream.get(), "softmax_f32_cuda (in place)");
      require_close(want, d_x.download(), tol, "softmax in place");
    }
  }
}

// Rows with ties: the coarse grid, all equal, the maximum last, -inf entries.
std::vector<float> search_rows(int M, int N, uint32_t seed) {
  std::vector<float> x = tied_vector(size_t(M) * N, seed);
  if (M > 1) std::fill(x.begin() + N, x.begin() + 2 * N, 0.5f);
  if (M > 2) x[size_t(3) * N - 1] = 100.0f;
  if (M > 3)
    for (int i = 0; i < N; i += 3) x[size_t(3) * N + i] = -INFINITY;
  if (M > 4) std::fill(x.begin() + size_t(4) * N, x.begin() + size_t(5) * N, -INFINITY);
  return x;
}

TEST_CASE("cuda: argmax_f32 matches argmax_f32_ref, first index on ties", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  for (int N : {1, 2, 33, 1000, 32000, 32003}) {
    const int M = 9;
    const std::vector<float> x = search_rows(M, N, N);
    DeviceVector<float> d_x(x), d_value(M);
    DeviceVector<int32_t> d_index(M);
    require_ok(argmax_f32_cuda(d_x.get(), M, N, d_index.get(), d_value.get(), stream.get()), "argmax_f32_cuda");
    require_finished(stream.get(), "argmax_f32_cuda");
    const std::vector<int32_t> index = d_index.download();
    const std::vector<float> value = d_value.download();
    for (int m = 0; m < M; ++m) {
      float want_value = 0;
      const int want = ref.argmax_f32(x.data() + size_t(m) * N, N, &want_value);
      INFO("N " << N << ", row " << m);
      REQUIRE(index[m] == want);
      REQUIRE(value[m] == want_value);
    }
  }
}

// search.cpp's order: the best `k` of the row that are not -inf (nor NaN),
// larger first, lower index first on ties; (-inf, -1) past them.
void top_k_want(const float* row, int N, int k, float* values, int32_t* indices) {
  std::vector<int> order;
  for (int i = 0; i < N; ++i)
    if (row[i] > -INFINITY) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
  for (int r = 0; r < k; ++r) {
    values[r] = r < int(order.size()) ? row[order[r]] : -INFINITY;
    indices[r] = r < int(order.size()) ? order[r] : -1;
  }
}

TEST_CASE("cuda: top_k_f32 keeps the k best, lower index first on ties", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  const KernelTable& ref = reference_kernels();
  TestStream stream;
  for (int N : {1, 3, 17, 1000, 32000}) {
    const int M = 9;
    const std::vector<float> x = search_rows(M, N, 7 * N);
    DeviceVector<float> d_x(x), d_values(size_t(M) * kCudaTopKMax);
    DeviceVector<int32_t> d_indices(size_t(M) * kCudaTopKMax);
    for (int k : {1, 2, 5, 8, 16}) {
      require_ok(top_k_f32_cuda(d_x.get(), M, N, k, d_values.get(), d_indices.get(), stream.get()), "top_k_f32_cuda");
      require_finished(stream.get(), "top_k_f32_cuda");
      const std::vector<float> values = d_values.download();
      const std::vector<int32_t> indices = d_indices.download();
      for (int m = 0; m < M; ++m) {
        std::vector<float> want_values(k);
        std::vector<int32_t> want_indices(k);
        const float* row = x.data() + size_t(m) * N;
        top_k_want(row, N, k, want_values.data(), want_indices.data());
        for (int r = 0; r < k; ++r) {
          INFO("N " << N << ", k " << k << ", row " << m << ", rank " << r);
          REQUIRE(indices[size_t(m) * k + r] == want_indices[r]);
          REQUIRE(values[size_t(m) * k + r] == want_values[r]);
        }
        // The best is argmax's pick, whenever the row has a candidate.
        if (want_indices[0] >= 0) REQUIRE(want_indices[0] == ref.argmax_f32(row, N, nullptr));
      }
    }
  }
}

// One linear layer with padded strides, as the CPU GEMM tests build it.
struct LinearCase {
  int M, N, K;
  size_t lda, ldw, ldr, ldc;
  std::vector<float> A, W, bias, residual;
  std::vector<double> magnitude;  // [M, N]: sum_k |a_k w_k|, the scale of the rounding errors

  LinearCase(int M_, int N_, int K_, uint32_t seed)
      : M(M_), N(N_), K(K_), lda(K_ + 3), ldw(K_ + 1), ldr(N_ + 2), ldc(N_ + 5) {
    A = random_vector(size_t(M) * lda, seed);
    W = random_vector(size_t(N) * ldw, seed + 1);
    bias = random_vector(N, seed + 2);
    residual = random_vector(size_t(M) * ldr, seed + 3);
    magnitude.resize(size_t(M) * N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double mag = 0;
        for (int k = 0; k < K; ++k) mag += std::fabs(double(A[size_t(m) * lda + k]) * W[size_t(n) * ldw + k]);
        magnitude[size_t(m) * N + n] = mag;
      }
  }

  // gemm_f32_ref on the packed copy of W; C starts as `init` (padding kept).
  std::vector<float> reference(bool with_bias, bool with_residual, Activation act,
                               const std::vector<float>& init) const {
    std::vector<float> w(size_t(N) * K), packed(packed_size(N, K));
    for (int n = 0; n < N; ++n) std::copy_n(W.begin() + size_t(n) * ldw, K, w.begin() + size_t(n) * K);
    pack_weights_f32(w.data(), N, K, packed.data());
    std::vector<float> C = init;
    reference_kernels().gemm_f32(A.data(), lda, packed.data(), with_bias ? bias.data() : nullptr,
                                 with_residual ? residual.data() : nullptr, ldr, C.data(), ldc, M, N, K, 0, N, act);
    return C;
  }

  // |got - want| within tol of sum_k |a_k w_k| + |bias| + |residual| per element.
  void require_close(const std::vector<float>& want, const std::vector<float>& got, double tol, bool with_bias,
                     bool with_residual, const char* what) const {
    REQUIRE(want.size() == got.size());
    for (int m = 0; m < M; ++m)
      for (size_t n = 0; n < ldc; ++n) {
        const size_t i = size_t(m) * ldc + n;
        if (n >= size_t(N)) {  // padding: never written
          if (!(got[i] == want[i])) FAIL(what << ": padding C[" << m << "," << n << "] was written");
          continue;
        }
        double mag = magnitude[size_t(m) * N + n];
        if (with_bias) mag += std::fabs(bias[n]);
        if (with_residual) mag += std::fabs(residual[size_t(m) * ldr + n]);
        const double err = std::fabs(double(want[i]) - got[i]);
        if (!(err <= tol * mag + 1e-30))
          FAIL(what << ": C[" << m << "," << n << "] is " << got[i] << ", the reference " << want[i] << " (error "
                    << err / mag << " of sum |a w|, tolerance " << tol << ")");
      }
  }
};

TEST_CASE("cuda: linear_f32 (cuBLAS + epilogue) matches gemm_f32_ref", "[cuda]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const test::TestCublas cublas;
  CublasContext* context = cublas.get();
  for (const test::LinearShape s : test::kLinearShapes) {
    const LinearCase g(s.M, s.N, s.K, s.M + s.N + s.K);
    DeviceVector<float> d_A(g.A), d_W(g.W), d_bias(g.bias), d_res(g.residual), d_C(size_t(g.M) * g.ldc);
    const std::vector<float> init = random_vector(size_t(g.M) * g.ldc, 99);
    for (GemmMath math : {GemmMath::f32, GemmMath::tf32}) {
      const double rounding = kGemmRoundingsSlack * (g.K + 3) * std::ldexp(1.0, -24);
      const double tol = math == GemmMath::tf32 ? kTf32InputError + rounding : rounding;
      const char* math_name = math == GemmMath::tf32 ? "tf32" : "f32";
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::swish}) {
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
          for (int with_res = 0; with_res < 2; ++with_res) {
            INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", " << math_name << ", act " << act_name(act)
                      << ", bias " << with_bias << ", residual " << with_res);
            d_C.upload(init);
            require_ok(linear_f32_cuda(context, d_A.get(), g.lda, d_W.get(), g.ldw, with_bias ? d_bias.get() : nullptr,
                                       with_res ? d_res.get() : nullptr, g.ldr, d_C.get(), g.ldc, g.M, g.N, g.K, act,
                                       math, stream.get()),
                       "linear_f32_cuda");
            require_finished(stream.get(), "linear_f32_cuda");
            g.require_close(g.reference(with_bias, with_res, act, init), d_C.download(), tol, with_bias, with_res,
                            "linear_f32");
          }
        }
      }
      // x += linear(x'): C aliasing the residual accumulates in place.
      INFO("M " << g.M << ", N " << g.N << ", K " << g.K << ", " << math_name << ", C aliasing the residual");
      std::vector<float> c_res = init;
      for (int m = 0; m < g.M; ++m)
        std::copy_n(g.residual.begin() + size_t(m) * g.ldr, g.N, c_res.begin() + size_t(m) * g.ldc);
      d_C.upload(c_res);
      require_ok(linear_f32_cuda(context, d_A.get(), g.lda, d_W.get(), g.ldw, d_bias.get(), d_C.get(), g.ldc, d_C.get(),
                                 g.ldc, g.M, g.N, g.K, Activation::none, math, stream.get()),
                 "linear_f32_cuda (accumulate)");
      require_finished(stream.get(), "linear_f32_cuda (accumulate)");
      g.require_close(g.reference(true, true, Activation::none, init), d_C.download(), tol, true, true,
                      "linear_f32 accumulating into C");
      // An activation cannot come between the product and an aliased residual.
      REQUIRE(linear_f32_cuda(context, d_A.get(), g.lda, d_W.get(), g.ldw, nullptr, d_C.get(), g.ldc, d_C.get(), g.ldc,
                              g.M, g.N, g.K, Activation::relu, math, stream.get()) != 0);
    }
  }
}

}  // namespace
}  // namespace mt
