// The compute ceilings of one core, the bars the GEMM numbers are read
// against (bench_kernels, bench_gemm_peers): independent register chains of
// nothing but one instruction, so the loop runs at that instruction's
// throughput.
//   fma_peak_f32/avx512        16 zmm chains of vfmadd231ps: 2 FLOP x 16 lanes each, "FLOPS"
//   fma_peak_f32/avx2          12 ymm chains of vfmadd231ps: 2 FLOP x 8 lanes each, "FLOPS"
//                              (CPUs without AVX-512: the AVX2 tile's bar)
//   dot_peak_u8s8/avx512vnni   16 zmm chains of vpdpbusd: 64 u8*s8 MACs = 128 OP each, "OPS"
#pragma once

#include <cstdint>

#include <benchmark/benchmark.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mt_bench {

#if defined(__x86_64__)
inline constexpr int kPeakIterations = 1 << 16;

// After the timed loop: keeps the chains' results alive (so the loop is not
// optimised away) and reports `counter` per second, ops_per_pass being one
// pass over all the chains. Run on several threads (->Threads(n)), the
// iterations are already the threads' total, so the per-thread counters are
// averaged, not summed: the rate is all threads' together.
template <class Chains>
inline void report_peak(benchmark::State& state, Chains& acc, const char* counter, double ops_per_pass) {
  benchmark::DoNotOptimize(acc);
  state.counters[counter] = benchmark::Counter(
      double(kPeakIterations) * ops_per_pass,
      benchmark::Counter::Flags(benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kAvgThreads));
}

__attribute__((target("avx512f"))) inline void fma_peak_f32(benchmark::State& state) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(float(i));
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (auto _ : state) {
    for (int it = 0; it < kPeakIterations; ++it) {
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
      asm volatile("" : "+v"(a));
    }
  }
  report_peak(state, acc, "FLOPS", 16 * 32);
}

// Twelve chains: enough to cover two FMA pipes' latency (Zen 3: 2 x 4
// cycles), with the operands still in the 16 ymm registers.
__attribute__((target("avx2,fma"))) inline void fma_peak_f32_avx2(benchmark::State& state) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (auto _ : state) {
    for (int it = 0; it < kPeakIterations; ++it) {
      for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
      asm volatile("" : "+x"(a));
    }
  }
  report_peak(state, acc, "FLOPS", 12 * 16);
}

__attribute__((target("avx512f,avx512vnni"))) inline void dot_peak_u8s8(benchmark::State& state) {
  __m512i acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (auto _ : state) {
    for (int it = 0; it < kPeakIterations; ++it) {
      for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
      asm volatile("" : "+v"(a));
    }
  }
  report_peak(state, acc, "OPS", 16 * 128);
}
#endif

// Registers the ceilings this CPU can run.
inline void register_peak_benchmarks() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) benchmark::RegisterBenchmark("fma_peak_f32/avx512", fma_peak_f32);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    benchmark::RegisterBenchmark("fma_peak_f32/avx2", fma_peak_f32_avx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
    benchmark::RegisterBenchmark("dot_peak_u8s8/avx512vnni", dot_peak_u8s8);
#endif
}

}  // namespace mt_bench
