// libmt_run: one cell of the side-by-side comparison (bench/ctranslate2/
// compare.py), libmt's half; ct2_run.py is CTranslate2's and takes the same
// arguments and prints the same JSON.
//
//   libmt_run --model M.mtm --input SRC.ids --output OUT.ids --batch B --beam K
//             --threads T [--min-length N] [--max-length N] [--repeat R]
//             [--thread-split automatic|layers|sentences] [--device cpu|cuda [--gpu N] [--tf32] [--fp16] [--cuda-int8]]
//
// SRC.ids: one sentence of source token ids per line, without EOS. Sentences
// are sorted by length (stable) and cut into batches of B, as CTranslate2
// does; OUT.ids gets the best hypothesis of each, in input order. The whole
// input is translated once to warm up, then R times; the fastest pass counts.
// Prints {"load_ms", "text_load_ms", "seconds", "target_tokens", "sentences",
// "rss_before_load_kb", "peak_rss_kb"} on one line: load_ms is Model::load
// without the vocabulary (ids in and out, as CTranslate2) + Session::create;
// text_load_ms the same with the vocabulary and its tokenizer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "mt/mt.hpp"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "libmt_run: %s\n", message.c_str());
  return 1;
}

// VmRSS or VmHWM (peak) of this process, in KiB, from /proc/self/status.
long proc_status_kb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::string(field).size() + 1);
  }
  return -1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  mt::cli::Args args(argc, argv, {"--tf32", "--fp16", "--cuda-int8"});
  args.reject_unknown({"--model", "--input", "--output", "--batch", "--beam", "--threads", "--min-length",
                       "--max-length", "--repeat", "--thread-split", "--device", "--gpu", "--tf32",
                       "--fp16", "--cuda-int8"});
  const std::string model_path = args.get("--model", ""), input = args.get("--input", ""),
                    output = args.get("--output", "");
  const int batch = args.get_int("--batch", 1, 1, 4096), beam = args.get_int("--beam", 1, 1, 64),
            threads = args.get_int("--threads", 1, 1, 256), min_length = args.get_int("--min-length", 0, 0, 4096),
            max_length = args.get_int("--max-length", 256, 1, 4096), repeat = args.get_int("--repeat", 3, 0, 1000);
  mt::ThreadSplit split = mt::ThreadSplit::automatic;
  if (std::string error; !mt::cli::thread_split_option(args, &split, &error)) return fail(error);
  mt::SessionOptions session_options;
  if (std::string error; !mt::cli::device_options(args, &session_options, &error)) return fail(error);
  if (!args.ok()) return fail(args.error());
  if (model_path.empty() || input.empty()) return fail("--model and --input are required");

  std::vector<std::vector<int32_t>> sources;
  {
    std::ifstream in(input);
    if (!in) return fail("cannot open " + input);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ids(line);
      sources.emplace_back();
      for (long id; ids >> id;) sources.back().push_back(int32_t(id));
    }
  }
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  size_t longest = 0;
  for (const auto& s : sources) longest = std::max(longest, s.size());

  const long rss_before = proc_status_kb("VmRSS:");
  const auto load_start = std::chrono::steady_clock::now();
  // Token ids in and out, as CTranslate2: the vocabulary is not loaded.
  mt::LoadOptions load_options;
  load_options.load_vocabulary = false;
  auto model = mt::Model::load(model_path, load_options);
  if (!model) return fail(model.status().message());
  session_options.max_batch_size = batch;
  session_options.max_beam_size = beam;
  session_options.max_source_length = int(std::min<size_t>(longest + 1, size_t(model.value()->config().max_positions)));
  session_options.max_target_length = max_length;
  session_options.num_threads = threads;
  session_options.thread_split = split;
  auto session = mt::Session::create(model.value(), session_options);
  if (!session) return fail(session.status().message());
  const double load_ms = seconds_since(load_start) * 1e3;

  mt::TranslateOptions options;
  options.beam_size = beam;
  options.min_decoding_length = min_length;
  options.max_decoding_length = max_length;
  std::vector<std::vector<int32_t>> best(sources.size());
  std::vector<std::span<const int32_t>> spans;
  mt::Translations results;
  double fastest = 0;  // --repeat 0: the warm-up pass only (outputs, no timing)
  long target_tokens = 0;
  for (int pass = 0; pass <= repeat; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    target_tokens = 0;
    for (size_t first = 0; first < order.size(); first += size_t(batch)) {
      const size_t last = std::min(order.size(), first + size_t(batch));
      spans.clear();
      for (size_t i = first; i < last; ++i) spans.emplace_back(sources[order[i]]);
      const mt::Status s = session.value().translate(spans, options, &results);
      if (!s.ok()) return fail(s.message());
      for (size_t i = first; i < last; ++i) {
        const auto tokens = results[i - first][0].tokens;
        target_tokens += long(tokens.size());
        if (pass == 0) best[order[i]].assign(tokens.begin(), tokens.end());
      }
    }
    const double elapsed = seconds_since(start);
    if (pass > 0) fastest = pass == 1 ? elapsed : std::min(fastest, elapsed);
  }

  if (!output.empty()) {
    std::ofstream out(output);
    for (const auto& tokens : best) {
      for (size_t i = 0; i < tokens.size(); ++i) out << (i ? " " : "") << tokens[i];
      out << '\n';
    }
    if (!out) return fail("cannot write " + output);
  }
  const long peak_rss = proc_status_kb("VmHWM:");
  // The load a text-translating program pays, tokenizer included: measured
  // last (so the peak RSS above is the translation's), in a warm process.
  const auto text_load_start = std::chrono::steady_clock::now();
  {
    auto text_model = mt::Model::load(model_path);
    if (!text_model) return fail(text_model.status().message());
    auto text_session = mt::Session::create(text_model.value(), session_options);
    if (!text_session) return fail(text_session.status().message());
  }
  const double text_load_ms = seconds_since(text_load_start) * 1e3;
  // On the GPU, the options asked for (which of them apply depends on the model).
  std::string device = "cuda";
  if (session_options.cuda_int8_gemm) device += "+int8";
  if (session_options.cuda_fp16) device += "+fp16";
  if (session_options.allow_tf32) device += "+tf32";
  std::printf(
      "{\"load_ms\": %.3f, \"text_load_ms\": %.3f, \"seconds\": %.6f, \"target_tokens\": %ld, \"sentences\": %zu, "
      "\"rss_before_load_kb\": %ld, \"peak_rss_kb\": %ld, \"isa\": \"%s\"}\n",
      load_ms, text_load_ms, fastest, target_tokens, sources.size(), rss_before, peak_rss,
      session_options.device == mt::Device::cpu ? session.value().kernel_isa() : device.c_str());
  return 0;
}
