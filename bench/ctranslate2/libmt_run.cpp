// libmt_run: one cell of the side-by-side comparison (bench/ctranslate2/
// compare.py), libmt's half; ct2_run.py is CTranslate2's and takes the same
// arguments and prints the same JSON.
//
//   libmt_run --model M.mtm --input SRC.ids --output OUT.ids --batch B --beam K
//             --threads T [--sessions N] [--min-length N] [--max-length N] [--repeat R]
//             [--thread-split automatic|layers|sentences] [--device cpu|cuda [--gpu N] [--tf32] [--fp16]
//             [--cuda-dequantize]]
//   libmt_run --model M.mtm --load-only [--vocabulary]
//
// SRC.ids: one sentence of source token ids per line, without EOS. Batches
// are B consecutive lines, in the file's order: compare.py writes the file in
// the batch order both engines get (sorted longest first, as CTranslate2
// sorts). OUT.ids gets the best hypothesis of each line. The whole input is
// translated once to warm up, then R times.
// Prints one JSON line: "pass_seconds" (each timed pass), "seconds" (their
// median), "load_ms" (Model::load without the vocabulary, ids in and out as
// CTranslate2, + Session::create), "load_first_ms" (that + translating the
// first line alone: the time to a first translation), "target_tokens",
// "sentences", "rss_before_load_kb", "peak_rss_kb", "isa".
// --load-only: only "load_ms", the model (with its vocabulary and tokenizer
// when --vocabulary is given) loaded and a session created, in this fresh process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
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
  using mt::cli::Option;
  std::vector<Option> table = {
      {"--model", nullptr, "FILE"},
      {"--input", nullptr, "FILE"},
      {"--output", nullptr, "FILE"},
      {"--batch", nullptr, "N"},
      {"--beam", nullptr, "N"},
      {"--threads", nullptr, "N"},
      {"--sessions", nullptr, "N"},
      {"--min-length", nullptr, "N"},
      {"--max-length", nullptr, "N"},
      {"--repeat", nullptr, "N"},
      {"--thread-split", nullptr, "S"},
      {"--load-only"},
      {"--vocabulary"},
  };
  for (const Option& o : mt::cli::device_option_table()) table.push_back(o);
  mt::cli::Args args(argc, argv, table);
  if (!args.ok()) return fail(args.error());
  if (args.has("--load-only")) {
    const auto start = std::chrono::steady_clock::now();
    mt::LoadOptions load_options;
    load_options.load_vocabulary = args.has("--vocabulary");
    auto model = mt::Model::load(args.get("--model", ""), load_options);
    if (!model) return fail(model.status().message());
    auto session = mt::Session::create(model.value(), {});
    if (!session) return fail(session.status().message());
    std::printf("{\"load_ms\": %.3f}\n", seconds_since(start) * 1e3);
    return 0;
  }
  const std::string model_path = args.get("--model", ""), input = args.get("--input", ""),
                    output = args.get("--output", "");
  const int batch = args.get_int("--batch", 1, 1, 4096), beam = args.get_int("--beam", 1, 1, 64),
            threads = args.get_int("--threads", 1, 1, 256), min_length = args.get_int("--min-length", 0, 0, 4096),
            max_length = args.get_int("--max-length", 256, 1, 4096), repeat = args.get_int("--repeat", 3, 0, 1000),
            sessions_count = args.get_int("--sessions", 1, 1, 256);
  mt::ThreadSplit split = mt::ThreadSplit::automatic;
  mt::cli::thread_split_option(args, &split);
  mt::SessionOptions session_options;
  mt::cli::device_options(args, &session_options);
  if (!args.ok()) return fail(args.error());
  if (model_path.empty() || input.empty()) return fail("--model and --input are required");
  if (threads % sessions_count != 0) return fail("--threads must be a multiple of --sessions");

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
  if (sources.empty()) return fail(input + " has no line");
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
  session_options.num_threads = threads / sessions_count;
  session_options.thread_split = split;
  // --sessions N: N sessions sharing the model, each on its own thread with
  // threads / N threads of its own, translating every N-th batch
  // (data-parallel, as CTranslate2's inter_threads).
  std::vector<mt::Session> sessions;
  for (int i = 0; i < sessions_count; ++i) {
    auto made = mt::Session::create(model.value(), session_options);
    if (!made) return fail(made.status().message());
    sessions.push_back(std::move(made.value()));
  }
  mt::Session* session = &sessions[0];
  const double load_ms = seconds_since(load_start) * 1e3;

  mt::TranslateOptions options;
  options.beam_size = beam;
  options.min_decoding_length = min_length;
  options.max_decoding_length = max_length;
  mt::Translations results;
  {
    const std::span<const int32_t> first_line[] = {sources[0]};
    const mt::Status s = session->translate(first_line, options, &results);
    if (!s.ok()) return fail(s.message());
  }
  const double load_first_ms = seconds_since(load_start) * 1e3;

  std::vector<std::vector<int32_t>> best(sources.size());
  std::vector<double> pass_seconds;  // --repeat 0: the warm-up pass only (outputs, no timing)
  long target_tokens = 0;
  // Worker w translates batches w, w + N, ... with session w.
  const auto work = [&](int w, bool keep, long* tokens_out, mt::Status* status) {
    std::vector<std::span<const int32_t>> spans;
    mt::Translations out;
    long tokens = 0;
    for (size_t first = size_t(w) * size_t(batch); first < sources.size();
         first += size_t(batch) * size_t(sessions_count)) {
      const size_t last = std::min(sources.size(), first + size_t(batch));
      spans.assign(sources.begin() + long(first), sources.begin() + long(last));
      *status = sessions[size_t(w)].translate(spans, options, &out);
      if (!status->ok()) return;
      for (size_t i = first; i < last; ++i) {
        const auto hyp = out[i - first][0].tokens;
        tokens += long(hyp.size());
        if (keep) best[i].assign(hyp.begin(), hyp.end());
      }
    }
    *tokens_out = tokens;
  };
  std::vector<long> tokens(static_cast<size_t>(sessions_count), 0);
  std::vector<mt::Status> statuses(static_cast<size_t>(sessions_count));
  for (int pass = 0; pass <= repeat; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int w = 1; w < sessions_count; ++w)
      workers.emplace_back(work, w, pass == 0, &tokens[size_t(w)], &statuses[size_t(w)]);
    work(0, pass == 0, &tokens[0], &statuses[0]);
    for (std::thread& t : workers) t.join();
    const double elapsed = seconds_since(start);
    for (const mt::Status& st : statuses) {
      if (!st.ok()) return fail(st.message());
    }
    target_tokens = std::accumulate(tokens.begin(), tokens.end(), 0L);
    if (pass > 0) pass_seconds.push_back(elapsed);
  }
  std::string passes_json;
  for (size_t i = 0; i < pass_seconds.size(); ++i) {
    char value[32];
    std::snprintf(value, sizeof(value), "%s%.6f", i ? ", " : "", pass_seconds[i]);
    passes_json += value;
  }
  std::vector<double> sorted = pass_seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty()      ? 0.0
                        : sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);

  if (!output.empty()) {
    std::ofstream out(output);
    for (const auto& tokens : best) {
      for (size_t i = 0; i < tokens.size(); ++i) out << (i ? " " : "") << tokens[i];
      out << '\n';
    }
    if (!out) return fail("cannot write " + output);
  }
  const long peak_rss = proc_status_kb("VmHWM:");
  // On the GPU, the options asked for (which of them apply depends on the model).
  std::string device = "cuda";
  if (session_options.cuda_int8_gemm) device += "+int8";
  if (session_options.cuda_fp16) device += "+fp16";
  if (session_options.allow_tf32) device += "+tf32";
  std::printf(
      "{\"load_ms\": %.3f, \"load_first_ms\": %.3f, \"pass_seconds\": [%s], \"seconds\": %.6f, "
      "\"target_tokens\": %ld, \"sentences\": %zu, \"rss_before_load_kb\": %ld, \"peak_rss_kb\": %ld, \"isa\": "
      "\"%s\"}\n",
      load_ms, load_first_ms, passes_json.c_str(), median, target_tokens, sources.size(), rss_before, peak_rss,
      session_options.device == mt::Device::cpu ? session->kernel_isa() : device.c_str());
  return 0;
}
