// mt_translate: translates one sentence per line with a libmt model.
//
//   mt_translate -m model.mtm [-i FILE] [-o FILE] [--beam 4] [--nbest 2] [--scores] ...
//
// Text in, text out with the model's own vocabulary; token ids in and out
// (--ids, or a model without a vocabulary) otherwise. Every input line gives
// one output line, in order, written as soon as its window of lines is
// translated: a failure later in the input never loses earlier lines, and a
// terminal on standard input gets each line back as it is typed.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_files.hpp"
#include "guarded_main.hpp"
#include "paragraph_reader.hpp"
#include "mt/mt.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_translate";

constexpr Option kOptions[] = {
    {"--model", "-m", "FILE", "model file (required)", false, "--models"},
    {"--input", "-i", "FILE", "read this file instead of standard input (- : standard input)"},
    {"--output", "-o", "FILE", "write to this file instead of standard output (- : standard output)"},
    {"--ids", nullptr, nullptr,
     "token ids in and out, even if the model has a vocabulary; the model's EOS is\n"
     "added to each source (do not write it)"},
    {"--beam", nullptr, "N", "beam size, 1 = greedy (default 4)", false, "--beam-size -b --beam_size"},
    {"--nbest", nullptr, "N",
     "hypotheses per sentence, <= --beam (default 1); each on its own line,\n"
     "\"INDEX ||| TEXT\" (INDEX: the input line, from 0; with --scores\n"
     "\"INDEX ||| TEXT ||| SCORE\")",
     false, "--n-best --num-hypotheses --num_hypotheses"},
    {"--nbest-format", nullptr, "F",
     "libmt (above) or marian: \"INDEX ||| TEXT ||| F0= LOGPROB ||| SCORE\", as\n"
     "Marian and Moses write them, scores always (default libmt)"},
    {"--scores", nullptr, nullptr,
     "the scores too: each line prefixed with its score and a tab; with --nbest,\n"
     "the SCORE field (SCORE: log P / length^A, see --length-penalty)"},
    {"--length-penalty", nullptr, "A", "score = log P / length^A (default 1)", false,
     "--normalize -n --length_penalty"},
    {"--max-length", nullptr, "N", "generated tokens at most (default 256)", false, "--max_decoding_length"},
    {"--max-length-ratio", nullptr, "R", "also at most R x source tokens + --max-length-offset (default off)", false,
     "--max-length-factor"},
    {"--max-length-offset", nullptr, "N", "(default 0)"},
    {"--min-length", nullptr, "N", "no EOS before N tokens (default 0)", false, "--min_decoding_length"},
    {"--source-language", nullptr, "L",
     "multilingual models: the source's language, by its token or the code in it\n"
     "(M2M-100 \"en\", NLLB \"eng_Latn\"); `mt_model info` lists language_tokens"},
    {"--target-language", nullptr, "L",
     "multilingual models: the language to translate into (Marian \"fra\", M2M-100\n"
     "\"fr\", NLLB \"fra_Latn\")"},
    {"--max-source-length", nullptr, "N",
     "longest source in tokens (default 256, or the model's limit if lower);\n"
     "a longer one is cut to fit with a warning naming its line (see --strict)",
     false, "--max-input-length --max_input_length"},
    {"--max-line-bytes", nullptr, "N",
     "longest input line read, in bytes (default 65536); longer ones are cut\n"
     "like long sources. Memory is planned for this, never for the input"},
    {"--strict", nullptr, nullptr,
     "a line longer than --max-source-length or --max-line-bytes is an error naming\n"
     "it (an empty line in its place, the others translated, exit code 1)"},
    {"--truncate", nullptr, nullptr, "cut long lines to fit, with a warning (the default)", false, "--max-length-crop"},
    {"--batch-size", nullptr, "N",
     "sentences per batch; lines are read in windows of 8 batches, sorted by length\n"
     "into batches, translated and written in input order (default 16)",
     false, "--mini-batch --max_batch_size"},
    {"--threads", nullptr, "N", "threads (default 1, as every tool)", false,
     "--cpu-threads --intra-threads --intra_threads"},
    {"--stream", nullptr, nullptr,
     "when standard output is a terminal, show each translation's words as they\n"
     "come (one line at a time); elsewhere the output is the same without it"},
    {"--cache-size", nullptr, "N",
     "keep the translations of the last N distinct sentences (1 KiB each) and\n"
     "give a repeated sentence its earlier translation without decoding it"},
    {"--paragraphs", nullptr, "MODE",
     "translate running text instead of one sentence per line: split into\n"
     "sentences, each translated, every byte between them kept. MODE: lines (each\n"
     "line a paragraph) or wrapped (a single line feed is a space, a blank line\n"
     "ends a paragraph). Long sentences are translated in pieces"},
    {"--prefixes", nullptr, "FILE",
     "--paragraphs: the words after which a period does not end a sentence, one\n"
     "per line (\"#NUMERIC_ONLY#\" after one that holds only before a number);\n"
     "default: the model's own list, or libmt's for its source language"},
    {"--prefix-language", nullptr, "L", "--paragraphs: libmt's list for language L (en, de, fr, cs, es)"},
    {"--score", nullptr, "FILE",
     "score translations instead of translating: line i of FILE as the translation\n"
     "of input line i; writes \"SCORE<TAB>LOGPROB<TAB>TOKEN LOGPROBS\" per line\n"
     "(log P of each token, EOS last; SCORE: see --length-penalty)"},
    {"--prefix", nullptr, "FILE",
     "line i of FILE starts line i's translation (an empty line: no prefix); its\n"
     "tokens are scored as the model scores them"},
    {"--alternatives", nullptr, "N",
     "N translations per line whose first word after --prefix differs: the N most\n"
     "probable next tokens, each completed greedily; written as --nbest writes them"},
    {"--quality", nullptr, nullptr,
     "word quality scores: each translation followed by \"<TAB>QUALITY<TAB>SCORES\",\n"
     "one score per word (the mean log-probability of its tokens; low: doubtful)\n"
     "and QUALITY their mean (with --nbest: \" ||| QUALITY ||| SCORES\")"},
    {"--alignments", nullptr, nullptr,
     "word alignments: each translation followed by \" ||| \" and the pairs S-T of\n"
     "the source and target words (counted from 0, split at spaces) whose tokens the\n"
     "attention links, as Marian and Moses write them"},
    {"--format", nullptr, "F",
     "text (default) or html: the whole input is one HTML document, written back\n"
     "with its tags, the text between them translated, inline tags (<b>, <a>, ...)\n"
     "moved with the words they wrap (docs/html.md)"},
    {"--no-repeat-ngram-size", nullptr, "N", "no N tokens in a row occur twice in a translation (default off)"},
    {"--repetition-penalty", nullptr, "P",
     "P > 1: tokens a translation already has are less likely (default 1: off)"},
    {"--shortlist", nullptr, nullptr,
     "translate each line over the model's vocabulary shortlist (mt_shortlist build):\n"
     "the default when the model has one; an error when it has none"},
    {"--no-shortlist", nullptr, nullptr, "translate over the whole vocabulary even when the model has a shortlist"},
    {"--thread-split", nullptr, "S",
     "how threads share a batch: layers, sentences or automatic (default:\n"
     "sentences; with a model of 24 MB or more, layers for smaller batches)"},
};

constexpr const char* kSynopsis = R"(usage: mt_translate -m MODEL [options] [-i INPUT] [-o OUTPUT]

Translates one sentence per line and writes one line per input line, in the
same order, as it goes. With a model that carries a vocabulary, lines are
UTF-8 text (invalid bytes are read as U+FFFD, as SentencePiece does); with
--ids, or a model without one, lines are space-separated token ids. On a
terminal each line is translated as soon as it is typed.)";

constexpr const char* kEpilog = R"(A progress line (sentences, words/s) goes to standard error when it is a terminal.
Exit codes: 0 every line translated; 1 a line refused (an empty line in its
place, the others translated) or a failure (a model that does not load, out
of memory); 2 a usage error. Each problem is one line on standard error.
)";

// Windows of this many batches are sorted by length (fewer padded steps)
// and written before the next is read.
constexpr size_t kBatchesPerWindow = 8;
// ... and of at most this many bytes of text, whatever --max-line-bytes is.
constexpr size_t kWindowBytes = size_t(16) << 20;

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

// Parses "12 7 5" into ids; false with a reason on anything else.
bool parse_ids(const std::string& line, int vocab, std::vector<int32_t>* ids, std::string* why) {
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
    if (v >= vocab) {
      *why = "token id " + std::to_string(v) + " is outside the model's vocabulary of " + std::to_string(vocab);
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

struct Settings {
  mt::TranslateOptions topts;
  mt::SessionOptions sopts;
  bool text_mode = true, strict = false, scores = false, marian_nbest = false;
  bool stream = false;   // --stream to a terminal: tokens written as they come
  bool score = false;    // --score: the second file's lines are scored
  bool prefix = false;   // --prefix: the second file's lines start the translations
  bool quality = false;  // --quality
  bool alignments = false;  // --alignments
  int max_source = 256;  // tokens, as the user counts them (EOS not included)
  size_t max_line_bytes = 65536;
};

// One input line of the current window.
struct Line {
  size_t number = 0;  // 1-based, in the whole input
  std::string text;
  std::vector<int32_t> ids;
  std::string refused;  // why it is not translated ("" if it is)
  std::string output;
  // --score's target or --prefix's prefix: text, or ids with --ids.
  std::string second;
  std::vector<int32_t> second_ids;
};

// The session, created for the first window and again when a window needs
// more (more sentences, longer lines), up to what the options allow.
class SessionHolder {
 public:
  SessionHolder(std::shared_ptr<const mt::Model> model, const Settings& s) : model_(std::move(model)), s_(s) {}

  // A session for `sentences` lines of at most `bytes` bytes; "" or why not.
  std::string prepare(size_t sentences, size_t bytes) {
    mt::SessionOptions o = s_.sopts;
    o.max_batch_size = int(std::min<size_t>(size_t(s_.sopts.max_batch_size), std::max<size_t>(sentences, 1)));
    size_t planned_bytes = 256;  // powers of two: few re-creations for a growing line length
    while (planned_bytes < bytes) planned_bytes *= 2;
    // (At least a character's 4 bytes, the session's minimum; the line limit is checked on reading.)
    o.max_text_bytes = int(std::max<size_t>(4, std::min(planned_bytes, s_.max_line_bytes)));
    if (session_ && o.max_batch_size <= session_->options().max_batch_size &&
        o.max_text_bytes <= session_->options().max_text_bytes) {
      return "";
    }
    if (session_) {  // grow to the larger of the two
      o.max_batch_size = std::max(o.max_batch_size, session_->options().max_batch_size);
      o.max_text_bytes = std::max(o.max_text_bytes, session_->options().max_text_bytes);
    }
    session_.reset();
    auto created = mt::Session::create(model_, o);
    if (!created) {
      std::string why = created.status().message();
      if (created.status().code() == mt::Errc::out_of_memory) {
        why += "; lower --batch-size (" + std::to_string(s_.sopts.max_batch_size) + "), --beam (" +
               std::to_string(s_.topts.beam_size) + "), --max-length (" + std::to_string(s_.sopts.max_target_length) +
               ") or --max-source-length (" + std::to_string(s_.max_source) + ")";
      }
      return why;
    }
    session_.emplace(std::move(created.value()));
    return "";
  }
  mt::Session& get() { return *session_; }

 private:
  std::shared_ptr<const mt::Model> model_;
  const Settings& s_;
  std::optional<mt::Session> session_;
};

// "line 41 has 800 tokens; --max-source-length is 256" from the session's
// "sentence 0 has 800 tokens; the session allows ..." (or its own words).
std::string refusal(const Settings& s, size_t number, const std::string& message) {
  const size_t has = message.find(" has ");
  const size_t tokens = message.find(" tokens;");
  if (message.rfind("sentence ", 0) == 0 && has != std::string::npos && tokens != std::string::npos && tokens > has) {
    return "line " + std::to_string(number) + " has " + message.substr(has + 5, tokens - has - 5) +
           " tokens; --max-source-length is " + std::to_string(s.max_source) +
           (s.topts.source_prefix.empty() ? "" : " (the language token included)");
  }
  return "line " + std::to_string(number) + ": " + message;
}

// The index of the space-separated word of `text` at or after byte `at`.
size_t word_index(std::string_view text, size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  size_t words = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    const bool space = text[i] == ' ' || text[i] == '\t';
    const bool next_word = i + 1 < text.size() && text[i + 1] != ' ' && text[i + 1] != '\t';
    words += space && next_word && i + 1 <= at;
  }
  return words;
}

// --alignments: "S-T ..." of the words each target token's strongest source token links.
std::string word_alignment(const mt::TextHypothesis& h, std::string_view source,
                           std::span<const mt::ByteRange> source_ranges) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t t = 0; t < h.tokens.size() && t < h.alignment.rows; ++t) {
    const mt::ByteRange s = source_ranges[h.alignment.argmax(t)];
    const mt::ByteRange target = h.token_ranges[t];
    if (s.begin == s.end || target.begin == target.end) continue;  // a prefix id or EOS; a control token
    pairs.emplace_back(word_index(source, s.begin), word_index(h.text, target.begin));
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::string out;
  for (const auto& [s, t] : pairs) out += (out.empty() ? "" : " ") + std::to_string(s) + "-" + std::to_string(t);
  return out;
}

// --quality's QUALITY and word scores of a text hypothesis.
std::pair<std::string, std::string> quality_fields(const mt::TextHypothesis& h) {
  std::string words;
  for (const mt::WordScore& w : h.words) words += (words.empty() ? "" : " ") + std::to_string(w.score);
  return {std::to_string(h.quality), words};
}

void format_hypothesis(const Settings& s, std::string* out, size_t index, size_t k, size_t count,
                       const std::string& text, const mt::TextHypothesis* th, const mt::Hypothesis* h,
                       std::string_view source = {}, std::span<const mt::ByteRange> source_ranges = {}) {
  const float score = th != nullptr ? th->score : h->score;
  const float log_prob = th != nullptr ? th->log_prob : h->log_prob;
  if (s.score) {  // SCORE, LOGPROB, each token's log-probability
    *out = std::to_string(score) + "\t" + std::to_string(log_prob) + "\t";
    const std::span<const float> values = th != nullptr ? th->token_log_probs : h->token_log_probs;
    for (size_t i = 0; i < values.size(); ++i) *out += (i ? " " : "") + std::to_string(values[i]);
    return;
  }
  if (s.topts.num_hypotheses > 1) {
    *out += std::to_string(index) + " ||| " + text;
    if (s.marian_nbest) *out += " ||| F0= " + std::to_string(log_prob);
    if (s.marian_nbest || s.scores) *out += " ||| " + std::to_string(score);
    if (s.quality && th != nullptr) {
      const auto [quality, words] = quality_fields(*th);
      *out += " ||| " + quality + " ||| " + words;
    }
    if (s.alignments && th != nullptr) *out += " ||| " + word_alignment(*th, source, source_ranges);
    if (k + 1 < count) *out += "\n";
  } else {
    *out = (s.scores ? std::to_string(score) + "\t" : std::string()) + text;
    if (s.quality && th != nullptr) {
      const auto [quality, words] = quality_fields(*th);
      *out += "\t" + quality + "\t" + words;
    }
    if (s.alignments && th != nullptr) *out += " ||| " + word_alignment(*th, source, source_ranges);
  }
}

// What a refused line writes: an empty line, or with --nbest the asked
// number of empty hypotheses (so every input has --nbest lines).
std::string empty_output(const Settings& s, size_t index) {
  if (s.topts.num_hypotheses == 1) return "";
  std::string out;
  for (int k = 0; k < s.topts.num_hypotheses; ++k) {
    out += std::to_string(index) + " ||| ";
    if (s.marian_nbest) out += " ||| F0= 0.000000";
    if (s.marian_nbest || s.scores) out += " ||| 0.000000";
    if (k + 1 < s.topts.num_hypotheses) out += "\n";
  }
  return out;
}

// Translates the window's lines (refused ones excepted) into their `output`.
// Returns "" or a failure that ends the run.
std::string translate_window(const Settings& s, SessionHolder& holder, std::vector<Line>& lines) {
  std::vector<size_t> order;
  size_t longest = 1;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].refused.empty()) continue;
    order.push_back(i);
    longest = std::max(longest, lines[i].text.size());
  }
  if (order.empty()) return "";
  if (std::string why = holder.prepare(order.size(), longest); !why.empty()) return why;
  mt::Session& session = holder.get();
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lines[a].text.size() < lines[b].text.size(); });
  const size_t batch = size_t(session.options().max_batch_size);
  std::vector<std::span<const int32_t>> id_batch, second_ids;
  std::vector<std::string_view> text_batch, second_texts;
  mt::Translations id_results;
  mt::TextTranslations text_results;
  for (size_t first = 0; first < order.size(); first += batch) {
    const size_t last = std::min(order.size(), first + batch);
    id_batch.clear();
    text_batch.clear();
    second_ids.clear();
    second_texts.clear();
    for (size_t i = first; i < last; ++i) {
      text_batch.push_back(lines[order[i]].text);
      id_batch.push_back(lines[order[i]].ids);
      second_texts.push_back(lines[order[i]].second);
      second_ids.push_back(lines[order[i]].second_ids);
    }
    const auto translate = [&](size_t from, size_t count) {
      const auto texts = std::span(text_batch).subspan(from, count);
      const auto ids = std::span(id_batch).subspan(from, count);
      const auto other_texts = std::span(second_texts).subspan(from, count);
      const auto other_ids = std::span(second_ids).subspan(from, count);
      if (s.score) {
        return s.text_mode ? session.score_text(texts, other_texts, s.topts, &text_results)
                           : session.score(ids, other_ids, s.topts, &id_results);
      }
      mt::TranslateOptions o = s.topts;
      if (s.prefix && s.text_mode) o.text_prefixes = other_texts;
      if (s.prefix && !s.text_mode) o.prefixes = other_ids;
      return s.text_mode ? session.translate_text(texts, o, &text_results) : session.translate(ids, o, &id_results);
    };
    // A sentence the session cannot take (--strict) fails the batch: then
    // each is translated alone, and only the one at fault is refused.
    mt::Status status = translate(0, last - first);
    // So does a target or prefix the session refuses (--score, --prefix).
    const bool line_fault = !status.ok() && (status.code() == mt::Errc::capacity_exceeded ||
                                             ((s.score || s.prefix) && status.code() == mt::Errc::invalid_argument));
    const bool one_by_one = line_fault;
    for (size_t i = first; i < last; ++i) {
      Line& line = lines[order[i]];
      if (one_by_one) status = translate(i - first, 1);
      if (!status.ok()) {
        if (status.code() == mt::Errc::invalid_argument && (s.score || s.prefix)) {
          line.refused = "line " + std::to_string(line.number) + ": " + status.message();
          continue;
        }
        if (status.code() != mt::Errc::capacity_exceeded) return status.message();
        line.refused = refusal(s, line.number, status.message()) + " (--strict)";
        continue;
      }
      const size_t j = one_by_one ? 0 : i - first;
      const bool truncated = s.text_mode ? text_results.truncated(j) : id_results.truncated(j);
      if (truncated) {
        mt::cli::warn(kTool, "line " + std::to_string(line.number) + " was truncated to fit --max-source-length " +
                                 std::to_string(s.max_source) + " (tokens) and --max-line-bytes " +
                                 std::to_string(s.max_line_bytes));
      }
      const size_t index = line.number - 1;
      bool nothing = false;  // a source with no tokens (empty, blank): one empty hypothesis
      if (s.text_mode) {
        const auto hyps = text_results[j];
        for (size_t k = 0; k < hyps.size(); ++k)
          format_hypothesis(s, &line.output, index, k, hyps.size(), std::string(hyps[k].text), &hyps[k], nullptr,
                            line.text, text_results.source_ranges(j));
        nothing = hyps.size() == 1 && hyps[0].text.empty() && hyps[0].score == 0.0f;
      } else {
        const auto hyps = id_results[j];
        for (size_t k = 0; k < hyps.size(); ++k)
          format_hypothesis(s, &line.output, index, k, hyps.size(), join(hyps[k].tokens), nullptr, &hyps[k]);
        nothing = line.ids.empty();
      }
      // --nbest N gives every input N lines, an empty source too.
      if (nothing) line.output = empty_output(s, index);
    }
  }
  return "";
}

// The output file as a sink, counting sentences; flushed after each sentence
// when a person is reading.
class FileSink final : public mt::ParagraphSink {
 public:
  FileSink(std::FILE* file, bool flush_each) : file_(file), flush_each_(flush_each) {}
  mt::Status write(std::string_view bytes) override {
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
      return mt::Status::error(mt::Errc::io_error, "error writing the output");
    return {};
  }
  mt::Status sentence(const mt::TranslatedSentence& s) override {
    ++sentences;
    pieces += s.pieces > 1;
    if (flush_each_ && std::fflush(file_) != 0)
      return mt::Status::error(mt::Errc::io_error, "error writing the output");
    return {};
  }
  size_t sentences = 0, pieces = 0;

 private:
  std::FILE* file_;
  bool flush_each_;
};

// --paragraphs: windows of whole paragraphs, each translated and written
// before the next is read.
// --format html: the whole input, one document.
int run_html(const Settings& s, const std::shared_ptr<const mt::Model>& model, mt::cli::Input& input,
             mt::cli::Output& output) {
  std::string document;
  constexpr size_t kMaxDocument = size_t(64) << 20;
  char buffer[1 << 16];
  while (input.stream()->read(buffer, sizeof(buffer)) || input.stream()->gcount() > 0) {
    document.append(buffer, size_t(input.stream()->gcount()));
    if (document.size() > kMaxDocument) return fail(input.name() + " is larger than 64 MiB: split the document");
  }
  if (input.stream()->bad()) return fail("error reading " + input.name());
  mt::SessionOptions o = s.sopts;
  o.max_text_bytes = 4096;  // longer sentences in pieces
  o.alignments = true;
  auto session = mt::Session::create(model, o);
  if (!session) return fail(session.status().message());
  mt::ParagraphOptions po;
  po.format = mt::TextFormat::html;
  FileSink sink(output.file(), false);
  if (mt::Status st = session->translate_paragraphs(document, po, s.topts, &sink); !st.ok()) return fail(st.message());
  if (std::fflush(output.file()) != 0) return fail("error writing " + output.name());
  return 0;
}

int run_paragraphs(const Settings& s, mt::cli::Args& args, const std::shared_ptr<const mt::Model>& model,
                   mt::cli::Input& input, mt::cli::Output& output, bool interactive) {
  const mt::SplitMode mode = args.get("--paragraphs", "") == "wrapped" ? mt::SplitMode::wrapped : mt::SplitMode::lines;
  std::optional<mt::NonBreakingPrefixes> prefixes;
  if (args.has("--prefixes")) {
    std::string list, why;
    if (!mt::cli::read_file(args.get("--prefixes", ""), &list, &why)) return fail(why);
    auto parsed = mt::NonBreakingPrefixes::parse(list);
    if (!parsed) return fail(args.get("--prefixes", "") + ": " + parsed.status().message());
    prefixes = std::move(parsed.value());
  } else if (args.has("--prefix-language")) {
    auto builtin = mt::NonBreakingPrefixes::builtin(args.get("--prefix-language", ""));
    if (!builtin) return fail(builtin.status().message());
    prefixes = std::move(builtin.value());
  }
  mt::ParagraphOptions po;
  po.mode = mode;
  po.prefixes = prefixes ? &*prefixes : nullptr;
  // Sentences longer than this are translated in pieces: memory stays small.
  mt::SessionOptions o = s.sopts;
  o.max_text_bytes = 4096;
  auto session = mt::Session::create(model, o);
  if (!session) return fail(session.status().message());
  const size_t window = interactive ? 1 : size_t(64) << 10;
  mt::cli::ParagraphReader reader(input.stream()->rdbuf(), mode, window, size_t(16) << 20);
  FileSink sink(output.file(), interactive);
  std::string text;
  while (reader.next(&text)) {
    if (reader.cut()) mt::cli::warn(kTool, "a line of more than 16 MiB was cut between two words");
    if (mt::Status st = session->translate_paragraphs(text, po, s.topts, &sink); !st.ok()) return fail(st.message());
    if (std::fflush(output.file()) != 0) return fail("error writing " + output.name());
  }
  if (input.stream()->bad()) return fail("error reading " + input.name());
  if (sink.pieces > 0 && !interactive) {
    mt::cli::warn(kTool,
                  std::to_string(sink.pieces) + " sentence(s) longer than the model takes were translated in pieces");
  }
  return 0;
}

int run(int argc, char** argv) {
  std::vector<Option> options(std::begin(kOptions), std::end(kOptions));
  for (const Option& o : mt::cli::device_option_table()) options.push_back(o);
  mt::cli::Args args(argc, argv, options);
  const std::string help = mt::cli::help_text(kSynopsis, options, kEpilog);
  if (const int rc = mt::cli::standard_options(kTool, args, help); rc >= 0) return rc;

  Settings s;
  mt::TranslateOptions& topts = s.topts;
  mt::SessionOptions& sopts = s.sopts;
  topts.beam_size = args.get_int("--beam", 4, 1, 256);
  topts.num_hypotheses = args.get_int("--nbest", 1, 1, 256);
  topts.length_penalty = args.get_float("--length-penalty", 1.0f, 0.0f, 10.0f);
  const int max_length = args.get_int("--max-length", 256, 1, 65536);
  topts.max_length_ratio = args.get_float("--max-length-ratio", 0.0f, 0.0f, 1000.0f);
  topts.max_length_offset = args.get_int("--max-length-offset", 0, 0, 65536);
  topts.min_decoding_length = args.get_int("--min-length", 0, 0, 65536);
  s.strict = args.has("--strict");
  topts.truncate_long_sources = !s.strict;
  s.max_source = args.get_int("--max-source-length", 256, 1, 65536);
  s.max_line_bytes = size_t(args.get_int("--max-line-bytes", 65536, 1, 1 << 24));
  sopts.max_batch_size = args.get_int("--batch-size", 16, 1, 4096);
  sopts.num_threads = args.get_int("--threads", 1, 1, 256);
  mt::cli::thread_split_option(args, &sopts.thread_split);
  mt::cli::device_options(args, &sopts);
  s.scores = args.has("--scores");
  s.score = args.has("--score");
  s.prefix = args.has("--prefix");
  s.quality = args.has("--quality");
  s.alignments = args.has("--alignments");
  const int alternatives = args.get_int("--alternatives", 0, 1, 256);
  topts.no_repeat_ngram_size = args.get_int("--no-repeat-ngram-size", 0, 1, 65536);
  topts.repetition_penalty = args.get_float("--repetition-penalty", 1.0f, 1.0f, 100.0f);
  s.marian_nbest = args.get_choice("--nbest-format", {"libmt", "marian"}, "libmt") == "marian";
  if (!args.ok()) return usage(args.error());
  if (!args.positional().empty()) return usage("unexpected argument '" + args.positional()[0] + "'");
  if (!args.has("--model")) return usage("a model is required: -m FILE");
  if (s.strict && args.has("--truncate")) return usage("--strict and --truncate: choose one");
  if (topts.num_hypotheses > topts.beam_size) return usage("--nbest must not exceed --beam");
  if (args.has("--nbest-format") && topts.num_hypotheses == 1)
    return usage("--nbest-format applies to --nbest 2 or more");
  if (topts.min_decoding_length > max_length) return usage("--min-length must not exceed --max-length");
  const bool paragraphs = args.has("--paragraphs");
  const bool html = args.get_choice("--format", {"text", "html"}, "text") == "html";
  if (html && (paragraphs || args.has("--stream") || args.has("--nbest") || s.scores || args.has("--score") ||
               args.has("--prefix") || args.has("--alternatives") || args.has("--quality") ||
               args.has("--alignments") || args.has("--ids") || args.has("--cache-size")))
    return usage("--format html writes the document back: no --paragraphs, --stream, --nbest, --scores, --score, "
                 "--prefix, --alternatives, --quality, --alignments, --ids or --cache-size");
  if (s.score && s.prefix) return usage("--score and --prefix: choose one");
  if (s.score && (args.has("--nbest") || args.has("--alternatives") || args.has("--stream") || paragraphs))
    return usage("--score writes one line of scores per input line: no --nbest, --alternatives, --stream or --paragraphs");
  if ((s.prefix || args.has("--alternatives")) && paragraphs)
    return usage("--prefix and --alternatives belong to single sentences: no --paragraphs");
  if (args.has("--alternatives")) {
    if (args.has("--nbest") || args.has("--beam"))
      return usage("--alternatives N gives N translations, each completed greedily: no --nbest or --beam");
    topts.alternatives = topts.beam_size = topts.num_hypotheses = alternatives;
  }
  if (s.quality && (paragraphs || args.has("--stream"))) return usage("--quality writes whole lines: no --paragraphs or --stream");
  if (args.has("--alignments") && (paragraphs || args.has("--stream") || s.score))
    return usage("--alignments writes whole lines: no --paragraphs, --stream or --score");
  const int cache_size = args.get_int("--cache-size", 0, 1, 1 << 24);
  if (!args.ok()) return usage(args.error());
  if (args.has("--stream")) {
    if (topts.num_hypotheses > 1 || s.scores) return usage("--stream writes text as it comes: no --nbest or --scores");
    if (paragraphs) return usage("--stream and --paragraphs: choose one (for now)");
    if (args.has("--ids")) return usage("--stream shows text, not --ids");
  }
  if (paragraphs) {
    args.get_choice("--paragraphs", {"lines", "wrapped"}, "lines");
    if (!args.ok()) return usage(args.error());
    if (args.has("--ids")) return usage("--paragraphs translates text, not --ids");
    if (topts.num_hypotheses > 1 || s.scores) return usage("--paragraphs writes text: no --nbest or --scores");
    if (s.strict) return usage("--paragraphs translates long sentences in pieces: no --strict");
    if (args.has("--prefixes") && args.has("--prefix-language"))
      return usage("--prefixes and --prefix-language: choose one");
  } else if (args.has("--prefixes") || args.has("--prefix-language")) {
    return usage("--prefixes and --prefix-language apply to --paragraphs");
  }

  auto model = mt::Model::load(args.get("--model", ""));
  if (!model) return fail(model.status().message());
  const mt::ModelConfig& config = (*model)->config();
  s.text_mode = (*model)->vocabulary() != nullptr && !args.has("--ids");
  auto languages = mt::language_prefixes(**model, args.get("--source-language", ""), args.get("--target-language", ""));
  if (!languages) return fail(languages.status().message());
  topts.source_prefix = languages->source_prefix;
  topts.target_prefix = languages->target_prefix;
  // The default follows a model with fewer positions; an explicit value must fit.
  if (!args.has("--max-source-length")) s.max_source = std::min(s.max_source, config.max_positions - 1);
  if (s.max_source + 1 > config.max_positions) {
    return usage("--max-source-length " + std::to_string(s.max_source) + " exceeds the model's limit of " +
                 std::to_string(config.max_positions - 1) + " tokens");
  }
  sopts.max_source_length = s.max_source + 1;  // + EOS
  sopts.max_target_length = std::min(max_length, config.max_positions);
  sopts.max_beam_size = topts.beam_size;  // --alternatives N: N
  topts.max_decoding_length = sopts.max_target_length;

  mt::cli::Input input(args.get("--input", ""));
  if (input.stream() == nullptr) return fail(input.error());
  mt::cli::Output output(args.get("--output", ""));
  if (output.file() == nullptr) return fail(output.error());
  // A person typing: each line as soon as it is entered.
  const bool interactive = input.is_stdin() && mt::cli::stdin_is_terminal();
  std::shared_ptr<mt::TranslationCache> cache;
  if (cache_size > 0) {
    auto created = mt::TranslationCache::create({size_t(cache_size), 0});
    if (!created) return fail(created.status().message());
    cache = std::move(created.value());
    topts.cache = cache.get();
  }
  if (s.quality && !s.text_mode) return usage("--quality scores words of text: not with --ids");
  if (s.alignments && !s.text_mode) return usage("--alignments links words of text: not with --ids");
  sopts.quality_scores = s.quality;
  sopts.alignments = s.alignments;
  if (args.has("--shortlist") && args.has("--no-shortlist")) return usage("--shortlist and --no-shortlist: choose one");
  if (args.has("--shortlist") && (*model)->shortlist() == nullptr)
    return fail(args.get("--model", "") + " has no vocabulary shortlist (mt_shortlist build gives it one)");
  sopts.shortlist = !args.has("--no-shortlist");
  if (s.alignments && cache_size > 0) return usage("--alignments and --cache-size: choose one (cached lines hold no alignments)");
  std::optional<mt::cli::Input> second;  // --score's or --prefix's file
  if (s.score || s.prefix) {
    second.emplace(args.get(s.score ? "--score" : "--prefix", ""));
    if (second->stream() == nullptr) return fail(second->error());
    if (second->is_stdin() && input.is_stdin()) return usage("the input and the --score/--prefix file cannot both be standard input");
  }
  if (html) {
    if (!s.text_mode) return fail("--format html needs a model with a vocabulary");
    return run_html(s, model.value(), input, output);
  }
  if (paragraphs) {
    if (!s.text_mode) return fail("--paragraphs needs a model with a vocabulary");
    return run_paragraphs(s, args, model.value(), input, output, interactive);
  }
  // --stream: one line at a time, each token's text written and flushed as
  // it comes; the line's translation is then already written.
  s.stream = args.has("--stream") && s.text_mode && output.is_stdout() && mt::cli::stdout_is_terminal();
  const auto show = [&](const mt::TokenEvent& e) {
    std::fwrite(e.text.data(), 1, e.text.size(), output.file());
    std::fflush(output.file());
    return false;
  };
  if (s.stream) {
    topts.on_token = mt::TokenCallback::of(show);
    sopts.max_batch_size = 1;
  }
  const size_t window_lines = interactive || s.stream ? 1 : size_t(sopts.max_batch_size) * kBatchesPerWindow;
  const bool progress = mt::cli::stderr_is_terminal() && !interactive;

  SessionHolder holder(model.value(), s);
  std::vector<Line> window;
  size_t number = 0, refused = 0, words = 0;
  const auto start = std::chrono::steady_clock::now();
  std::string text, why;
  size_t bytes = 0;
  bool more = true;
  while (more) {
    window.clear();
    size_t window_bytes = 0;
    // One byte more than the limit is kept: the session then sees the line
    // is too long and cuts it on a UTF-8 boundary, flagged truncated.
    while (window.size() < window_lines && window_bytes < kWindowBytes &&
           (more = read_line(input.stream()->rdbuf(), s.max_line_bytes + 1, &text, &bytes))) {
      Line& line = window.emplace_back();
      line.number = ++number;
      window_bytes += text.size();
      if (bytes > s.max_line_bytes && (!s.text_mode || s.strict)) {
        line.refused = "line " + std::to_string(line.number) + " has " + std::to_string(bytes) +
                       " bytes; --max-line-bytes is " + std::to_string(s.max_line_bytes) +
                       (s.text_mode ? " (--strict)" : "");
        continue;
      }
      if (!s.text_mode && !parse_ids(text, config.source_vocab_size, &line.ids, &why)) {
        line.refused = "line " + std::to_string(line.number) + ": " + why;
        continue;
      }
      line.text = std::move(text);
    }
    // --score, --prefix: the other file's line for each input line.
    for (Line& line : window) {
      if (!second) break;
      std::string other;
      size_t other_bytes = 0;
      const char* what = s.score ? "--score" : "--prefix";
      if (!read_line(second->stream()->rdbuf(), s.max_line_bytes, &other, &other_bytes)) {
        return fail(second->name() + " (" + what + ") has fewer lines than the input: none for line " +
                    std::to_string(line.number));
      }
      if (!line.refused.empty()) continue;
      if (other_bytes > s.max_line_bytes) {
        line.refused = "line " + std::to_string(line.number) + " of " + second->name() + " has " +
                       std::to_string(other_bytes) + " bytes; --max-line-bytes is " + std::to_string(s.max_line_bytes);
      } else if (!s.text_mode && !parse_ids(other, config.target_vocab_size, &line.second_ids, &why)) {
        line.refused = "line " + std::to_string(line.number) + " of " + second->name() + ": " + why;
      } else {
        line.second = std::move(other);
      }
    }
    if (input.stream()->bad()) return fail("error reading " + input.name());
    if (window.empty()) break;
    if (std::string failure = translate_window(s, holder, window); !failure.empty()) return fail(failure);
    for (Line& line : window) {
      if (!line.refused.empty()) {
        mt::cli::fail(kTool, line.refused);
        ++refused;
        line.output = empty_output(s, line.number - 1);
      }
      words += count_words(line.text);
      if (!s.stream || !line.refused.empty()) std::fwrite(line.output.data(), 1, line.output.size(), output.file());
      std::fputc('\n', output.file());
    }
    if (std::fflush(output.file()) != 0) return fail("error writing " + output.name());
    if (progress && number >= 100) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r%zu sentences, %.0f words/s", number, double(words) / seconds);
    }
  }
  if (progress && number >= 100) std::fputc('\n', stderr);
  std::string extra;
  size_t extra_bytes = 0;
  if (second && read_line(second->stream()->rdbuf(), 1, &extra, &extra_bytes)) {
    return fail(second->name() + " has more lines than the input (" + std::to_string(number) + ")");
  }
  if (refused > 0) return fail(std::to_string(refused) + " line(s) not translated (empty lines in their place)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return mt::cli::guarded_main(kTool, argc, argv, run,
                               "lower --batch-size, --threads, --beam, --max-line-bytes or --max-source-length");
}
