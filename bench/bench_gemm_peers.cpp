// libmt's GEMM kernels against OpenBLAS and oneDNN at the shapes decoding
// uses, one thread: C[M, N] = A[M, K] * W[N, K]^T, W a linear layer's weights.
//   gemm_f32/<engine>/M:../N:../K:../process_time   GFLOP/s (2 M N K per call), "FLOPS" counter
//   gemm_int8/<engine>/M:../N:../K:../process_time  GOP/s (2 M N K per call), "OPS" counter
// fp32 engines:
//   libmt        best_kernels().gemm_f32 over [0, N), packed weights, + bias
//   openblas     cblas_sgemm(RowMajor, NoTrans, Trans), W in its [N, K] layout
//   dnnl_sgemm   dnnl_sgemm('N', 'T'), W in its [N, K] layout
//   dnnl_matmul  matmul primitive, weights reordered once (outside the timing)
//                into the format the primitive picks (format_tag::any), + bias
// int8 engines (u8 activations, s8 weights):
//   libmt        best_kernels().gemm_u8s8 over [0, N), A already quantized; its
//                epilogue dequantizes to fp32 and adds the bias
//   libmt_quant  quantize_rows_u8 of the fp32 A (dynamic, per row) + the
//                above: what the runtime pays per layer
//   dnnl_gemm    dnnl_gemm_u8s8s32('N', 'T', offsets 0), s32 out
//   dnnl_matmul  matmul primitive, u8 src, s8 weights (format_tag::any,
//                reordered once), s32 out
//   dnnl_matmul_f32  the same, dequantizing to f32 as libmt does (src zero
//                point, per-column output scales fixed at creation, bias):
//                the closest oneDNN 2.6 comes fast to libmt's epilogue
// plus the core's ceilings (bench/fma_peak.hpp): fma_peak_f32, dot_peak_u8s8.
//
// Rates are per second of process CPU time (every thread of the process,
// so a helper thread of an engine would count; all run one thread here).
// Each benchmark checks sampled outputs against a double/int64 reference
// once, after the timing, and fails on a mismatch.
//
// Run (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when the machine sets them, hold
// OpenBLAS to AVX2 kernels: unset them for this command only):
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 build/bench/bench_gemm_peers
// Filter e.g. --benchmark_filter='gemm_f32/.*/M:1/'.
#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "fma_peak.hpp"
#include "mt/kernels.h"

namespace {

// 64-byte aligned buffers for every engine alike.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <typename T>
using Buffer = std::unique_ptr<T[], FreeDeleter>;
template <typename T>
Buffer<T> make_buffer(size_t n) {
  const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return Buffer<T>(static_cast<T*>(p));
}

// xorshift: the 16M-element weights of the output projection are filled fast.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  float uniform() { return float(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }  // [-1, 1)
};

Buffer<float> random_f32(size_t n, uint64_t seed) {
  Buffer<float> v = make_buffer<float>(n);
  Rng rng(seed);
  for (size_t i = 0; i < n; ++i) v[i] = rng.uniform();
  return v;
}

Buffer<uint8_t> random_u8(size_t rows, size_t cols, size_t ld, uint64_t seed) {
  Buffer<uint8_t> v = make_buffer<uint8_t>(rows * ld);
  Rng rng(seed);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) v[r * ld + c] = uint8_t(rng.next() >> 56);
  return v;
}

Buffer<int8_t> random_s8(size_t n, uint64_t seed) {
  Buffer<int8_t> v = make_buffer<int8_t>(n);
  Rng rng(seed);
  for (size_t i = 0; i < n; ++i) v[i] = int8_t(uint8_t(rng.next() >> 56));
  return v;
}

void set_flops(benchmark::State& state, const char* name, int M, int N, int K) {
  state.counters[name] = benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
}

// The sampled (m, n) cells each benchmark checks: corners and a spread.
template <typename F>
bool check_samples(int M, int N, F&& ok) {
  Rng rng(99);
  for (int i = 0; i < 64; ++i) {
    const int m = i == 0 ? 0 : i == 1 ? M - 1 : int(rng.next() % uint64_t(M));
    const int n = i == 0 ? 0 : i == 1 ? N - 1 : int(rng.next() % uint64_t(N));
    if (!ok(m, n)) return false;
  }
  return true;
}

// How many of the 64 sampled cells are wrong.
template <typename F>
int count_wrong_samples(int M, int N, F&& ok) {
  int wrong = 0;
  check_samples(M, N, [&](int m, int n) {
    wrong += !ok(m, n);
    return true;
  });
  return wrong;
}

// oneDNN's int8 kernels without VNNI (AVX2) add u8*s8 products in pairs
// with saturation to int16 (vpmaddubsw), so some sums differ from the exact
// ones. A wrong result fails the benchmark, unless MT_PEERS_ALLOW_INEXACT=1:
// then its timing is kept and the counter `wrong_of_64` says how many of
// the sampled outputs were wrong.
void int8_verdict(benchmark::State& state, int wrong) {
  const char* allow = std::getenv("MT_PEERS_ALLOW_INEXACT");
  if (allow != nullptr && std::string(allow) == "1") {
    state.counters["wrong_of_64"] = wrong;
  } else if (wrong > 0) {
    state.SkipWithError("wrong result (MT_PEERS_ALLOW_INEXACT=1 times it anyway)");
  }
}

// fp32: sum_k A[m, k] W[n, k] (+ bias[n]) in double against C, relative to sum |A||W|.
bool check_f32(const float* A, const float* W, const float* bias, const float* C, int M, int N, int K) {
  return check_samples(M, N, [&](int m, int n) {
    double ref = bias ? bias[n] : 0.0, mag = bias ? std::fabs(bias[n]) : 0.0;
    for (int k = 0; k < K; ++k) {
      const double p = double(A[size_t(m) * K + k]) * W[size_t(n) * K + k];
      ref += p;
      mag += std::fabs(p);
    }
    return std::fabs(C[size_t(m) * N + n] - ref) <= 1e-5 * mag + 1e-6;
  });
}

int64_t dot_u8s8(const uint8_t* a, const int8_t* w, int K) {
  int64_t acc = 0;
  for (int k = 0; k < K; ++k) acc += int64_t(a[k]) * w[k];
  return acc;
}

// --- fp32 ----------------------------------------------------------------

struct F32Problem {
  int M, N, K;
  Buffer<float> A, W, bias, C;  // W: [N, K] row-major
  F32Problem(int M_, int N_, int K_)
      : M(M_),
        N(N_),
        K(K_),
        A(random_f32(size_t(M) * K, 1)),
        W(random_f32(size_t(N) * K, 2)),
        bias(random_f32(N, 3)),
        C(make_buffer<float>(size_t(M) * N)) {}
};

void gemm_f32_libmt(benchmark::State& state, int M, int N, int K) {
  F32Problem p(M, N, K);
  const mt::KernelTable& t = mt::best_kernels();
  Buffer<float> Wp = make_buffer<float>(mt::packed_size(N, K));
  mt::pack_weights_f32(p.W.get(), N, K, Wp.get());
  for (auto _ : state) {
    t.gemm_f32(p.A.get(), K, Wp.get(), p.bias.get(), nullptr, 0, p.C.get(), N, M, N, K, 0, N, mt::Activation::none);
    benchmark::ClobberMemory();
  }
  state.SetLabel(t.isa);
  set_flops(state, "FLOPS", M, N, K);
  if (!check_f32(p.A.get(), p.W.get(), p.bias.get(), p.C.get(), M, N, K)) state.SkipWithError("wrong result");
}

void gemm_f32_openblas(benchmark::State& state, int M, int N, int K) {
  F32Problem p(M, N, K);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, p.A.get(), K, p.W.get(), K, 0.0f, p.C.get(), N);
    benchmark::ClobberMemory();
  }
  set_flops(state, "FLOPS", M, N, K);
  if (!check_f32(p.A.get(), p.W.get(), nullptr, p.C.get(), M, N, K)) state.SkipWithError("wrong result");
}

void gemm_f32_dnnl_sgemm(benchmark::State& state, int M, int N, int K) {
  F32Problem p(M, N, K);
  for (auto _ : state) {
    if (dnnl_sgemm('N', 'T', M, N, K, 1.0f, p.A.get(), K, p.W.get(), K, 0.0f, p.C.get(), N) != dnnl_success) {
      state.SkipWithError("dnnl_sgemm failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  set_flops(state, "FLOPS", M, N, K);
  if (!check_f32(p.A.get(), p.W.get(), nullptr, p.C.get(), M, N, K)) state.SkipWithError("wrong result");
}

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// A matmul primitive for src[M, K] x weights[K, N] (the user's W[N, K] is
// weights in format "ba"), weights in the format the primitive picks,
// reordered once. Returns the weights memory to execute with.
dnnl::memory reorder_weights(const dnnl::matmul::primitive_desc& pd, const dnnl::memory::desc& user_md, void* user_data,
                             dnnl::stream& stream) {
  dnnl::memory user(user_md, cpu_engine(), user_data);
  if (pd.weights_desc() == user_md) return user;
  dnnl::memory packed(pd.weights_desc(), cpu_engine());
  dnnl::reorder(user, packed).execute(stream, user, packed);
  stream.wait();
  return packed;
}

// The timed loop of every matmul benchmark; the label names the
// implementation oneDNN picked.
void time_matmul(benchmark::State& state, const dnnl::matmul::primitive_desc& pd,
                 const std::unordered_map<int, dnnl::memory>& args, dnnl::stream& stream) {
  const dnnl::matmul prim(pd);
  for (auto _ : state) {
    prim.execute(stream, args);
    stream.wait();
    benchmark::ClobberMemory();
  }
  state.SetLabel(pd.impl_info_str());
}

void gemm_f32_dnnl_matmul(benchmark::State& state, int M, int N, int K) {
  F32Problem p(M, N, K);
  dnnl::stream stream(cpu_engine());
  const dnnl::memory::desc src_md({M, K}, dt::f32, tag::ab), user_w_md({K, N}, dt::f32, tag::ba),
      any_w_md({K, N}, dt::f32, tag::any), bias_md({1, N}, dt::f32, tag::ab), dst_md({M, N}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_w_md, bias_md, dst_md), cpu_engine());
  dnnl::memory weights = reorder_weights(pd, user_w_md, p.W.get(), stream);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnnl::memory(src_md, cpu_engine(), p.A.get())},
                                                {DNNL_ARG_WEIGHTS, weights},
                                                {DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), p.bias.get())},
                                                {DNNL_ARG_DST, dnnl::memory(dst_md, cpu_engine(), p.C.get())}};
  time_matmul(state, pd, args, stream);
  set_flops(state, "FLOPS", M, N, K);
  if (!check_f32(p.A.get(), p.W.get(), p.bias.get(), p.C.get(), M, N, K)) state.SkipWithError("wrong result");
}

// --- int8 ----------------------------------------------------------------

struct I8Problem {
  int M, N, K, Kp;
  Buffer<uint8_t> Aq;  // [M, Kp], columns past K zero
  Buffer<int8_t> W;    // [N, K] row-major
  I8Problem(int M_, int N_, int K_)
      : M(M_),
        N(N_),
        K(K_),
        Kp(mt::padded_k_i8(K_)),
        Aq(random_u8(M_, K_, mt::padded_k_i8(K_), 4)),
        W(random_s8(size_t(N_) * K_, 5)) {}
};

// libmt's operands beside the weights: packed W, row sums, scales, bias.
struct LibmtI8 {
  Buffer<int8_t> Wp;
  Buffer<int32_t> w_sum, a_zero;
  Buffer<float> w_scale, a_scale, bias, C;
  LibmtI8(const I8Problem& p)
      : Wp(make_buffer<int8_t>(mt::packed_size_i8(p.N, p.K))),
        w_sum(make_buffer<int32_t>(p.N)),
        a_zero(make_buffer<int32_t>(p.M)),
        w_scale(make_buffer<float>(p.N)),
        a_scale(make_buffer<float>(p.M)),
        bias(random_f32(p.N, 3)),
        C(make_buffer<float>(size_t(p.M) * p.N)) {
    mt::pack_weights_i8(p.W.get(), p.N, p.K, Wp.get());
    for (int n = 0; n < p.N; ++n) {
      int32_t s = 0;
      for (int k = 0; k < p.K; ++k) s += p.W[size_t(n) * p.K + k];
      w_sum[n] = s;
      w_scale[n] = 0.01f;
    }
    for (int m = 0; m < p.M; ++m) {
      a_zero[m] = 128;
      a_scale[m] = 0.02f;
    }
  }
  // C against the exact integer sum through the epilogue in double.
  bool check(const I8Problem& p) const {
    return check_samples(p.M, p.N, [&](int m, int n) {
      const int64_t acc = dot_u8s8(&p.Aq[size_t(m) * p.Kp], &p.W[size_t(n) * p.K], p.K);
      const double ref = double(acc - int64_t(a_zero[m]) * w_sum[n]) * (double(a_scale[m]) * w_scale[n]) + bias[n];
      const double mag = (double(acc) + 255.0 * 128 * p.K) * (double(a_scale[m]) * w_scale[n]) + std::fabs(bias[n]);
      return std::fabs(C[size_t(m) * p.N + n] - ref) <= 1e-6 * mag + 1e-6;
    });
  }
};

void gemm_int8_libmt(benchmark::State& state, int M, int N, int K) {
  I8Problem p(M, N, K);
  LibmtI8 l(p);
  const mt::KernelTable& t = mt::best_kernels();
  for (auto _ : state) {
    t.gemm_u8s8(p.Aq.get(), p.Kp, l.Wp.get(), l.w_sum.get(), l.w_scale.get(), l.a_scale.get(), l.a_zero.get(),
                l.bias.get(), nullptr, 0, l.C.get(), N, M, N, K, 0, N, mt::Activation::none);
    benchmark::ClobberMemory();
  }
  state.SetLabel(t.isa);
  set_flops(state, "OPS", M, N, K);
  if (!l.check(p)) state.SkipWithError("wrong result");
}

void gemm_int8_libmt_quant(benchmark::State& state, int M, int N, int K) {
  I8Problem p(M, N, K);
  LibmtI8 l(p);
  const Buffer<float> A = random_f32(size_t(M) * K, 1);
  const mt::KernelTable& t = mt::best_kernels();
  for (auto _ : state) {
    t.quantize_rows_u8(A.get(), K, M, K, p.Aq.get(), p.Kp, l.a_scale.get(), l.a_zero.get(), 0.0f, 0);
    t.gemm_u8s8(p.Aq.get(), p.Kp, l.Wp.get(), l.w_sum.get(), l.w_scale.get(), l.a_scale.get(), l.a_zero.get(),
                l.bias.get(), nullptr, 0, l.C.get(), N, M, N, K, 0, N, mt::Activation::none);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(t.isa) + ", incl. quantize_rows_u8");
  set_flops(state, "OPS", M, N, K);
  if (!l.check(p)) state.SkipWithError("wrong result");
}

int wrong_s32(const I8Problem& p, const int32_t* C) {
  return count_wrong_samples(p.M, p.N, [&](int m, int n) {
    return C[size_t(m) * p.N + n] == dot_u8s8(&p.Aq[size_t(m) * p.Kp], &p.W[size_t(n) * p.K], p.K);
  });
}

void gemm_int8_dnnl_gemm(benchmark::State& state, int M, int N, int K) {
  I8Problem p(M, N, K);
  Buffer<int32_t> C = make_buffer<int32_t>(size_t(M) * N);
  const int32_t co = 0;
  for (auto _ : state) {
    if (dnnl_gemm_u8s8s32('N', 'T', 'F', M, N, K, 1.0f, p.Aq.get(), p.Kp, 0, p.W.get(), K, 0, 0.0f, C.get(), N, &co) !=
        dnnl_success) {
      state.SkipWithError("dnnl_gemm_u8s8s32 failed");
      return;
    }
    benchmark::ClobberMemory();
  }
  set_flops(state, "OPS", M, N, K);
  int8_verdict(state, wrong_s32(p, C.get()));
}

void gemm_int8_dnnl_matmul(benchmark::State& state, int M, int N, int K) {
  I8Problem p(M, N, K);
  Buffer<int32_t> C = make_buffer<int32_t>(size_t(M) * N);
  dnnl::stream stream(cpu_engine());
  const dnnl::memory::desc src_md({M, K}, dt::u8, {dnnl::memory::dim(p.Kp), 1}), user_w_md({K, N}, dt::s8, tag::ba),
      any_w_md({K, N}, dt::s8, tag::any), dst_md({M, N}, dt::s32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_w_md, dst_md), cpu_engine());
  dnnl::memory weights = reorder_weights(pd, user_w_md, p.W.get(), stream);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnnl::memory(src_md, cpu_engine(), p.Aq.get())},
                                                {DNNL_ARG_WEIGHTS, weights},
                                                {DNNL_ARG_DST, dnnl::memory(dst_md, cpu_engine(), C.get())}};
  time_matmul(state, pd, args, stream);
  set_flops(state, "OPS", M, N, K);
  int8_verdict(state, wrong_s32(p, C.get()));
}

// The matmul primitive doing the dequantization libmt's epilogue does, as far
// as oneDNN 2.6 can say it fast: src zero point (one per tensor, given at run
// time), output scales per column fixed when the primitive is made (run-time
// scales send 2.6 to its slow "gemm:jit" matmul, so this is static
// activation quantization, the case best for oneDNN: libmt's scales are per
// row and dynamic), f32 bias (which oneDNN 2.x adds before the scales: an
// engine stores it divided by them), f32 dst.
void gemm_int8_dnnl_matmul_f32(benchmark::State& state, int M, int N, int K) {
  I8Problem p(M, N, K);
  Buffer<float> C = make_buffer<float>(size_t(M) * N);
  const Buffer<float> bias = random_f32(N, 3);
  const std::vector<float> scales(N, 0.02f * 0.01f);
  int32_t zero = 128;
  dnnl::stream stream(cpu_engine());
  const dnnl::memory::desc src_md({M, K}, dt::u8, {dnnl::memory::dim(p.Kp), 1}), user_w_md({K, N}, dt::s8, tag::ba),
      any_w_md({K, N}, dt::s8, tag::any), bias_md({1, N}, dt::f32, tag::ab), dst_md({M, N}, dt::f32, tag::ab),
      zero_md({1}, dt::s32, tag::a);
  dnnl::primitive_attr attr;
  attr.set_output_scales(1 << 1, scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_w_md, bias_md, dst_md), attr, cpu_engine());
  dnnl::memory weights = reorder_weights(pd, user_w_md, p.W.get(), stream);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(src_md, cpu_engine(), p.Aq.get())},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), bias.get())},
      {DNNL_ARG_DST, dnnl::memory(dst_md, cpu_engine(), C.get())},
      {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(zero_md, cpu_engine(), &zero)}};
  time_matmul(state, pd, args, stream);
  set_flops(state, "OPS", M, N, K);
  const int wrong = count_wrong_samples(M, N, [&](int m, int n) {
    int64_t acc = 0;
    for (int k = 0; k < K; ++k) acc += (int64_t(p.Aq[size_t(m) * p.Kp + k]) - zero) * p.W[size_t(n) * K + k];
    const double ref = (double(acc) + bias[n]) * scales[n];  // oneDNN 2.x scales the bias too
    return std::fabs(C[size_t(m) * N + n] - ref) <= 1e-6 * (255.0 * 128 * K + std::fabs(bias[n])) * scales[n] + 1e-6;
  });
  int8_verdict(state, wrong);
}

using Fn = void (*)(benchmark::State&, int, int, int);

void register_benchmarks() {
  mt_bench::register_peak_benchmarks();
  const int Ms[] = {1, 4, 16, 32, 256};
  // (N, K) of the "base" model (d_model 512, fused qkv, d_ff 2048, vocab
  // 32000), then of the "small" one (d_model 256, d_ff 1024, vocab 8000).
  const int NKs[][2] = {{512, 512}, {1536, 512}, {2048, 512}, {512, 2048}, {32000, 512},
                        {256, 256}, {768, 256},  {1024, 256}, {256, 1024}, {8000, 256}};
  const std::pair<const char*, Fn> f32[] = {{"libmt", gemm_f32_libmt},
                                            {"openblas", gemm_f32_openblas},
                                            {"dnnl_sgemm", gemm_f32_dnnl_sgemm},
                                            {"dnnl_matmul", gemm_f32_dnnl_matmul}};
  const std::pair<const char*, Fn> i8[] = {{"libmt", gemm_int8_libmt},
                                           {"libmt_quant", gemm_int8_libmt_quant},
                                           {"dnnl_gemm", gemm_int8_dnnl_gemm},
                                           {"dnnl_matmul", gemm_int8_dnnl_matmul},
                                           {"dnnl_matmul_f32", gemm_int8_dnnl_matmul_f32}};
  // Shape by shape, the engines side by side: neighbours in time share the
  // machine's state, which is what the ratios are read from.
  auto add = [&](const char* kind, const auto& engines) {
    for (int M : Ms)
      for (const auto& nk : NKs)
        for (const auto& [engine, fn] : engines) {
          const std::string name = std::string(kind) + "/" + engine + "/M:" + std::to_string(M) +
                                   "/N:" + std::to_string(nk[0]) + "/K:" + std::to_string(nk[1]);
          benchmark::RegisterBenchmark(name.c_str(), fn, M, nk[0], nk[1])
              ->Unit(benchmark::kMicrosecond)
              ->MeasureProcessCPUTime();  // a worker thread an engine started would count
        }
  };
  add("gemm_f32", f32);
  add("gemm_int8", i8);
}

const char* dnnl_isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  // One thread everywhere: oneDNN runs on OpenMP (libgomp reads
  // OMP_NUM_THREADS before main, hence the call), OpenBLAS on its own pool.
  omp_set_num_threads(1);
  openblas_set_num_threads(1);

  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  benchmark::AddCustomContext("libmt_isa", mt::best_kernels().isa);
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("openblas_config", openblas_get_config());
  benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("OPENBLAS_CORETYPE", coretype ? coretype : "(unset)");
  const dnnl_version_t* v = dnnl_version();
  benchmark::AddCustomContext("onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                            std::to_string(v->patch) + " (" + v->hash + ")");
  benchmark::AddCustomContext("onednn_max_isa", dnnl_isa_name(dnnl::get_effective_cpu_isa()));
  benchmark::AddCustomContext("omp_max_threads", std::to_string(omp_get_max_threads()));

  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
