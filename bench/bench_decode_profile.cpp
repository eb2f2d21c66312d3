// Where one decoding step's time goes (issue 6): translates `batch` random
// sentences of 16 source tokens (EOS included) into exactly 16 target tokens
// (min = max decoding length) after warm-up, with the library's stage timers
// on (built only with -DMT_STAGE_PROFILE=ON, lib/src/support/stage_profile.hpp), and
// prints per stage: ms per decoding step, its share of the step, FLOPs and
// bytes per step, the rate achieved and the fraction of this machine's peak.
//
//   bench_decode_profile --model base|small|tiny|base-int8|base-int8dyn|en-de-tiny-int8|PATH.mtm
//                        [--batch 1] [--beam 1] [--threads 1] [--warmup 2]
//                        [--iterations 0 (auto: >= 3 and >= --min-time seconds)] [--min-time 2]
//
// Model names are bench_translate's (bench/bench_models.hpp): random presets
// written to the temporary directory, their int8 copies, the shipped models.
// The peak: the fp32 FMA loop of bench_kernels (fma_peak_f32,
// bench/fma_peak.hpp) x threads; int8 layers are read against 4x that
// (vpdpbusd does 64 u8 x s8 MACs = 128 ops per instruction against an FMA's
// 32 FLOP, at the same issue rate); the vpdpbusd loop is measured alongside.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_models.hpp"
#include "fma_peak.hpp"
#include "model/model_weights.hpp"
#include "mt/mt.hpp"
#include "support/stage_profile.hpp"
#include "access.hpp"

#if !defined(MT_STAGE_PROFILE) || !MT_STAGE_PROFILE
#error "bench_decode_profile needs the library built with -DMT_STAGE_PROFILE=ON"
#endif

namespace {

using mt::profile::Stage;

struct Args {
  std::string model = "base";
  int batch = 1, beam = 1, threads = 1, warmup = 2, iterations = 0;
  double min_time = 2.0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_decode_profile: %s\n"
               "usage: bench_decode_profile [--model NAME|PATH] [--batch B] [--beam K] [--threads N]\n"
               "                            [--warmup N] [--iterations N] [--min-time SECONDS]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + key).c_str());
    const char* value = argv[++i];
    if (key == "--model")
      a.model = value;
    else if (key == "--batch")
      a.batch = std::atoi(value);
    else if (key == "--beam")
      a.beam = std::atoi(value);
    else if (key == "--threads")
      a.threads = std::atoi(value);
    else if (key == "--warmup")
      a.warmup = std::atoi(value);
    else if (key == "--iterations")
      a.iterations = std::atoi(value);
    else if (key == "--min-time")
      a.min_time = std::atof(value);
    else
      usage(("unknown option " + key).c_str());
  }
  if (a.batch < 1 || a.beam < 1 || a.threads < 1 || a.warmup < 0 || a.iterations < 0) usage("bad value");
  return a;
}

// ---- Ceilings ---------------------------------------------------------------

// Captures the counters of bench/fma_peak.hpp's loops, run by Google Benchmark.
class CounterReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      for (const auto& [name, counter] : run.counters) {
        if (name == "FLOPS") fma = std::max(fma, double(counter.value));
        if (name == "OPS") dot = std::max(dot, double(counter.value));
      }
    }
  }
  double fma = 0, dot = 0;  // best of the repetitions, per second
};

struct Peaks {
  double fp32 = 0;     // FLOP/s, one core
  double vnni = 0;     // measured vpdpbusd OP/s, one core (0: not run)
  double read_bw = 0;       // bytes/s, one thread streaming a buffer far larger than the caches
  double step_read_bw = 0;  // bytes/s, one thread re-reading a buffer the size of a step's decoder weights
  double step_bytes = 0;    // that size
};

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint32_t read_sum_avx512(const uint32_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_epi32(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi32(a1, _mm512_load_si512(p + i + 16));
    a2 = _mm512_add_epi32(a2, _mm512_load_si512(p + i + 32));
    a3 = _mm512_add_epi32(a3, _mm512_load_si512(p + i + 48));
  }
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)));
  uint32_t sum = 0;
  for (uint32_t lane : lanes) sum += lane;
  return sum;
}
#endif

// One thread summing a buffer of `bytes` again and again: with 256 MiB, the
// DRAM bandwidth a step streaming its weights can hope for; with a step's own
// weight bytes, what it can hope for where they stay in the caches between
// steps (the ceiling of a batch-1 decode step). Best of 5 timings of >= 20 ms.
double read_bandwidth(size_t bytes) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f")) return 0;
  const size_t n = std::max<size_t>(64, bytes / sizeof(uint32_t) / 64 * 64);
  auto* p = static_cast<uint32_t*>(std::aligned_alloc(64, n * sizeof(uint32_t)));
  for (size_t i = 0; i < n; ++i) p[i] = uint32_t(i);
  double best = 0;
  uint32_t sink = 0;
  sink += read_sum_avx512(p, n);  // into the caches, where it fits
  for (int pass = 0; pass < 5; ++pass) {
    int reads = 0;
    double s = 0;
    const auto t0 = std::chrono::steady_clock::now();
    do {
      sink += read_sum_avx512(p, n);
      ++reads;
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (s < 0.02);
    best = std::max(best, double(n * sizeof(uint32_t)) * reads / s);
  }
  benchmark::DoNotOptimize(sink);
  std::free(p);
  return best;
#else
  return 0;
#endif
}

Peaks measure_peaks(size_t step_bytes) {
  Peaks p;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    benchmark::RegisterBenchmark("fma_peak_f32/avx512", mt_bench::fma_peak_f32)->MinTime(0.2)->Repetitions(3);
    if (__builtin_cpu_supports("avx512vnni"))
      benchmark::RegisterBenchmark("dot_peak_u8s8/avx512vnni", mt_bench::dot_peak_u8s8)->MinTime(0.2)->Repetitions(3);
    CounterReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    p.fp32 = reporter.fma;
    p.vnni = reporter.dot;
  }
#endif
  p.read_bw = read_bandwidth(size_t(256) << 20);
  p.step_bytes = double(step_bytes);
  p.step_read_bw = read_bandwidth(step_bytes);
  return p;
}

// ---- Work per stage ---------------------------------------------------------

// Per decoding step (or per translation for the encoder rows): arithmetic,
// bytes, and the time the work would take at peak (int8 layers against the
// int8 bar), which makes mixed fp32/int8 stages read right.
struct Work {
  double flops = 0, bytes = 0, peak_seconds = 0;
  bool int8 = false, fp32 = false;
};

struct Shapes {
  double fp32_peak, int8_peak;  // whole session (x threads), per second

  void gemm(Work& work, const mt::detail::Linear& l, double M) const {
    const double f = 2.0 * M * l.n * l.k;
    work.flops += f;
    work.bytes += double(l.n) * l.k * (l.is_int8() ? 1.0 : 4.0);
    work.peak_seconds += f / (l.is_int8() ? int8_peak : fp32_peak);
    (l.is_int8() ? work.int8 : work.fp32) = true;
  }
  void fp32_flops(Work& work, double f, double bytes) const {
    work.fp32 = true;
    work.flops += f;
    work.bytes += bytes;
    work.peak_seconds += f / fp32_peak;
  }
};

const char* kind(const Work& w) {
  if (w.int8 && w.fp32) return "mixed";
  if (w.int8) return "int8";
  if (w.fp32) return "fp32";
  return "";
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int bargc = 1;
  benchmark::Initialize(&bargc, argv);
  const Args args = parse(argc, argv);
  const bool is_path = args.model.find('/') != std::string::npos ||
                       (args.model.size() > 4 && args.model.substr(args.model.size() - 4) == ".mtm");
  if (!is_path && !mt_bench::shipped(args.model) &&
      !mt::ModelConfig::preset(args.model.substr(0, args.model.find('-')))) {
    usage(("unknown model '" + args.model +
           "' (base, small, tiny, <preset>-int8, <preset>-int8dyn, "
           "en-de-tiny, en-de-tiny-int8, or a path to a .mtm file)")
              .c_str());
  }
  const std::string path = is_path ? args.model : mt_bench::model_path(args.model);
  auto loaded = mt::Model::load(path);
  if (!loaded) {
    std::fprintf(stderr, "bench_decode_profile: %s: %s\n", path.c_str(), loaded.status().message());
    return 1;
  }
  std::shared_ptr<const mt::Model> model = std::move(loaded.value());
  const mt::ModelConfig& cfg = model->config();
  const mt::detail::ModelWeights& weights = mt::detail::weights_of(*model);

  constexpr int kSourceTokens = 16, kSteps = 16;  // source: 15 + EOS
  const int B = args.batch, K = args.beam;
  mt::SessionOptions so;
  so.max_batch_size = B;
  so.max_beam_size = K;
  so.max_source_length = kSourceTokens;
  so.max_target_length = kSteps;
  so.num_threads = args.threads;
  auto created = mt::Session::create(model, so);
  if (!created) {
    std::fprintf(stderr, "bench_decode_profile: session: %s\n", created.status().message());
    return 1;
  }
  mt::Session session = std::move(created.value());
  const auto src = mt_bench::sources(B, kSourceTokens - 1, cfg.source_vocab_size);
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::TranslateOptions to;
  to.beam_size = K;
  to.max_decoding_length = kSteps;
  to.min_decoding_length = kSteps;
  mt::Translations results;
  auto translate = [&] {
    if (!session.translate(spans, to, &results).ok()) std::abort();
  };

  // Ceilings first, on a quiet machine. A decode step reads every decoder
  // linear but the memory's projection (and the output layer, left out here:
  // a shortlist reads only its candidates' rows).
  size_t step_weight_bytes = 0;
  auto add_bytes = [&](const mt::detail::Linear& l) {
    step_weight_bytes += size_t(l.n) * size_t(l.k) * (l.is_int8() ? 1 : 4);
  };
  for (const auto& layer : weights.decoder) {
    for (const auto* l : {&layer.qkv, &layer.self_out, &layer.cross_q, &layer.cross_out, &layer.ffn_0, &layer.ffn_1})
      add_bytes(*l);
  }
  const Peaks peaks = measure_peaks(step_weight_bytes);

  for (int i = 0; i < args.warmup; ++i) translate();
  mt::profile::reset();
  int iterations = 0;
  double wall = 0;
  while (args.iterations > 0 ? iterations < args.iterations : (iterations < 3 || wall < args.min_time)) {
    const auto t0 = std::chrono::steady_clock::now();
    translate();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++iterations;
  }
  const mt::profile::Table table = mt::profile::snapshot();  // a copy: the overhead loop below adds to it

  // What one timer costs (two clock reads and the bookkeeping), to judge the
  // profile's own weight in small steps.
  constexpr int kTimerLoops = 1000000;
  const auto o0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kTimerLoops; ++i) {
    mt::profile::detail::ScopedStage scope(Stage::select);
    benchmark::ClobberMemory();
  }
  const double timer_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - o0).count() / kTimerLoops;

  // ---- Report ----
  const int T = mt::profile::kStages;
  const auto& st = table.stages;
  auto in_step = [&](Stage s) { return table.within[int(Stage::step)][int(s)]; };
  const uint64_t steps = st[int(Stage::step)].calls;
  if (steps != uint64_t(kSteps) * iterations) {
    std::fprintf(stderr, "bench_decode_profile: %llu steps timed, expected %d x %d\n",
                 static_cast<unsigned long long>(steps), kSteps, iterations);
    return 1;
  }
  const double step_ns = double(st[int(Stage::step)].inclusive_ns) / double(steps);
  const double M = double(B) * K;  // decoder rows: every beam is computed at every step
  const double N = double(B) * kSourceTokens;
  const double C = cfg.d_model, L = cfg.decoder_layers, V = cfg.target_vocab_size, S = kSourceTokens;
  const double mean_keys = (kSteps + 1) / 2.0;  // self-attention sees t + 1 keys at step t
  const double threads = args.threads;
  const double fp32_peak = peaks.fp32 * threads, int8_peak = 4.0 * peaks.fp32 * threads;
  const Shapes sh{fp32_peak > 0 ? fp32_peak : 1e300, int8_peak > 0 ? int8_peak : 1e300};
  const bool int8_embedding = weights.target_embedding.i8 != nullptr;

  Work work[T + 1];
  for (const auto& layer : weights.decoder) {
    sh.gemm(work[int(Stage::self_qkv)], layer.qkv, M);
    sh.gemm(work[int(Stage::self_out)], layer.self_out, M);
    sh.gemm(work[int(Stage::cross_q)], layer.cross_q, M);
    sh.gemm(work[int(Stage::cross_out)], layer.cross_out, M);
    sh.gemm(work[int(Stage::ffn)], layer.ffn_0, M);
    sh.gemm(work[int(Stage::ffn)], layer.ffn_1, M);
    sh.gemm(work[int(Stage::cross_kv_projection)], layer.cross_kv, N);
  }
  sh.gemm(work[int(Stage::output_layer)], weights.output, M);
  // Attention: the QK^T and PV products only (4 C FLOP per key per row and
  // layer); bytes: the keys and values each row reads.
  sh.fp32_flops(work[int(Stage::self_attention)], 4.0 * M * C * mean_keys * L, M * L * mean_keys * 2 * C * 4);
  sh.fp32_flops(work[int(Stage::cross_attention)], 4.0 * M * C * S * L, M * L * S * 2 * C * 4);
  work[int(Stage::embedding)].bytes = M * C * (int8_embedding ? 1 : 4);
  work[int(Stage::select)].bytes = M * V * 4;  // the logits, read at least once
  {
    Work& e = work[int(Stage::encoder)];
    for (const auto& layer : weights.encoder) {
      sh.gemm(e, layer.qkv, N);
      sh.gemm(e, layer.out, N);
      sh.gemm(e, layer.ffn_0, N);
      sh.gemm(e, layer.ffn_1, N);
    }
    sh.fp32_flops(e, 4.0 * N * C * S * cfg.encoder_layers, 0);
  }

  std::printf("## %s: batch %d, beam %d, %d thread%s\n\n", args.model.c_str(), B, K, args.threads,
              args.threads == 1 ? "" : "s");
  std::printf("- model: %s; %d+%d layers, d_model %d, d_ff %d, %d heads, target vocab %d; weights %s%s\n", path.c_str(),
              cfg.encoder_layers, cfg.decoder_layers, cfg.d_model, cfg.d_ff, cfg.heads, cfg.target_vocab_size,
              weights.any_int8 ? "int8" : "fp32",
              weights.any_int8 ? (weights.output.is_int8() ? " (output layer int8)" : " (output layer fp32)") : "");
  std::printf(
      "- kernels: %s; decoder rows M = batch x beam = %d; 16 source tokens -> 16 target tokens; "
      "%d warm-up + %d timed translations\n",
      session.kernel_isa(), int(M), args.warmup, iterations);
  std::printf(
      "- peak, one core: fp32 FMA loop %.1f GFLOP/s (bench_kernels fma_peak_f32); int8 bar = 4x = %.1f GOP/s "
      "(VNNI: 128 ops per vpdpbusd vs 32 FLOP per FMA, same issue rate; the vpdpbusd loop measures %s)\n",
      peaks.fp32 * 1e-9, 4 * peaks.fp32 * 1e-9, peaks.vnni > 0 ? fmt("%.1f GOP/s", peaks.vnni * 1e-9).c_str() : "n/a");
  std::printf("- %% of peak = achieved / (peak x %d thread%s); one thread reads DRAM at %.1f GB/s (256 MiB sum loop)\n",
              args.threads, args.threads == 1 ? "" : "s", peaks.read_bw * 1e-9);
  std::printf(
      "- a step's decoder layers (the output layer apart): %.2f MB of weights; one thread re-reads that many "
      "bytes at %.1f GB/s (cached where they fit): at batch 1 they take at least %.3f ms a step on one thread\n",
      peaks.step_bytes * 1e-6, peaks.step_read_bw * 1e-9,
      peaks.step_read_bw > 0 ? peaks.step_bytes / peaks.step_read_bw * 1e3 : 0.0);
  std::printf(
      "- translate: %.3f ms per call (%.0f target tokens/s); encoder %.3f ms + cross kv projection %.3f ms "
      "+ 16 steps x %.3f ms + other %.3f ms\n\n",
      wall * 1e3 / iterations, 16.0 * B * iterations / wall, st[int(Stage::encoder)].inclusive_ns * 1e-6 / iterations,
      st[int(Stage::cross_kv_projection)].inclusive_ns * 1e-6 / iterations, step_ns * 1e-6,
      wall * 1e3 / iterations - (st[int(Stage::encoder)].inclusive_ns +
                                 st[int(Stage::cross_kv_projection)].inclusive_ns + st[int(Stage::step)].inclusive_ns) *
                                    1e-6 / iterations);

  std::printf(
      "| stage | kind | calls/step | ms/step | share | MFLOP/step | MB/step | GFLOP/s (int8: GOP/s) "
      "| %% of peak | GB/s | %% of DRAM read |\n");
  std::printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  // calls < 0: left blank.
  auto row = [&](const std::string& name, const char* k, double calls, double ns, const Work* w) {
    const double seconds = ns * 1e-9;
    const bool flops = w && w->flops > 0 && seconds > 0, bytes = w && w->bytes > 0 && seconds > 0;
    std::printf(
        "| %s | %s | %s | %.4f | %.1f%% | %s | %s | %s | %s | %s | %s |\n", name.c_str(), k,
        calls >= 0 ? fmt("%.0f", calls).c_str() : "", ns * 1e-6, 100.0 * ns / step_ns,
        flops ? fmt("%.1f", w->flops * 1e-6).c_str() : "", bytes ? fmt("%.3f", w->bytes * 1e-6).c_str() : "",
        flops ? fmt("%.1f", w->flops / seconds * 1e-9).c_str() : "",
        flops && w->peak_seconds > 0 && peaks.fp32 > 0 ? fmt("%.1f%%", 100.0 * w->peak_seconds / seconds).c_str() : "",
        bytes ? fmt("%.1f", w->bytes / seconds * 1e-9).c_str() : "",
        bytes && peaks.read_bw > 0 ? fmt("%.0f%%", 100.0 * w->bytes / seconds / peaks.read_bw).c_str() : "");
  };
  const std::string of_which = "&nbsp;&nbsp;of which: ";
  const Stage order[] = {Stage::embedding,  Stage::self_qkv,        Stage::self_attention, Stage::self_out,
                         Stage::cross_q,    Stage::cross_attention, Stage::cross_out,      Stage::ffn,
                         Stage::layer_norm, Stage::output_layer,    Stage::select};
  const Stage gemms[] = {Stage::self_qkv,  Stage::self_out, Stage::cross_q,
                         Stage::cross_out, Stage::ffn,      Stage::output_layer};
  double covered = 0;
  for (Stage s : order) {
    const auto cell = in_step(s);
    if (s == Stage::select) continue;  // reported under the search below
    covered += double(cell.ns);
    row(mt::profile::stage_name(s), kind(work[int(s)]), double(cell.calls) / steps, double(cell.ns) / steps,
        &work[int(s)]);
    const auto q = table.within[int(s)][int(Stage::quantize_inputs)];
    if (q.calls > 0)
      row(of_which + "int8 input quantization", "", double(q.calls) / steps, double(q.ns) / steps, nullptr);
  }
  const auto search = in_step(Stage::search);
  const auto select = table.within[int(Stage::search)][int(Stage::select)];
  const auto reorder = table.within[int(Stage::search)][int(Stage::cache_reorder)];
  covered += double(search.ns);
  row(mt::profile::stage_name(Stage::select), "", double(select.calls) / steps, double(select.ns) / steps,
      &work[int(Stage::select)]);
  row(K > 1 ? "beam bookkeeping (rest of the search loop)" : "greedy bookkeeping (rest of the search loop)", "",
      double(search.calls) / steps, double(search.ns - select.ns) / steps, nullptr);
  if (reorder.calls > 0)
    row(of_which + "beam KV-cache reorder", "", double(reorder.calls) / steps, double(reorder.ns) / steps, nullptr);
  const double unattributed = double(st[int(Stage::step)].inclusive_ns) - covered;
  row("(unattributed: between the timers)", "", -1, unattributed / steps, nullptr);

  // Totals.
  double gemm_ns = 0;
  Work gemm_work;
  for (Stage s : gemms) {
    gemm_ns += double(in_step(s).ns);
    gemm_work.flops += work[int(s)].flops;
    gemm_work.bytes += work[int(s)].bytes;
    gemm_work.peak_seconds += work[int(s)].peak_seconds;
    gemm_work.int8 |= work[int(s)].int8;
    gemm_work.fp32 |= work[int(s)].fp32;
  }
  row("**all linears (GEMM)**", kind(gemm_work), -1, gemm_ns / steps, &gemm_work);
  row("**decode step (measured)**", "", 1, step_ns, nullptr);
  std::printf("\n- coverage: the stages sum to %.4f ms of the %.4f ms step (%.1f%%)\n", covered / steps * 1e-6,
              step_ns * 1e-6, 100.0 * covered / double(st[int(Stage::step)].inclusive_ns));
  uint64_t timers = 0;
  for (int s = 0; s < T; ++s) {
    if (s == int(Stage::encoder) || s == int(Stage::cross_kv_projection)) continue;
    timers += st[s].calls - table.within[int(Stage::encoder)][s].calls -
              table.within[int(Stage::cross_kv_projection)][s].calls;
  }
  std::printf("- timer cost: %.1f timers per step x %.0f ns = %.2f us (%.2f%% of the step)\n", double(timers) / steps,
              timer_ns, double(timers) / steps * timer_ns * 1e-3, 100.0 * double(timers) / steps * timer_ns / step_ns);
  {
    const double e = double(st[int(Stage::encoder)].inclusive_ns) / iterations;
    const double x = double(st[int(Stage::cross_kv_projection)].inclusive_ns) / iterations;
    const Work& ew = work[int(Stage::encoder)];
    const Work& xw = work[int(Stage::cross_kv_projection)];
    std::printf(
        "- encoder (%d x 16 tokens): %.3f ms per translation, %.1f GFLOP/s (%.1f%% of peak; layer norms %.3f ms, "
        "int8 quantization %.3f ms); cross kv projection: %.3f ms, %.1f GFLOP/s (%.1f%% of peak)\n\n",
        B, e * 1e-6, ew.flops / e, peaks.fp32 > 0 ? 100.0 * ew.peak_seconds / (e * 1e-9) : 0.0,
        table.within[int(Stage::encoder)][int(Stage::layer_norm)].ns * 1e-6 / iterations,
        table.within[int(Stage::encoder)][int(Stage::quantize_inputs)].ns * 1e-6 / iterations, x * 1e-6, xw.flops / x,
        peaks.fp32 > 0 ? 100.0 * xw.peak_seconds / (x * 1e-9) : 0.0);
  }
  return 0;
}
