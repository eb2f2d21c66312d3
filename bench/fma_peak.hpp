// The compute ceilings of one core, the bars the GEMM numbers are read
// against (bench_kernels, bench_gemm_peers): independent register chains of
// nothing but one instruction, so the loop runs at that instruction's
// throughput.
//   fma_peak_f32/avx512        16 zmm chains of vfmadd231ps: 2 FLOP x 16 lanes each, "FLOPS"
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
  alignas(64) float lanes[16];
  float sum = 0;
  for (int i = 0; i < 16; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    sum += lanes[0];
  }
  benchmark::DoNotOptimize(sum);
  state.counters["FLOPS"] =
      benchmark::Counter(double(kPeakIterations) * 16 * 32, benchmark::Counter::kIsIterationInvariantRate);
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
  alignas(64) int32_t lanes[16];
  int32_t sum = 0;
  for (int i = 0; i < 16; ++i) {
    _mm512_store_si512(lanes, acc[i]);
    sum += lanes[0];
  }
  benchmark::DoNotOptimize(sum);
  state.counters["OPS"] =
      benchmark::Counter(double(kPeakIterations) * 16 * 128, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

// Registers the ceilings this CPU can run.
inline void register_peak_benchmarks() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) benchmark::RegisterBenchmark("fma_peak_f32/avx512", fma_peak_f32);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni"))
    benchmark::RegisterBenchmark("dot_peak_u8s8/avx512vnni", dot_peak_u8s8);
#endif
}

}  // namespace mt_bench
