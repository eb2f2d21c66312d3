// The session's memory plan: every buffer sized from (model, options) as
// offsets into one block, computed before the block exists, so that
// required_memory() can answer and a caller can supply the memory.
#include <algorithm>

#include "support/arena.hpp"
#include "model/model_weights.hpp"
#include "session/session_impl.hpp"
#include "tokenizer/tokenizer.hpp"
#include "access.hpp"

namespace mt {

using detail::SessionPlan;

namespace detail {

using detail::Tokenizer;

// Past this size a batch smaller than the thread count runs on every thread
// split by layers (automatic); a smaller model's steps are too short for that
// to pay, and such a batch runs on as many lanes as it has sentences.
constexpr size_t kWideLaneMinModelBytes = size_t(24) << 20;

SessionPlan SessionPlan::make(const Model& model, const SessionOptions& o) {
  const ModelConfig& cfg = model.config();
  SessionPlan p;
  // automatic with a large model: lanes only when a batch can fill them.
  const bool large = model.file_size() >= kWideLaneMinModelBytes;
  const bool automatic = o.thread_split == ThreadSplit::automatic;
  if (o.device == Device::cpu && o.num_threads > 1 && o.thread_split != ThreadSplit::layers &&
      !(automatic && large && o.max_batch_size < o.num_threads)) {
    // One single-threaded lane per thread, each planned for its share of the
    // batch; this plan keeps the inputs and the results (as a CUDA session's).
    p.lanes = o.num_threads;
    SessionOptions lane = o;
    lane.num_threads = 1;
    lane.max_batch_size = (o.max_batch_size + p.lanes - 1) / p.lanes;
    p.lane_plan = std::make_shared<const SessionPlan>(make(model, lane));
    if (automatic && large) {
      SessionOptions wide = o;
      wide.thread_split = ThreadSplit::layers;
      wide.max_batch_size = std::min(o.max_batch_size, o.num_threads - 1);
      p.wide_plan = std::make_shared<const SessionPlan>(make(model, wide));
    }
  }
  p.B = o.max_batch_size;
  p.S = o.max_source_length;
  p.T = o.max_target_length;
  p.K = o.max_beam_size;
  p.R = p.B * p.K;
  p.N = p.B * p.S;
  p.threads = o.num_threads;
  p.scratch_stride = std::max(p.S, p.T);
  const size_t C = size_t(cfg.d_model);
  const size_t L = size_t(cfg.decoder_layers), N = size_t(p.N), R = size_t(p.R), T = size_t(p.T), K = size_t(p.K),
               B = size_t(p.B);

  // A CUDA session keeps the forward pass's buffers on the device (cuda/cuda_session.cpp),
  // a session split by sentences in its lanes: here they get no bytes.
  const size_t here = o.device == Device::cpu && p.lanes == 0 ? 1 : 0;
  ArenaPlanner a;
  const size_t computed_positions = cfg.stored_positions ? 0 : 1;  // else read from the model
  p.positions = a.reserve<float>(here * computed_positions * size_t(std::max(p.S, p.T)) * C);
  p.source_tokens = a.reserve<int32_t>(N);
  p.source_offsets = a.reserve<int>(B + 1);
  p.reserve(a, cfg, N, R, T, here != 0);
  p.self_cache = a.reserve<float>(ArenaPlanner::product(here * L, p.self_cache_stride));
  p.attention_scratch = a.reserve<float>(here * size_t(p.threads) * size_t(p.scratch_stride));
  p.step_tokens = a.reserve<int32_t>(R);
  p.live_tokens = a.reserve<int32_t>(R);
  p.live_slots = a.reserve<int>(R);
  p.live_sources = a.reserve<int>(R);
  p.live_beams = a.reserve<int>(R);
  p.live_row_of_beam = a.reserve<int>(R);
  p.beam_slots = a.reserve<int>(R);
  p.row_candidates = a.reserve<Candidate>(ArenaPlanner::product(R, 2 * K));
  p.row_candidate_counts = a.reserve<int>(R);
  p.beam_scores = a.reserve<float>(R);
  p.history = a.reserve<int32_t>(R * T);
  p.history_scratch = a.reserve<int32_t>(K * T);
  p.parents = a.reserve<int32_t>(R);
  p.candidates = a.reserve<Candidate>(K * 2 * K);
  p.finished = a.reserve<Finished>(B * K);
  p.finished_tokens = a.reserve<int32_t>(B * K * T);
  p.source_done = a.reserve<int>(B);
  p.length_limits = a.reserve<int>(B);
  p.hypotheses = a.reserve<Hypothesis>(B * K);
  p.hypothesis_counts = a.reserve<int>(B);
  p.truncated = a.reserve<int>(B);
  p.stopped = a.reserve<int>(B);
  // Streaming: each beam's running log-probability after each token (as
  // `history` holds its tokens), those of finished hypotheses, and how much
  // of each sentence was given to on_token.
  p.history_log_probs = a.reserve<float>(R * T);
  p.history_log_probs_scratch = a.reserve<float>(K * T);
  p.finished_log_probs = a.reserve<float>(B * K * T);
  if (o.alignments && here) {
    const size_t S = size_t(p.S), H = size_t(cfg.heads);
    p.alignment_heads = a.reserve<float>(ArenaPlanner::product(R * H, S));
    p.step_alignments = a.reserve<float>(R * S);
    p.history_alignments = a.reserve<float>(ArenaPlanner::product(R * T, S));
    p.alignment_scratch = a.reserve<float>(ArenaPlanner::product(K * T, S));
    p.finished_alignments = a.reserve<float>(ArenaPlanner::product(B * K * T, S));
  }
  p.streamed_tokens = a.reserve<int>(B);
  p.streamed_bytes = a.reserve<size_t>(B);
  p.source_spans = a.reserve<std::span<const int32_t>>(B);
  p.target_spans = a.reserve<std::span<const int32_t>>(B);
  // 132 bytes of fixed fields (session_cache.cpp), the source with its
  // prefix (S), the target prefix and a sentence's prefix (T each).
  p.cache_key_stride = (64 + size_t(p.S) * 2 + size_t(T) * 2) * sizeof(int32_t);
  p.cache_keys = a.reserve<std::byte>(ArenaPlanner::product(B, p.cache_key_stride));
  p.cache_key_lengths = a.reserve<size_t>(B);
  p.cache_hits = a.reserve<int>(B);
  p.cache_hypotheses = a.reserve<Hypothesis>(B * K);
  p.cache_counts = a.reserve<int>(B);
  const detail::ModelWeights& w = detail::weights_of(model);
  // int8 layers quantize their inputs here: as many rows as the widest call
  // (the encoder's packed tokens or the decoder's rows); longer calls (the
  // full-prefix decoder of the tests) go through in blocks.
  if (w.any_int8 && here) {
    p.quantized_rows = std::max(p.N, p.R);
    p.quantized_stride = (size_t(padded_k_i8(w.max_int8_k)) + 63) / 64 * 64;
    p.quantized = a.reserve<uint8_t>(size_t(p.quantized_rows) * p.quantized_stride);
    p.quantized_scales = a.reserve<float>(size_t(p.quantized_rows));
    p.quantized_zeros = a.reserve<int32_t>(size_t(p.quantized_rows));
  }
  if (const ShortlistView* shortlist = model.shortlist(); shortlist != nullptr && o.shortlist && here) {
    // A sentence's candidates: the rows of its (at most S) source ids, the
    // frequent ids, EOS and its prefixes (fewer than T).
    const size_t V = size_t(cfg.target_vocab_size);
    const size_t width = std::min(V, size_t(p.S) * size_t(shortlist->longest_row) + shortlist->frequent.size() + T + 1);
    p.shortlist_width = int(width);
    p.shortlist_ids = a.reserve<int32_t>(B * width);
    p.shortlist_columns = a.reserve<int32_t>(B * width);
    p.shortlist_counts = a.reserve<int>(B);
    p.shortlist_logits = a.reserve<float>(ArenaPlanner::product(R, width));
    const size_t union_capacity = std::min(V, B * width);
    p.union_ids = a.reserve<int32_t>(union_capacity);
    p.union_columns = a.reserve<int32_t>(V);
    p.shortlist_marks = a.reserve<uint8_t>(V);
    // A union of more than half the vocabulary is computed from the model's
    // own layer (the same values): copying it would cost more than it saves.
    p.gather_capacity = int(std::min(union_capacity, (V + 1) / 2));
    const size_t G = size_t(p.gather_capacity);
    const Linear& output = w.output;
    if (output.is_int8()) {
      p.gathered_weight = a.reserve<int8_t>(packed_size_i8(int(G), output.k));
      p.gathered_scales = a.reserve<float>(G);
      if (output.row_sums != nullptr) p.gathered_row_sums = a.reserve<int32_t>(G);
    } else {
      p.gathered_weight = a.reserve<float>(packed_size(int(G), output.k));
    }
    if (output.bias != nullptr) p.gathered_bias = a.reserve<float>(G);
    p.gathered_linear = a.reserve<Linear>(1);  // the view of them the output layer runs
  }
  if (const Tokenizer* tok = detail::tokenizer_of(model)) {
    const size_t text_bytes = size_t(o.max_text_bytes);
    // One workspace for the source's encodings and the target text's
    // (score_text's targets, text_prefixes), one at a time.
    const Tokenizer* target = detail::target_tokenizer_of(model);
    p.text_workspace_bytes =
        std::max(tok->encode_workspace_bytes(text_bytes), target->encode_workspace_bytes(text_bytes));
    p.text_workspace = a.reserve<std::byte>(p.text_workspace_bytes);
    p.text_ids_stride = tok->max_encoded_ids(text_bytes);
    p.text_ids = a.reserve<int32_t>(ArenaPlanner::product(B, p.text_ids_stride));
    p.text_out_stride = detail::target_tokenizer_of(model)->max_decoded_bytes(T);
    p.text_out = a.reserve<char>(ArenaPlanner::product(B * K, p.text_out_stride));
    p.text_hypotheses = a.reserve<TextHypothesis>(B * K);
    p.paragraph_pieces = a.reserve<ParagraphPiece>(B);
    if (o.quality_scores || o.alignments) {
      p.token_ranges = a.reserve<ByteRange>(B * K * T);
      p.word_scores = a.reserve<WordScore>(B * K * T);
      // Target hypotheses decoded one at a time; a source twice (whole, and each token prefix).
      p.decode_scratch_bytes = std::max({p.text_out_stride, 2 * tok->max_decoded_bytes(size_t(p.S)),
                                         2 * target->max_decoded_bytes(size_t(p.T))});
      p.decode_scratch = a.reserve<char>(p.decode_scratch_bytes);
    }
    if (o.alignments) {
      p.source_ranges = a.reserve<ByteRange>(B * size_t(p.S));
      p.source_texts = a.reserve<std::string_view>(B);
      p.source_columns = a.reserve<int>(B);
    }
    // Target text is encoded into a scratch row, then kept as [B, T] ids.
    p.target_scratch_stride = target->max_encoded_ids(text_bytes);
    p.target_scratch = a.reserve<int32_t>(p.target_scratch_stride);
    p.target_ids = a.reserve<int32_t>(B * T);
    p.target_id_spans = a.reserve<std::span<const int32_t>>(B);
  }
  if (p.lanes > 0) {
    p.lane_stride =
        p.lane_plan->total == SIZE_MAX ? SIZE_MAX : (p.lane_plan->total + kAlignment - 1) / kAlignment * kAlignment;
    p.lane_offset = a.reserve<std::byte>(ArenaPlanner::product(size_t(p.lanes), p.lane_stride));
  }
  if (p.wide_plan != nullptr) p.wide_offset = a.reserve<std::byte>(p.wide_plan->total);
  if (p.lanes > 0) p.lane_statuses = a.reserve<Status>(size_t(p.lanes));
  p.total = a.size();
  return p;
}

Status check_plan(const SessionPlan& plan) {
  if (plan.total != SIZE_MAX) return {};
  return Status::error(Errc::capacity_exceeded,
                       "the session's memory for these options does not fit in the address space "
                       "(lower max_batch_size, max_text_bytes or the lengths)");
}

}  // namespace detail

Expected<size_t> Session::required_memory(const Model& model, const SessionOptions& options) {
  MT_RETURN_IF_ERROR(options.validate(model.config()));
  const detail::SessionPlan plan = detail::SessionPlan::make(model, options);
  MT_RETURN_IF_ERROR(detail::check_plan(plan));
  return plan.total;
}

}  // namespace mt
