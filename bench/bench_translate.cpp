// Runtime benchmarks on random-weight models (README "Benchmarks"):
// model load, encoder, one decoder step, and whole sentences of 16 source ->
// exactly 16 target tokens, greedy and beam 4, batch 1 and 32, for the
// "base" and "small" configs. MT_BENCH_THREADS sets the session threads (default 1).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mt/mt.hpp"
#include "session_impl.hpp"

namespace {

const char* kConfigs[] = {"base", "small"};

int bench_threads() {
  const char* env = std::getenv("MT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

// Random models are written once per run, into the temporary directory.
const std::string& model_path(const std::string& name) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(name);
  if (it != paths.end()) return it->second;
  const std::string path = (std::filesystem::temp_directory_path() / ("libmt-bench-" + name + ".mtm")).string();
  if (!std::filesystem::exists(path)) {
    const mt::Status s = mt::write_random_model(mt::ModelConfig::preset(name).value(), 1, path);
    if (!s.ok()) std::abort();
  }
  return paths.emplace(name, path).first->second;
}

std::shared_ptr<const mt::Model> load(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const mt::Model>> models;
  auto& m = models[name];
  if (!m) m = mt::Model::load(model_path(name)).value();
  return m;
}

std::vector<std::vector<int32_t>> sources(int batch, int length, int vocab) {
  std::vector<std::vector<int32_t>> out(size_t(batch), std::vector<int32_t>(size_t(length), 0));
  uint32_t x = 12345;
  for (auto& s : out)
    for (auto& t : s) t = int32_t(4 + ((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(vocab - 4));
  return out;
}

mt::Session session_for(const std::string& name, int batch, int beam, int source_length) {
  mt::SessionOptions o;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.max_source_length = source_length + 1;
  o.max_target_length = 16;
  o.num_threads = bench_threads();
  return mt::Session::create(load(name), o).value();
}

void BM_LoadModel(benchmark::State& state, std::string name) {
  model_path(name);
  for (auto _ : state) {
    auto model = mt::Model::load(model_path(name));
    benchmark::DoNotOptimize(model);
  }
}

// Encoder over one sentence of `length` tokens (EOS included).
void BM_Encoder(benchmark::State& state, std::string name) {
  const int length = int(state.range(0));
  mt::Session session = session_for(name, 1, 1, length);
  const auto src = sources(1, length - 1, load(name)->config().source_vocab_size);
  std::span<const int32_t> batch[] = {src[0]};
  mt::Session::Impl& s = *session.impl();
  if (!s.load_sources(batch, {}).ok()) std::abort();
  for (auto _ : state) s.encode(1);
  state.counters["tokens/s"] = benchmark::Counter(double(length), benchmark::Counter::kIsIterationInvariantRate);
}

// One incremental decoder step at position 8 for `batch` rows, 16 source tokens.
void BM_DecoderStep(benchmark::State& state, std::string name) {
  const int batch = int(state.range(0));
  mt::Session session = session_for(name, batch, 1, 16);
  const auto src = sources(batch, 15, load(name)->config().source_vocab_size);
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::Session::Impl& s = *session.impl();
  if (!s.load_sources(spans, {}).ok()) std::abort();
  s.encode(batch);
  std::vector<int32_t> tokens(size_t(batch), 7);
  const auto decoder_state = s.decoder_state(1);
  const auto buffers = s.decoder_buffers();
  for (auto _ : state) s.transformer->decode_step(tokens.data(), batch, 8, decoder_state, buffers, s.at<float>(s.plan.logits));
  state.counters["rows/s"] = benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
}

// Whole sentences: 16 source tokens -> exactly 16 target tokens.
void BM_Translate(benchmark::State& state, std::string name) {
  const int batch = int(state.range(0)), beam = int(state.range(1));
  mt::Session session = session_for(name, batch, beam, 16);
  const auto src = sources(batch, 15, load(name)->config().source_vocab_size);  // + EOS = 16
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::TranslateOptions options;
  options.beam_size = beam;
  options.max_decoding_length = 16;
  options.min_decoding_length = 16;
  mt::Translations results;
  for (auto _ : state) {
    if (!session.translate(spans, options, &results).ok()) std::abort();
  }
  state.counters["target_tokens/s"] = benchmark::Counter(16.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  for (const char* c : kConfigs) {
    const std::string name = c;
    benchmark::RegisterBenchmark(("load/" + name).c_str(), BM_LoadModel, name)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encoder/" + name).c_str(), BM_Encoder, name)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decoder_step/" + name).c_str(), BM_DecoderStep, name)->Arg(1)->Arg(32)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("translate_16x16/" + name).c_str(), BM_Translate, name)
        ->ArgNames({"batch", "beam"})
        ->Args({1, 1})->Args({32, 1})->Args({1, 4})->Args({32, 4})
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
