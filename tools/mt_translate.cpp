// mt_translate: translates one sentence per line with a libmt model.
//
//   mt_translate -m model.mtm [--input FILE] [--beam 4] [--nbest 2] [--scores] ...
//
// Text in, text out with the model's own vocabulary; token ids in and out
// (--ids, or a model without a vocabulary) otherwise. Every input line gives
// one output line, in order; an input that cannot be translated stops the
// run with a message naming its line, never a silently missing line.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "guarded_main.hpp"
#include "cli_args.hpp"
#include "mt/mt.hpp"

namespace {

constexpr const char* kUsage = R"(usage: mt_translate -m MODEL [options] < input > output

Translates one sentence per line and writes one line per input line, in the
same order. With a model that carries a vocabulary, lines are UTF-8 text
(invalid bytes are read as U+FFFD, as SentencePiece does); with --ids, or a
model without one, lines are space-separated token ids.

options:
  -m, --model FILE          model file (required)
  -i, --input FILE          read this file instead of standard input
  --ids                     token ids in and out, even if the model has a vocabulary
  --beam N                  beam size, 1 = greedy (default 4)
  --nbest N                 hypotheses per sentence, <= beam; lines "INDEX ||| HYPOTHESIS ||| SCORE" (default 1)
  --scores                  prefix each line with its score and a tab
  --length-penalty A        score = log P / length^A (default 1)
  --max-length N            generated tokens at most (default 256)
  --max-length-ratio R      also at most R x source tokens + --max-length-offset (default off)
  --max-length-offset N     (default 0)
  --min-length N            no EOS before N tokens (default 0)
  --source-language L       multilingual models: the source's language, by its token or the code in it
                            (M2M-100 "en", NLLB "eng_Latn"); `mt_model info` lists language_tokens
  --target-language L       multilingual models: the language to translate into (Marian "fra", M2M-100
                            "fr", NLLB "fra_Latn")
  --max-source-length N     longest source in tokens (default 256)
  --max-line-bytes N        longest input line read, in bytes (default 65536); memory is planned
                            for this, never for the input
  --truncate                cut longer sources (in bytes or tokens) to fit, with a warning naming
                            the line (default: an error naming the line, an empty output line in its
                            place, the other lines translated, and exit code 1)
  --batch-size N            sentences per batch; input is sorted by length into batches (default 16)
  --threads N               threads (default 1)
  --thread-split S          how threads share a batch: layers, sentences or automatic (default:
                            sentences; with a model of 24 MB or more, layers for smaller batches)
  --device cpu|cuda         where the model runs (default cpu; cuda needs libmt built with CUDA and a GPU)
  --gpu N                   which GPU with --device cuda (default 0)
  --tf32                    with --device cuda: GEMMs on TF32 tensor cores (faster, ~1e-3 relative error)
  --fp16                    with --device cuda: weights in half precision, GEMMs on fp16 tensor cores with
                            fp32 sums (half the weight memory, ~1e-3 relative error)
  --cuda-dequantize         with --device cuda and an int8 model: weights dequantized to fp32 and fp32 GEMMs,
                            instead of int8 GEMMs as on the CPU (the default; --cuda-int8 is accepted)
  -h, --help                this text

A progress line (sentences, words/s) goes to standard error when it is a terminal.
Exit codes: 0 all lines translated; 1 any error (a line refused, a bad option, a
model that does not load, out of memory), with one line on standard error each.
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
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    if (p == end) break;
    char* stop = nullptr;
    const long v = std::strtol(p, &stop, 10);
    if (stop == p || (stop < end && *stop != ' ' && *stop != '\t') || v < 0 || v > INT32_MAX) {
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

size_t count_words(const std::string& line) {
  size_t words = 0;
  bool in_word = false;
  for (char c : line) {
    const bool space = c == ' ' || c == '\t';
    words += !space && !in_word;
    in_word = !space;
  }
  return words;
}

// Reads one line (without its newline and a final CR) keeping at most
// `keep` bytes of it; *bytes gets its whole length. False at the end of input.
// Memory is bounded by `keep`, whatever the length of the line.
bool read_line(std::streambuf* in, size_t keep, std::string* line, size_t* bytes) {
  line->clear();
  *bytes = 0;
  bool any = false;
  for (int c = in->sbumpc(); c != std::char_traits<char>::eof(); c = in->sbumpc()) {
    any = true;
    if (c == '\n') break;
    if (line->size() < keep) line->push_back(char(c));
    ++*bytes;
  }
  if (*bytes > 0 && *bytes <= keep && line->back() == '\r') {
    line->pop_back();
    --*bytes;
  }
  return any;
}

// One output line (or n-best block) per input line, whatever the mode.
void format_hypothesis(std::string* out, size_t index, size_t k, size_t count, bool nbest, bool scores,
                       const std::string& text, float score) {
  if (nbest) {
    *out += std::to_string(index) + " ||| " + text + " ||| " + std::to_string(score) + (k + 1 < count ? "\n" : "");
  } else {
    *out = (scores ? std::to_string(score) + "\t" : std::string()) + text;
  }
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, {"--scores", "--ids", "--truncate", "--tf32", "--fp16", "--cuda-int8", "--cuda-dequantize", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.reject_unknown({"-m", "--model", "-i", "--input", "--ids", "--beam", "--nbest", "--scores", "--length-penalty",
                       "--max-length", "--max-length-ratio", "--max-length-offset", "--min-length",
                       "--source-language", "--target-language",
                       "--max-source-length", "--max-line-bytes", "--truncate", "--batch-size", "--threads", "--thread-split", "--device", "--gpu", "--tf32",
                       "--fp16", "--cuda-int8", "--cuda-dequantize"});
  const std::string model_path = args.get("-m", args.get("--model", ""));
  const std::string input_path = args.get("-i", args.get("--input", ""));
  mt::TranslateOptions topts;
  topts.beam_size = args.get_int("--beam", 4, 1, 256);
  topts.num_hypotheses = args.get_int("--nbest", 1, 1, 256);
  topts.length_penalty = args.get_float("--length-penalty", 1.0f, 0.0f, 10.0f);
  const int max_length = args.get_int("--max-length", 256, 1, 65536);
  topts.max_length_ratio = args.get_float("--max-length-ratio", 0.0f, 0.0f, 1000.0f);
  topts.max_length_offset = args.get_int("--max-length-offset", 0, 0, 65536);
  topts.min_decoding_length = args.get_int("--min-length", 0, 0, 65536);
  topts.truncate_long_sources = args.has("--truncate");
  mt::SessionOptions sopts;
  int max_source = args.get_int("--max-source-length", 256, 1, 65536);
  const size_t max_line_bytes = size_t(args.get_int("--max-line-bytes", 65536, 1, 1 << 24));
  sopts.max_batch_size = args.get_int("--batch-size", 16, 1, 4096);
  sopts.num_threads = args.get_int("--threads", 1, 1, 256);
  if (std::string error; !mt::cli::thread_split_option(args, &sopts.thread_split, &error)) return fail(error);
  if (std::string error; !mt::cli::device_options(args, &sopts, &error)) return fail(error);
  const bool scores = args.has("--scores");
  if (!args.ok()) return fail(args.error());
  if (!args.positional().empty()) return fail("unexpected argument '" + args.positional()[0] + "' (see --help)");
  if (model_path.empty()) return fail("a model is required: -m FILE (see --help)");
  if (topts.num_hypotheses > topts.beam_size) return fail("--nbest must not exceed --beam");
  if (topts.min_decoding_length > max_length) return fail("--min-length must not exceed --max-length");

  auto model = mt::Model::load(model_path);
  if (!model) return fail(model.status().message());
  const mt::ModelConfig& config = (*model)->config();
  const bool text_mode = (*model)->vocabulary() != nullptr && !args.has("--ids");
  auto languages = mt::language_prefixes(**model, args.get("--source-language", ""), args.get("--target-language", ""));
  if (!languages) return fail(languages.status().message());
  topts.source_prefix = languages->source_prefix;
  topts.target_prefix = languages->target_prefix;
  // The default follows a model with fewer positions; an explicit value must fit.
  if (!args.has("--max-source-length")) max_source = std::min(max_source, config.max_positions - 1);
  if (max_source + 1 > config.max_positions) {
    return fail("--max-source-length " + std::to_string(max_source) + " exceeds the model's limit of " +
                std::to_string(config.max_positions - 1) + " tokens");
  }
  sopts.max_source_length = max_source + 1;  // + EOS
  sopts.max_target_length = std::min(max_length, config.max_positions);
  sopts.max_beam_size = topts.beam_size;
  topts.max_decoding_length = sopts.max_target_length;

  // Read everything first: output order is input order, batches go by length.
  std::ifstream file;
  std::istream* in = &std::cin;
  if (!input_path.empty()) {
    file.open(input_path, std::ios::binary);
    if (!file) return fail("cannot open '" + input_path + "'");
    in = &file;
  }
  std::vector<std::string> lines;
  std::vector<std::vector<int32_t>> id_lines;
  std::vector<std::string> refused;  // per line: why it was not translated ("" if it was)
  std::string line, why;
  size_t longest = 1, bytes = 0;
  // One byte more than the limit is kept: the session then sees the line is
  // too long and cuts it (--truncate) on a UTF-8 boundary, flagged truncated.
  while (read_line(in->rdbuf(), max_line_bytes + 1, &line, &bytes)) {
    refused.emplace_back();
    if (bytes > max_line_bytes && (!text_mode || !topts.truncate_long_sources)) {
      refused.back() = "line " + std::to_string(lines.size() + 1) + " has " + std::to_string(bytes) +
                       " bytes; --max-line-bytes is " + std::to_string(max_line_bytes) +
                       (text_mode ? " (see --truncate)" : "");
      line.clear();
    }
    longest = std::max(longest, line.size());
    if (!text_mode) {
      std::vector<int32_t> ids;
      if (!parse_ids(line, &ids, &why)) return fail("line " + std::to_string(lines.size() + 1) + ": " + why);
      for (int32_t id : ids) {
        if (id >= config.source_vocab_size) {
          return fail("line " + std::to_string(lines.size() + 1) + ": token id " + std::to_string(id) +
                      " is outside the model's vocabulary of " + std::to_string(config.source_vocab_size));
        }
      }
      id_lines.push_back(std::move(ids));
    }
    lines.push_back(line);
  }
  if (in->bad()) return fail("error reading input");
  // Planned for the lines read, at most --max-line-bytes: longer text is cut (--truncate).
  sopts.max_text_bytes = int(std::min(longest, max_line_bytes));

  auto session = mt::Session::create(model.value(), sopts);
  if (!session) return fail(session.status().message());

  std::vector<size_t> order(lines.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lines[a].size() < lines[b].size(); });
  std::vector<std::string> outputs(lines.size());
  std::vector<std::span<const int32_t>> id_batch;
  std::vector<std::string_view> text_batch;
  mt::Translations id_results;
  mt::TextTranslations text_results;
  const bool nbest = topts.num_hypotheses > 1;
  const bool progress = mt::cli::stderr_is_terminal() && lines.size() >= 100;
  const auto start = std::chrono::steady_clock::now();
  size_t words = 0;
  for (size_t first = 0; first < order.size(); first += size_t(sopts.max_batch_size)) {
    const size_t last = std::min(order.size(), first + size_t(sopts.max_batch_size));
    id_batch.clear();
    text_batch.clear();
    for (size_t i = first; i < last; ++i) {
      if (text_mode) {
        text_batch.push_back(lines[order[i]]);
      } else {
        id_batch.push_back(id_lines[order[i]]);
      }
    }
    const auto translate = [&](size_t from, size_t count) {
      return text_mode ? session->translate_text(std::span(text_batch).subspan(from, count), topts, &text_results)
                       : session->translate(std::span(id_batch).subspan(from, count), topts, &id_results);
    };
    // A sentence the session cannot take (too many tokens) fails the batch:
    // then each is translated alone, and only the one at fault is refused.
    mt::Status status = translate(0, last - first);
    const bool one_by_one = !status.ok() && status.code() == mt::Errc::capacity_exceeded;
    for (size_t i = first; i < last; ++i) {
      if (one_by_one) status = translate(i - first, 1);
      if (!status.ok()) {
        if (status.code() != mt::Errc::capacity_exceeded) return fail(status.message());
        // The message counts sentences within the call: name the input line instead.
        const std::string message = status.message();
        const size_t at = message.find(' ', std::string("sentence ").size());
        refused[order[i]] = "line " + std::to_string(order[i] + 1) +
                            (message.rfind("sentence ", 0) == 0 && at != std::string::npos ? message.substr(at) : ": " + message) +
                            " (see --truncate)";
        continue;
      }
      const size_t index = order[i];
      const size_t j = one_by_one ? 0 : i - first;
      std::string& out = outputs[index];
      const bool truncated = text_mode ? text_results.truncated(j) : id_results.truncated(j);
      if (truncated) std::fprintf(stderr, "mt_translate: warning: line %zu was truncated to fit\n", index + 1);
      if (text_mode) {
        const auto hyps = text_results[j];
        for (size_t k = 0; k < hyps.size(); ++k)
          format_hypothesis(&out, index, k, hyps.size(), nbest, scores, std::string(hyps[k].text), hyps[k].score);
      } else {
        const auto hyps = id_results[j];
        for (size_t k = 0; k < hyps.size(); ++k)
          format_hypothesis(&out, index, k, hyps.size(), nbest, scores, join(hyps[k].tokens), hyps[k].score);
      }
      words += count_words(lines[index]);
    }
    if (progress) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r%zu/%zu sentences, %.0f words/s", last, order.size(), double(words) / s);
    }
  }
  if (progress) std::fputc('\n', stderr);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!refused[i].empty()) outputs[i].clear();  // an empty line holds its place
  }
  for (const std::string& out : outputs) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
  }
  if (std::fflush(stdout) != 0) return fail("error writing output");
  size_t refused_lines = 0;
  for (const std::string& why_refused : refused) {
    if (why_refused.empty()) continue;
    fail(why_refused);
    ++refused_lines;
  }
  if (refused_lines > 0) return fail(std::to_string(refused_lines) + " line(s) not translated (empty lines in their place)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return mt::cli::guarded_main("mt_translate", argc, argv, run,
                               "lower --batch-size, --threads, --beam, --max-line-bytes or --max-source-length");
}
