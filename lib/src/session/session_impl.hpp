// A session's internals: the memory plan, the buffers bound in its arena, and
// the search routines that run on them.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda/cuda_session.hpp"
#include "mt/sentence_splitter.hpp"
#include "mt/session.hpp"
#include "search/row_vocabulary.hpp"
#include "search/search_bookkeeping.hpp"
#include "search/token_stream.hpp"
#include "support/thread_pool.hpp"
#include "transformer/transformer.hpp"

namespace mt::detail {

class Tokenizer;

// One source of a translate_paragraphs batch: a sentence, or a piece of one
// too long for the session's limits.
struct ParagraphPiece {
  SentenceRange sentence;
  size_t begin = 0, end = 0;  // the piece's bytes of the text
  bool first = false;      // the sentence's first piece
  bool last = false;       // and its last
  bool truncated = false;  // one character encodes to more tokens than a source may have: cut
};

// translate_paragraphs' pieces as they are translated, for HTML's markup:
// the piece's source bytes of the text, its ids, where its translation
// starts in the output and its text, and its hypothesis (alignment included).
class PieceObserver {
 public:
  virtual ~PieceObserver() = default;
  virtual Status piece(const ParagraphPiece& piece, std::span<const int32_t> source_ids, size_t target_begin,
                       std::string_view target_text, const Hypothesis& hypothesis) = 0;
};

// translate_paragraphs with ParagraphOptions::format html (session_html.cpp).
Status translate_html(Session& session, std::string_view text, const ParagraphOptions& paragraphs,
                      const TranslateOptions& options, ParagraphSink* sink);

// Each token's bytes of `text`, the text `ids` were encoded from or decoded
// to, in order and tiling it: the decoded end of each token prefix, walked
// along the text (exact unless normalization rewrote a character).
// `scratch` holds two decodings of `ids`.
Status token_byte_ranges(const Tokenizer& tokenizer, std::span<const int32_t> ids, std::string_view text,
                         std::span<char> scratch, ByteRange* out);

// One row of a decoder step's logits as the search sees it: its values and
// the ids they are for.
struct StepRow {
  float* values;
  RowVocabulary vocabulary;
};

// Sizes every buffer from (config, options); offsets into one arena. The
// forward pass's buffers are TransformerBufferPlan's.
struct SessionPlan : TransformerBufferPlan {
  int B = 0;  // sentences
  int S = 0;  // source tokens per sentence, EOS included
  int T = 0;  // target positions per row
  int K = 0;  // beam
  int R = 0;  // decoder rows, B * K
  int N = 0;  // packed source tokens, B * S
  int threads = 0;
  int scratch_stride = 0;  // attention scratch floats per thread

  size_t positions = 0, source_tokens = 0, source_offsets = 0;
  size_t self_cache = 0, attention_scratch = 0;
  size_t step_tokens = 0, beam_scores = 0, history = 0, history_scratch = 0, parents = 0;
  // The rows a step decodes (live beams of unfinished sentences): their
  // tokens, beams, cache slots and sentences, and each beam's row in the
  // logits. Beam search moves a beam's cache by changing its slot (beam_slots).
  size_t live_tokens = 0, live_beams = 0, live_slots = 0, live_sources = 0, live_row_of_beam = 0, beam_slots = 0;
  size_t row_candidates = 0, row_candidate_counts = 0;  // beam: the 2K best of each live row
  size_t candidates = 0, finished = 0, finished_tokens = 0, source_done = 0, length_limits = 0;
  size_t hypotheses = 0, hypothesis_counts = 0, truncated = 0, stopped = 0;
  size_t history_log_probs = 0, history_log_probs_scratch = 0, finished_log_probs = 0;
  // SessionOptions::alignments: [R, heads, S] head scratch, each beam's row
  // of a step [R, S], histories [R, T, S], one sentence's scratch [K, T, S],
  // finished hypotheses' [B * K, T, S].
  size_t alignment_heads = 0, step_alignments = 0, history_alignments = 0, alignment_scratch = 0;
  size_t finished_alignments = 0;
  size_t streamed_tokens = 0, streamed_bytes = 0;
  // Text path (models with a vocabulary): tokenizer scratch, source ids per
  // sentence, detokenized outputs.
  size_t text_workspace = 0, text_workspace_bytes = 0;
  size_t text_ids = 0, text_ids_stride = 0, source_spans = 0;
  size_t text_out = 0, text_out_stride = 0, text_hypotheses = 0;
  // SessionOptions::quality_scores: [B * K, T] token ranges and words, and
  // one decoding's scratch.
  size_t token_ranges = 0, word_scores = 0, decode_scratch = 0, decode_scratch_bytes = 0;
  // SessionOptions::alignments, text: each source token's bytes [B, S] of
  // its text (source_texts [B], as encoded).
  size_t source_ranges = 0, source_texts = 0, source_columns = 0;
  size_t paragraph_pieces = 0;  // translate_paragraphs: what each source of a batch is
  // SessionOptions::shortlist with a model that has one (session_shortlist.cpp):
  // each sentence's candidate ids, ascending [B, width], their columns in the
  // call's logits [B, width] and their count [B]; each live row's logits
  // over its sentence's candidates [R, width]; the union of a call's
  // candidates, each id's column in it [V] and a mark per id [V]; the
  // union's columns of the output layer (up to gather_capacity).
  int shortlist_width = 0, gather_capacity = 0;
  size_t shortlist_ids = 0, shortlist_columns = 0, shortlist_counts = 0, shortlist_logits = 0;
  size_t union_ids = 0, union_columns = 0, shortlist_marks = 0;
  size_t gathered_weight = 0, gathered_scales = 0, gathered_row_sums = 0, gathered_bias = 0, gathered_linear = 0;
  // score() targets or TranslateOptions::prefixes: the spans grouped by
  // lane; text ones' ids [B, T] and spans, and one encoding's scratch row.
  size_t target_spans = 0, target_ids = 0, target_id_spans = 0, target_scratch = 0, target_scratch_stride = 0;
  // TranslateOptions::cache: each sentence's key, whether it was found, and
  // what was found (tokens in finished_tokens' rows of the sentence).
  size_t cache_keys = 0, cache_key_stride = 0, cache_key_lengths = 0, cache_hits = 0;
  size_t cache_hypotheses = 0, cache_counts = 0;
  // int8 models: quantized input rows of the int8 layers.
  size_t quantized = 0, quantized_stride = 0, quantized_scales = 0, quantized_zeros = 0;
  int quantized_rows = 0;
  // Split by sentences: `lanes` sessions of one thread each, planned by
  // lane_plan, at lane_offset + i * lane_stride; the wide lane (if planned)
  // at wide_offset.
  int lanes = 0;
  std::shared_ptr<const SessionPlan> lane_plan, wide_plan;
  size_t lane_offset = 0, lane_stride = 0, wide_offset = 0;
  size_t lane_statuses = 0;  // [lanes] Status: each lane's outcome of a run
  size_t total = 0;

  static SessionPlan make(const Model& model, const SessionOptions& options);
};

// An error when the plan does not fit in the address space (make() then says SIZE_MAX).
Status check_plan(const SessionPlan& plan);

}  // namespace mt::detail

namespace mt {

// Hidden: the shared library exports Session, not its internals.
struct __attribute__((visibility("hidden"))) Session::Impl {
  std::shared_ptr<const Model> model;
  SessionOptions options;
  detail::SessionPlan plan;
  const KernelTable* kernels = nullptr;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> owned{nullptr, [](std::byte*) {}};
  std::byte* arena = nullptr;
  std::unique_ptr<detail::ThreadPool> owned_pool;
  detail::ThreadPool* pool = nullptr;  // owned_pool, or the session's for its wide lane
  std::optional<detail::Transformer> transformer;
  // Device::cuda: the model runs on the GPU; the arena then holds only the
  // host side (sources, search bookkeeping, results, text).
  std::unique_ptr<detail::CudaSession> cuda;
  // The model's length convention for scores (metadata decoding.length_offset).
  int length_offset = 0;
  // SessionOptions::alignments: the decoder layer whose heads are averaged.
  int alignment_layer = -1;
  // translate_paragraphs' default non-breaking prefixes: the model's own
  // list (metadata "nonbreaking_prefixes") or libmt's for its source language.
  const NonBreakingPrefixes* sentence_prefixes = nullptr;
  // Split by sentences: the single-threaded sessions in this arena that
  // translate the batch, sentence b in lane b % lanes.size(); and (automatic,
  // large models) the wide lane, on all the threads split by layers, for
  // batches smaller than the thread count.
  std::vector<std::unique_ptr<Impl>> lanes;
  std::unique_ptr<Impl> wide;
  // Streaming (TranslateOptions::on_token): a lane's sentence j is the
  // call's sentence stream_first + j * stream_stride, and every lane's calls
  // go through the session's one mutex.
  size_t stream_first = 0, stream_stride = 1;
  std::mutex own_stream_mutex;
  std::mutex* stream_mutex = &own_stream_mutex;

  template <class T>
  T* at(size_t offset) {
    return reinterpret_cast<T*>(arena + offset);
  }

  detail::EncoderBuffers encoder_buffers();
  detail::DecoderBuffers decoder_buffers();
  detail::DecoderState decoder_state(int rows_per_source);

  // load_sources and run, with TranslateOptions::cache: sentences found
  // there are not decoded, the others are stored after.
  Status translate_spans(std::span<const std::span<const int32_t>> sources, const TranslateOptions& options);
  // The cache key of a source for these options in plan.cache_keys[b];
  // false when the source cannot be translated as it is (too long).
  bool cache_key(int b, std::span<const int32_t> source, const TranslateOptions& options);
  uint64_t decoder_steps = 0;      // steps decoded, for tests

  // Checks the sources and options and copies the sources (each + EOS) and
  // their length limits into the arena.
  Status load_sources(std::span<const std::span<const int32_t>> sources, const TranslateOptions& options);
  // Encodes sources already copied (with EOS) into the arena; sets offsets.
  void encode(int B);
  Status forced_logits(std::span<const int32_t> source, std::span<const int32_t> target, std::span<float> logits);
  // Starts the objects in the arena, the pool and the transformer, or the lanes.
  void bind();
  // bind() for a session split by sentences: its lanes, in its arena.
  void bind_lanes();
  // Encodes the loaded sources and searches: hypotheses and counts filled.
  // Only the GPU can fail here (a device fault).
  // With `targets` (score()), scores them by teacher forcing instead.
  Status run(int B, const TranslateOptions& options, std::span<const std::span<const int32_t>> targets = {});
  // score(): teacher forcing over the encoded batch; results as a search's.
  void force_targets(int B, const TranslateOptions& options, std::span<const std::span<const int32_t>> targets);
  // Encodes UTF-8 sources with the model's vocabulary into source_spans
  // (truncated as the options say); sets truncated[].
  Status encode_source_texts(std::span<const std::string_view> sources, const TranslateOptions& options);
  // Encodes target text with the target vocabulary into target_id_spans
  // (`what` names them in errors: "target", "prefix").
  Status encode_target_texts(std::span<const std::string_view> texts, const char* what);
  // SessionOptions::quality_scores: token ranges, words and quality of the
  // text hypothesis in slot `slot`.
  Status add_quality(size_t slot, TextHypothesis& h);
  // The Translations of the B sentences' hypotheses in the results.
  void id_results(int B, Translations* results);
  // The TextTranslations of the B hypotheses in the results (`prefix`
  // source ids before each source, for the source ranges).
  Status text_results(int B, TextTranslations* results, size_t prefix = 0);
  // translate_paragraphs' pieces (HTML), or null.
  detail::PieceObserver* piece_observer = nullptr;
  // SessionOptions::alignments: sentence b's source token ranges.
  Status add_source_ranges(int b, size_t prefix);
  // Checks score()'s targets against the sources and the session.
  [[nodiscard]] Status check_targets(size_t sources, std::span<const std::span<const int32_t>> targets,
                       const TranslateOptions& options) const;
  // run() for a session split by sentences: the lanes translate their
  // sentences side by side (or the wide lane all of them), then their
  // results are gathered here.
  Status run_lanes(int B, const TranslateOptions& options, std::span<const std::span<const int32_t>> targets);
  // Search over the encoded batch; fills hypotheses and counts.
  void greedy_search(int B, const detail::SearchLimits& limits);
  void beam_search(int B, const detail::SearchLimits& limits);
  // The search's host buffers in the arena, for SearchBookkeeping, with
  // each token's log-probability or without (the GPU's device search).
  detail::SearchBuffers search_buffers(bool log_probs = true);
  // SessionOptions::shortlist (session_shortlist.cpp). Whether this
  // session's translations use the model's shortlist (its lanes do the work).
  bool uses_shortlist() const;
  // The B loaded sentences' candidates and the call's output layer
  // (shortlist_output) for them.
  void prepare_shortlist(int B, const TranslateOptions& options);
  // After a decoder step over `rows` rows: row i's logits over its
  // sentence's candidates (sentence_of_row[i]).
  void shortlist_rows(int rows, const int* sentence_of_row);
  // Row i of the step (of sentence b) as the search reads it.
  detail::StepRow step_row(int i, int b);
  // The call's output layer: the gathered columns (plan.gathered_linear, in
  // the arena: session creation's bookkeeping stays small), or null for the
  // model's own layer.
  const detail::Linear* shortlist_output();
  // TranslateOptions::on_token for this search.
  detail::TokenStream token_stream(const detail::SearchLimits& limits);
};

}  // namespace mt
