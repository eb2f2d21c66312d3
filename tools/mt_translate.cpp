// mt_translate: translates sentences given as token ids, one per line, with a
// libmt model. (Text in, text out arrives with the tokenizer.)
//
//   mt_translate -m model.mtm [--input FILE] [--beam 4] [--nbest 2] [--scores] ...
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "mt/mt.hpp"

namespace {

constexpr const char* kUsage = R"(usage: mt_translate -m MODEL [options] < input > output

Reads one sentence per line as space-separated source token ids and writes
one line per input line, in the same order: the target token ids.

options:
  -m, --model FILE          model file (required)
  -i, --input FILE          read this file instead of standard input
  --beam N                  beam size, 1 = greedy (default 1)
  --nbest N                 hypotheses per sentence, <= beam; lines "INDEX ||| IDS ||| SCORE" (default 1)
  --scores                  prefix each line with its score and a tab
  --length-penalty A        score = log P / length^A (default 1)
  --max-length N            generated tokens at most (default 256)
  --max-length-ratio R      also at most R x source length + --max-length-offset (default off)
  --max-length-offset N     (default 0)
  --min-length N            no EOS before N tokens (default 0)
  --max-source-length N     longest source accepted, in tokens (default 256)
  --batch-size N            sentences per batch; input is sorted by length into batches (default 16)
  --threads N               threads (default 1)
  -h, --help                this text
)";

int fail(const std::string& message) {
  std::fprintf(stderr, "mt_translate: %s\n", message.c_str());
  return 1;
}

// Parses "12 7 5" into ids; false with a reason on anything else.
bool parse_ids(const std::string& line, std::vector<int32_t>* ids, std::string* why) {
  ids->clear();
  const char* p = line.c_str();
  const char* end = p + line.size();
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (p == end) break;
    char* stop = nullptr;
    const long v = std::strtol(p, &stop, 10);
    if (stop == p || (stop < end && *stop != ' ' && *stop != '\t' && *stop != '\r') || v < 0 || v > INT32_MAX) {
      *why = "expected space-separated non-negative token ids";
      return false;
    }
    ids->push_back(int32_t(v));
    p = stop;
  }
  return true;
}

std::string join(std::span<const int32_t> ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ' ';
    out += std::to_string(ids[i]);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  mt::cli::Args args(argc, argv, {"--scores", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.reject_unknown({"-m", "--model", "-i", "--input", "--beam", "--nbest", "--scores", "--length-penalty",
                       "--max-length", "--max-length-ratio", "--max-length-offset", "--min-length",
                       "--max-source-length", "--batch-size", "--threads"});
  const std::string model_path = args.get("-m", args.get("--model", ""));
  const std::string input_path = args.get("-i", args.get("--input", ""));
  mt::TranslateOptions topts;
  topts.beam_size = args.get_int("--beam", 1, 1, 256);
  topts.num_hypotheses = args.get_int("--nbest", 1, 1, 256);
  topts.length_penalty = args.get_float("--length-penalty", 1.0f, 0.0f, 10.0f);
  const int max_length = args.get_int("--max-length", 256, 1, 65536);
  topts.max_length_ratio = args.get_float("--max-length-ratio", 0.0f, 0.0f, 1000.0f);
  topts.max_length_offset = args.get_int("--max-length-offset", 0, 0, 65536);
  topts.min_decoding_length = args.get_int("--min-length", 0, 0, 65536);
  mt::SessionOptions sopts;
  sopts.max_source_length = args.get_int("--max-source-length", 256, 1, 65536);
  sopts.max_batch_size = args.get_int("--batch-size", 16, 1, 4096);
  sopts.num_threads = args.get_int("--threads", 1, 1, 256);
  const bool scores = args.has("--scores");
  if (!args.ok()) return fail(args.error());
  if (!args.positional().empty()) return fail("unexpected argument '" + args.positional()[0] + "' (see --help)");
  if (model_path.empty()) return fail("a model is required: -m FILE (see --help)");
  if (topts.num_hypotheses > topts.beam_size) return fail("--nbest must not exceed --beam");
  if (topts.min_decoding_length > max_length) return fail("--min-length must not exceed --max-length");

  auto model = mt::Model::load(model_path);
  if (!model) return fail(model.status().message());
  const int positions = (*model)->config().max_positions;
  sopts.max_target_length = std::min(max_length, positions);
  sopts.max_source_length = std::min(sopts.max_source_length + 1, positions);  // + EOS
  sopts.max_beam_size = topts.beam_size;
  topts.max_decoding_length = sopts.max_target_length;

  // Read everything first: output order is input order, batches go by length.
  std::ifstream file;
  std::istream* in = &std::cin;
  if (!input_path.empty()) {
    file.open(input_path);
    if (!file) return fail("cannot open '" + input_path + "'");
    in = &file;
  }
  std::vector<std::vector<int32_t>> sources;
  std::string line, why;
  std::vector<int32_t> ids;
  const int vocab = (*model)->config().source_vocab_size;
  while (std::getline(*in, line)) {
    if (!parse_ids(line, &ids, &why)) return fail("line " + std::to_string(sources.size() + 1) + ": " + why);
    for (int32_t id : ids) {
      if (id >= vocab) {
        return fail("line " + std::to_string(sources.size() + 1) + ": token id " + std::to_string(id) +
                    " is outside the model's vocabulary of " + std::to_string(vocab));
      }
    }
    if (int(ids.size()) + 1 > sopts.max_source_length) {
      return fail("line " + std::to_string(sources.size() + 1) + " has " + std::to_string(ids.size()) +
                  " tokens; the limit is " + std::to_string(sopts.max_source_length - 1) +
                  " (--max-source-length)");
    }
    sources.push_back(ids);
  }
  if (in->bad()) return fail("error reading input");

  auto session = mt::Session::create(model.value(), sopts);
  if (!session) return fail(session.status().message());

  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  std::vector<std::string> outputs(sources.size());
  std::vector<std::span<const int32_t>> batch;
  mt::Translations results;
  const bool progress = isatty(STDERR_FILENO) && sources.size() >= 100;
  const auto start = std::chrono::steady_clock::now();
  size_t target_tokens = 0;
  for (size_t first = 0; first < order.size(); first += size_t(sopts.max_batch_size)) {
    const size_t last = std::min(order.size(), first + size_t(sopts.max_batch_size));
    batch.clear();
    for (size_t i = first; i < last; ++i) batch.push_back(sources[order[i]]);
    const mt::Status status = session->translate(batch, topts, &results);
    if (!status.ok()) return fail(status.message());
    for (size_t i = first; i < last; ++i) {
      const auto hyps = results[i - first];
      std::string& out = outputs[order[i]];
      for (size_t k = 0; k < hyps.size(); ++k) {
        target_tokens += hyps[k].tokens.size();
        if (topts.num_hypotheses > 1) {
          out += std::to_string(order[i]) + " ||| " + join(hyps[k].tokens) + " ||| " +
                 std::to_string(hyps[k].score) + (k + 1 < hyps.size() ? "\n" : "");
        } else {
          out = (scores ? std::to_string(hyps[k].score) + "\t" : std::string()) + join(hyps[k].tokens);
        }
      }
    }
    if (progress) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r%zu/%zu sentences, %.0f target tokens/s", last, order.size(), target_tokens / s);
    }
  }
  if (progress) std::fputc('\n', stderr);
  for (const std::string& out : outputs) {
    std::fputs(out.c_str(), stdout);
    std::fputc('\n', stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : fail("error writing output");
}
