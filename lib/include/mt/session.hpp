// A session: everything one translating thread needs, planned once.
//
// All working memory (activations, per-layer self-attention KV caches,
// cross-attention keys/values, beam bookkeeping, results) is sized from the
// model config and SessionOptions and allocated once when the session is
// created, or supplied by the caller. translate() then makes no heap
// allocation. Sessions are not thread-safe; use one per thread, all sharing
// one Model.
#pragma once

#include "mt/export.h"

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/model.hpp"
#include "mt/sentence_splitter.hpp"
#include "mt/status.hpp"
#include "mt/translation_cache.hpp"

namespace mt {

// Where a session runs the model. Device::cuda needs libmt built with CUDA
// and an NVIDIA GPU; Session::create says which is missing (Errc::unsupported).
enum class Device : uint8_t { cpu = 0, cuda = 1 };

// Whether this build runs a session on several threads: not WebAssembly
// built without threads (cmake/wasm.cmake), where num_threads must be 1.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
inline constexpr bool kHasThreads = false;
#else
inline constexpr bool kHasThreads = true;
#endif

// How a session with num_threads > 1 shares a batch among its threads.
enum class ThreadSplit : uint8_t {
  // sentences; but with a model file of 24 MB or more, a batch smaller than
  // the thread count runs on all the threads split by layers (plans both; a
  // session whose max_batch_size is that small is split by layers). Smaller
  // models' steps are too short for the layer split to pay.
  automatic = 0,
  // The work of every layer (rows, column panels, heads) is divided: a
  // single sentence uses every thread, and the weights are read once per step.
  layers = 1,
  // Each thread translates its own share of the batch's sentences from start
  // to end, with no synchronisation: small models scale with the threads.
  // A batch of one sentence runs on one thread.
  sentences = 2,
};

struct MT_API SessionOptions {
  int max_batch_size = 16;                            // sentences per translate() call
  int max_source_length = 128;                        // source tokens, the EOS libmt appends included
  int max_target_length = 128;                        // generated tokens, EOS included
  int max_beam_size = 4;                              // largest TranslateOptions::beam_size
  int num_threads = 1;                                // threads of the session's pool (the caller's thread included)
  ThreadSplit thread_split = ThreadSplit::automatic;  // with num_threads > 1 (CPU only)
  int max_text_bytes = 4096;  // longest source text, in UTF-8 bytes, >= 4 (models with a vocabulary)
  Device device = Device::cpu;
  int cuda_device = 0;      // CUDA: index of the GPU
  bool allow_tf32 = false;  // CUDA: GEMMs on TF32 tensor cores (faster, about 1e-3 relative error)
  // CUDA: replay each decode step from a CUDA Graph (far fewer launches, so
  // faster small batches), captured for every batch and beam shape when the
  // session is created (tens of milliseconds; see lib/src/cuda/cuda_graphs.cpp).
  bool cuda_graphs = true;
  // CUDA, int8 models: keep int8 weights int8 on the GPU (one byte a weight
  // instead of four) and run int8 GEMMs whose integer sums equal the CPU's.
  // False: dequantize them to fp32 at upload and run fp32 GEMMs. No effect on
  // fp32 models.
  bool cuda_int8_gemm = true;
  // CUDA: linear weights and embeddings in half precision on the GPU (half
  // the memory of fp32) and GEMMs of half inputs with fp32 sums on tensor
  // cores; activations stay fp32 between layers, rounded to half only as a
  // GEMM's input. About 1e-3 relative error in the logits; a GEMM input of
  // magnitude 65520 or more becomes infinite.
  // Overrides allow_tf32; an int8 model with cuda_int8_gemm keeps its int8
  // GEMMs. cuBLAS's half GEMM allocates host memory on each call made outside
  // a CUDA Graph (the encoder's), which the fp32 and int8 GEMMs do not.
  bool cuda_fp16 = false;
  // CUDA beam search: keep its bookkeeping (next beams, finished hypotheses,
  // the cache reorder) on the GPU too, the same code as the host's
  // (lib/src/search/search_steps.hpp), so the host waits every few steps instead of
  // every step. Off by default: with cuda_graphs the host's bookkeeping is as
  // fast or faster (bench_cuda_translate's device_search cells).
  bool cuda_device_search = false;
  // translate_text and score_text also give each hypothesis' token byte
  // ranges and word quality scores (TextHypothesis::token_ranges, words,
  // quality); their memory is planned only when this is set.
  bool quality_scores = false;
  // Word alignments: each hypothesis' cross-attention weights
  // (Hypothesis::alignment). Memory planned only when set: about
  // 2 x max_batch_size x max_beam_size x max_target_length x max_source_length
  // floats. CPU sessions only; a session with them takes no cache.
  bool alignments = false;
  // The decoder layer whose heads are averaged: -1 for the model's metadata
  // "alignment_layer" (measured for the model), else its last layer.
  int alignment_layer = -1;
  // Translate over the model's vocabulary shortlist when its file has one
  // (Model::shortlist, mt_shortlist build): each sentence's output layer and
  // search cover only its candidates, which depend on the sentence alone
  // (never on the batch). Off: the whole vocabulary, as a model without one.
  // CPU sessions; a CUDA session computes the whole vocabulary. Scoring
  // (score, score_text) always uses the whole vocabulary.
  bool shortlist = true;

  Status validate(const ModelConfig& config) const;
};

// One token of a translation, given to TranslateOptions::on_token as soon as
// it is final: greedy search gives every token at once; beam search the
// tokens every hypothesis that can still win agrees on, so nothing given is
// ever taken back, and the rest when the sentence ends. A sentence's tokens
// are exactly its best hypothesis' tokens, then EOS when it ended on its own.
struct TokenEvent {
  size_t sentence = 0;  // the source's index in the call
  int step = 0;         // the token's position in the hypothesis, from 0
  int32_t token = 0;    // target id; EOS last, when the sentence ended on its own
  // The text this token adds, in whole UTF-8 characters, as the sentence's
  // TextHypothesis has it: the texts of its events joined are that text. Empty
  // while a character is incomplete, and for a model without a vocabulary.
  std::string_view text;
  float log_prob = 0.0f;  // log P(token | source, the tokens before): the events' sum is the hypothesis' log_prob
};

// A function and its data, called for each TokenEvent: returning true stops
// that sentence, which ends with the tokens given so far (results say it
// stopped); the other sentences go on as if nothing happened. Calls are made
// one at a time (sessions with several threads serialise them) from the
// thread of the translate call or the session's threads; the event's text
// is valid during the call only. Nothing is allocated.
struct TokenCallback {
  bool (*function)(void* user_data, const TokenEvent& event) = nullptr;
  void* user_data = nullptr;

  explicit operator bool() const { return function != nullptr; }
  // Calls f(event) (f kept by reference: it must outlive the translate call).
  template <class F>
  static TokenCallback of(F& f) {
    return {[](void* data, const TokenEvent& event) -> bool { return (*static_cast<F*>(data))(event); },
            const_cast<void*>(static_cast<const void*>(&f))};
  }
};

struct MT_API TranslateOptions {
  int beam_size = 1;              // 1: greedy search
  int num_hypotheses = 1;         // n-best per sentence, <= beam_size
  float length_penalty = 1.0f;    // score = log P(y|x) / (|y| + o)^length_penalty, |y| with EOS, o the
                                  // model's metadata decoding.length_offset (0; OpenNMT-py models 1)
  int max_decoding_length = 0;    // generated tokens at most; 0: the session's max_target_length
  float max_length_ratio = 0.0f;  // > 0: also at most ratio * source length + max_length_offset
  int max_length_offset = 0;
  int min_decoding_length = 0;  // EOS is not allowed before this many tokens
  // A source longer than the session allows (max_source_length tokens or
  // max_text_bytes bytes) is an error, or is cut to fit when this is set; the
  // results then say it was truncated.
  bool truncate_long_sources = false;
  // Ids put in front of every (non-empty) source, e.g. M2M-100's and NLLB's
  // source-language token. They count toward max_source_length.
  std::span<const int32_t> source_prefix;
  // Ids every hypothesis starts with, forced: e.g. M2M-100's and NLLB's
  // target-language token. They are part of the hypotheses' tokens and of
  // their length, and add nothing to their log-probability, as Hugging
  // Face's forced_bos_token_id. CPU sessions only.
  std::span<const int32_t> target_prefix;
  // The start of each sentence's translation, given (what a user typed in
  // an editor): prefixes[i] for source i (fewer spans than sources: the
  // rest have none). Every hypothesis starts with it, after target_prefix;
  // unlike target_prefix, its tokens are scored as the model scores them, so
  // a prefix greedy search would have chosen anyway changes neither the
  // output nor its scores. Ids other than EOS. CPU sessions only.
  std::span<const std::span<const int32_t>> prefixes;
  // translate_text: the same as UTF-8 text, encoded with the target
  // vocabulary (a word-initial prefix gives the pieces the output would
  // have); prefixes is then not read.
  std::span<const std::string_view> text_prefixes;
  // More than 0: alternatives at the end of the prefix (editors offering
  // other words): that many hypotheses, whose tokens after the prefix are
  // the most probable next tokens, best first, each then completed by greedy
  // search; results ranked by score. At most the session's max_beam_size;
  // beam_size and num_hypotheses are not read. CPU sessions only.
  int alternatives = 0;
  // Repetition guards, for small models that loop ("salad salad salad"):
  // more than 0: no n-gram of this many tokens occurs twice in a hypothesis.
  int no_repeat_ngram_size = 0;
  // More than 1: the logit of each token already in the hypothesis is
  // divided by this (multiplied when negative) before the log-softmax, as
  // CTRL (Keskar et al. 2019) and Hugging Face's repetition_penalty.
  // token_log_probs are then those of the penalised distribution.
  float repetition_penalty = 1.0f;
  // Streaming: each token as it becomes final (TokenCallback). CPU sessions only.
  TokenCallback on_token;
  // Cancelling: another thread stores a non-zero value here to end the call
  // within one decoder step; each unfinished sentence then ends with what it
  // has (its best hypothesis so far), and the results say it stopped. The
  // call still returns ok. CPU sessions only.
  const std::atomic<int>* cancel = nullptr;
  // A cache of earlier translations (mt/translation_cache.hpp) to look each
  // sentence up in and to store it in; null: none. Not used with on_token
  // or cancel.
  TranslationCache* cache = nullptr;

  Status validate(const SessionOptions& session) const;
};

// A hypothesis' word alignment: row i holds the attention weights of its
// token i (then EOS's, as token_log_probs) over the source's tokens as the
// encoder saw them (source_prefix, the tokens, EOS), summing to 1: soft
// alignments, from the cross-attention of one decoder layer, heads averaged.
struct Alignment {
  const float* data = nullptr;
  size_t rows = 0, columns = 0;
  size_t stride = 0;  // floats between rows

  float operator()(size_t row, size_t column) const { return data[row * stride + column]; }
  std::span<const float> row(size_t i) const { return {data + i * stride, columns}; }
  // The source token row i attends to most (the first of equals): its hard alignment.
  size_t argmax(size_t i) const {
    size_t best = 0;
    for (size_t j = 1; j < columns; ++j) best = (*this)(i, j) > (*this)(i, best) ? j : best;
    return best;
  }
  bool empty() const { return rows == 0; }
};

struct Hypothesis {
  std::span<const int32_t> tokens;  // target ids, without BOS and EOS
  float score = 0.0f;               // length-normalised log-probability (see length_penalty)
  float log_prob = 0.0f;            // log P(tokens + EOS | source)
  // log P(token | source, the tokens before) of each token, then EOS's when
  // the hypothesis ended with EOS (not when cut at the length limit or
  // stopped): summed in order, log_prob. Forced target_prefix tokens are 0.
  // Empty for an empty source, and on CUDA sessions with cuda_device_search.
  std::span<const float> token_log_probs;
  // With SessionOptions::alignments: token_log_probs.size() rows.
  Alignment alignment;
};

// Results of the last translate() call: a view into the session's memory,
// valid until the next call.
class Translations {
 public:
  size_t size() const { return sentences_; }
  // The n-best of sentence i, best first.
  std::span<const Hypothesis> operator[](size_t i) const { return {hypotheses_ + i * stride_, size_t(counts_[i])}; }
  // Whether sentence i was cut to fit (TranslateOptions::truncate_long_sources).
  bool truncated(size_t i) const { return truncated_[i] != 0; }
  // Whether sentence i was stopped (on_token returned true) or cancelled before it ended.
  bool stopped(size_t i) const { return stopped_[i] != 0; }

 private:
  friend class Session;
  const Hypothesis* hypotheses_ = nullptr;
  const int* counts_ = nullptr;
  const int* truncated_ = nullptr;
  const int* stopped_ = nullptr;
  size_t stride_ = 0;
  size_t sentences_ = 0;
};

// Bytes [begin, end) of a text.
struct ByteRange {
  size_t begin = 0, end = 0;
};

// A word of a translation and its quality score: the mean log-probability
// of its tokens (Bergamot's unsupervised quality estimate). Low: doubtful.
struct WordScore {
  ByteRange bytes;  // with the space before it, so a hypothesis' words tile its text
  float score = 0.0f;
};

struct TextHypothesis {
  // UTF-8, on one line: every line break the vocabulary decodes to (LF, VT,
  // FF, CR, CR LF, U+0085, U+2028, U+2029, from pieces, byte pieces or the
  // unknown piece's surface) is one space, so one sentence in gives one line out.
  std::string_view text;
  float score = 0.0f;
  float log_prob = 0.0f;
  std::span<const int32_t> tokens;  // the target ids `text` was decoded from, without BOS and EOS
  std::span<const float> token_log_probs;  // Hypothesis::token_log_probs
  Alignment alignment;                     // Hypothesis::alignment
  // With SessionOptions::quality_scores (else empty and 0):
  // Each token's bytes of `text`: they tile it, in order (a control token,
  // or a byte piece inside a character, has an empty range).
  std::span<const ByteRange> token_ranges;
  // Its words: a token whose text starts with a space (or the first with
  // any text) starts one; EOS belongs to none.
  std::span<const WordScore> words;
  float quality = 0.0f;  // the mean of the words' scores (0 without words)
};

// Results of the last translate_text() call, valid until the next call.
class TextTranslations {
 public:
  size_t size() const { return sentences_; }
  std::span<const TextHypothesis> operator[](size_t i) const { return {hypotheses_ + i * stride_, size_t(counts_[i])}; }
  // Whether sentence i was cut to fit (TranslateOptions::truncate_long_sources).
  bool truncated(size_t i) const { return truncated_[i] != 0; }
  // Whether sentence i was stopped (on_token returned true) or cancelled before it ended.
  bool stopped(size_t i) const { return stopped_[i] != 0; }
  // With SessionOptions::alignments: each column of sentence i's alignments
  // (source_prefix ids, its tokens, EOS) as bytes of its source text (ids
  // that stand for no text: empty). Found by matching the tokens' decoded
  // text to the source: exact unless normalization rewrote a character,
  // then at that character.
  std::span<const ByteRange> source_ranges(size_t i) const {
    return source_ranges_ == nullptr ? std::span<const ByteRange>()
                                     : std::span<const ByteRange>(source_ranges_ + i * source_stride_,
                                                                  size_t(source_columns_[i]));
  }

 private:
  friend class Session;
  const ByteRange* source_ranges_ = nullptr;
  const int* source_columns_ = nullptr;
  size_t source_stride_ = 0;
  const TextHypothesis* hypotheses_ = nullptr;
  const int* counts_ = nullptr;
  const int* truncated_ = nullptr;
  const int* stopped_ = nullptr;
  size_t stride_ = 0;
  size_t sentences_ = 0;
};

// What translate_paragraphs' text is.
enum class TextFormat : uint8_t {
  plain = 0,
  // HTML: tags, attributes, comments, <script> and <style> kept; entities
  // decoded for translation and written again; block-level tags end
  // sentences, inline ones (<b>, <a>, <span>, ...) move with the words they
  // wrap, by the word alignment: needs a session with
  // SessionOptions::alignments. <code>, <kbd>, <samp>, <var>, <math>, <svg>
  // stay whole. Allocates in proportion to the markup; the sink's sentence()
  // is not called. See docs/html.md.
  html = 1,
};

// How translate_paragraphs reads its text.
struct ParagraphOptions {
  SplitMode mode = SplitMode::lines;
  TextFormat format = TextFormat::plain;
  // The non-breaking prefixes of the source language (kept alive by the
  // caller during the call); null: model_nonbreaking_prefixes(model).
  const NonBreakingPrefixes* prefixes = nullptr;
};

// A model's own list (its metadata "nonbreaking_prefixes", in the list
// format), else libmt's list for its metadata source_language ("en", "eng",
// "en-US", ...), else none. Error: a malformed list in the metadata.
MT_API Expected<NonBreakingPrefixes> model_nonbreaking_prefixes(const Model& model);

// One sentence of a translate_paragraphs text and where its translation is.
struct TranslatedSentence {
  size_t source_begin = 0, source_end = 0;  // bytes of the source text
  size_t target_begin = 0, target_end = 0;  // bytes of the translated text
  size_t paragraph = 0;                     // SentenceRange::paragraph
  // More than 1: the sentence was longer than the session takes (max_text_bytes,
  // max_source_length) and was translated in that many pieces, cut between
  // words, their translations joined by a space.
  int pieces = 1;
  bool truncated = false;  // a piece was cut to fit (one character encodes to more tokens than a source may have)
};

// Receives a translated text in order: write() is called with the source's
// own bytes before, between and after its sentences, and with each
// sentence's translation; sentence() after each sentence's translation.
// A Status that is not ok stops the translation and is returned.
class ParagraphSink {
 public:
  virtual ~ParagraphSink() = default;
  virtual Status write(std::string_view bytes) = 0;
  virtual Status sentence(const TranslatedSentence& sentence) = 0;
};

// A translated text, whole: translate_paragraphs' convenient form.
struct ParagraphTranslation {
  std::string text;
  std::vector<TranslatedSentence> sentences;
};

class MT_API Session {
 public:
  // Bytes of host working memory a session needs (what create() allocates).
  // A CUDA session keeps its activations on the GPU instead (device_memory_size()).
  static Expected<size_t> required_memory(const Model& model, const SessionOptions& options);

  static Expected<Session> create(std::shared_ptr<const Model> model, const SessionOptions& options);
  // Uses `buffer` (at least required_memory() bytes, 64-byte aligned, owned by
  // the caller and kept alive as long as the session) for all working memory.
  static Expected<Session> create(std::shared_ptr<const Model> model, const SessionOptions& options,
                                  std::span<std::byte> buffer);

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Translates a batch of source sentences given as token ids (without BOS or
  // EOS: libmt appends EOS). Results stay valid until the next call. An empty
  // source (also text that tokenizes to nothing, e.g. blank) gets one empty
  // hypothesis with score and log_prob 0, without decoding.
  Status translate(std::span<const std::span<const int32_t>> sources, const TranslateOptions& options,
                   Translations* results);

  // Translates UTF-8 sentences with the model's own vocabulary: tokenize,
  // translate, detokenize, all in the session's memory (no heap allocation).
  // Invalid UTF-8 is read as SentencePiece reads it: each bad byte is U+FFFD.
  // Error if the model has no vocabulary.
  Status translate_text(std::span<const std::string_view> sources, const TranslateOptions& options,
                        TextTranslations* results);

  // Translates a text of paragraphs: splits it into sentences
  // (SentenceSplitter), translates them in batches of max_batch_size, and
  // gives the sink the source text with each sentence replaced by its
  // translation, every byte between sentences kept as it is. Sentences
  // longer than the session takes are translated in pieces, not refused.
  // The best hypothesis of each; the results of translate() and
  // translate_text() are overwritten. No heap allocation (beyond the sink's).
  Status translate_paragraphs(std::string_view text, const ParagraphOptions& paragraphs,
                              const TranslateOptions& options, ParagraphSink* sink);
  // The same into a string and a vector.
  Expected<ParagraphTranslation> translate_paragraphs(std::string_view text, const ParagraphOptions& paragraphs = {},
                                                      const TranslateOptions& options = {});

  // Scores given translations (forced decoding): results[i] holds one
  // Hypothesis whose tokens are targets[i] (ids without EOS), with
  // token_log_probs, one per token then EOS's, log_prob their sum and score
  // its length-normalised form. The model's distribution as translate()
  // sees it with `options` (source_prefix; min_decoding_length masks EOS;
  // target_prefix: a target must start with it, those tokens score 0 as in
  // translate; truncate_long_sources), so score(x, a translation's tokens)
  // gives that translation's own token_log_probs. Other options are not
  // read. A target must leave room for EOS (max_target_length). A pair's
  // result is the same alone or in any batch. CPU sessions only.
  Status score(std::span<const std::span<const int32_t>> sources, std::span<const std::span<const int32_t>> targets,
               const TranslateOptions& options, Translations* results);
  // The same for UTF-8 text, each encoded with the model's vocabularies;
  // each TextHypothesis' text is its target's decoded tokens.
  Status score_text(std::span<const std::string_view> sources, std::span<const std::string_view> targets,
                    const TranslateOptions& options, TextTranslations* results);

  // Teacher forcing, for checking a model against the framework it came
  // from: the decoder's raw logits (output bias included, before the
  // log-softmax) at each step of `target`, row t (of target_vocab_size
  // floats) given the start id and target[0..t). `logits` holds
  // target.size() rows. CPU sessions only.
  Status forced_logits(std::span<const int32_t> source, std::span<const int32_t> target, std::span<float> logits);

  const Model& model() const;
  const SessionOptions& options() const;
  size_t memory_size() const;
  size_t device_memory_size() const;  // bytes of GPU memory of a CUDA session (weights not included); 0 on the CPU
  const char* kernel_isa() const;     // the ISA of the kernels this session runs

  struct Impl;

 private:
  friend struct detail::Access;  // lib/src/access.hpp
  explicit Session(std::unique_ptr<Impl> impl);
  static Expected<Session> bind_session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mt
