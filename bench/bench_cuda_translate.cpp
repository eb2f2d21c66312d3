// GPU translation throughput (CUDA sessions): whole sentences of 16 source
// -> exactly 16 target tokens on the paper's "base" configuration with random
// weights, greedy and beam 4, batches of 1, 32 and 128, GEMMs in fp32 and in
// TF32, decode steps replayed from CUDA Graphs or launched kernel by kernel.
// Target tokens per second of wall time, and the session's creation time
// (graphs are captured then). Built only with CUDA; without a device it says
// so and exits 1.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mt/mt.hpp"

namespace {

std::shared_ptr<const mt::Model> base_model() {
  static std::shared_ptr<const mt::Model> model = [] {
    const std::string path = (std::filesystem::temp_directory_path() / "libmt-bench-cuda-base.mtm").string();
    if (!std::filesystem::exists(path)) {
      const mt::Status s = mt::write_random_model(mt::ModelConfig::preset("base").value(), 1, path);
      if (!s.ok()) std::abort();
    }
    return mt::Model::load(path).value();
  }();
  return model;
}

std::vector<std::vector<int32_t>> sources(int batch, int length, int vocab) {
  std::vector<std::vector<int32_t>> out(size_t(batch), std::vector<int32_t>(size_t(length), 0));
  uint32_t x = 12345;
  for (auto& s : out)
    for (auto& t : s) t = int32_t(4 + ((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(vocab - 4));
  return out;
}

void BM_CudaTranslate(benchmark::State& state) {
  const int batch = int(state.range(0)), beam = int(state.range(1));
  mt::SessionOptions o;
  o.device = mt::Device::cuda;
  o.allow_tf32 = state.range(2) != 0;
  o.cuda_graphs = state.range(3) != 0;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.max_source_length = 16;
  o.max_target_length = 16;
  base_model();  // written and loaded outside the creation's time
  const auto created = std::chrono::steady_clock::now();
  auto session = mt::Session::create(base_model(), o);
  const double create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created).count();
  if (!session.ok()) {
    state.SkipWithError(session.status().message());
    return;
  }
  const auto src = sources(batch, 15, base_model()->config().source_vocab_size);  // + EOS = 16
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::TranslateOptions options;
  options.beam_size = beam;
  options.max_decoding_length = 16;
  options.min_decoding_length = 16;
  mt::Translations results;
  // Warm-up: CUDA loads kernels on their first launch.
  if (!session->translate(spans, options, &results).ok()) std::abort();
  for (auto _ : state) {
    if (!session->translate(spans, options, &results).ok()) std::abort();
  }
  state.counters["target_tokens/s"] = benchmark::Counter(16.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["create_ms"] = create_ms;
}

int register_all() {
  auto* b = benchmark::RegisterBenchmark("cuda_translate_16x16/base", BM_CudaTranslate);
  b->ArgNames({"batch", "beam", "tf32", "graphs"});
  for (int tf32 : {0, 1})
    for (int beam : {1, 4})
      for (int batch : {1, 32, 128})
        for (int graphs : {0, 1}) b->Args({batch, beam, tf32, graphs});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
  return 0;
}

const int registered = register_all();

}  // namespace

int main(int argc, char** argv) {
  // Fail clearly (not as a page of skipped benchmarks) without a usable GPU.
  mt::SessionOptions probe;
  probe.device = mt::Device::cuda;
  probe.max_batch_size = probe.max_source_length = probe.max_target_length = probe.max_beam_size = 1;
  mt::ModelConfig tiny = mt::ModelConfig::preset("tiny").value();
  tiny.source_vocab_size = tiny.target_vocab_size = 64;
  const std::string path = (std::filesystem::temp_directory_path() / "libmt-bench-cuda-probe.mtm").string();
  if (!mt::write_random_model(tiny, 1, path).ok()) return 1;
  auto probe_session = mt::Session::create(mt::Model::load(path).value(), probe);
  if (!probe_session.ok()) {
    std::fprintf(stderr, "bench_cuda_translate: %s\n", probe_session.status().message());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
