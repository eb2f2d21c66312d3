// Session::translate_text: UTF-8 in, through the model's tokenizer, the
// search, and its target tokenizer, UTF-8 out (one line per hypothesis).
#include <algorithm>

#include "session/session_impl.hpp"
#include "text/unicode_classes.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"
#include "access.hpp"

namespace mt {

namespace {

// The longest prefix of `text` of at most `limit` bytes that ends on a
// UTF-8 character boundary: backing up at most 3 bytes, a character's
// continuation bytes (a longer run of them is no character: invalid bytes
// are cut where they stand, not dropped back to the text before them).
std::string_view utf8_prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && limit - end < 3 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  if ((static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) end = limit;
  return text.substr(0, end);
}

Status no_vocabulary() {
  return Status::error(Errc::invalid_argument,
                       "this model has no vocabulary (or was loaded without it): translate token ids instead");
}

}  // namespace

Status Session::Impl::encode_source_texts(std::span<const std::string_view> sources, const TranslateOptions& options) {
  const detail::Tokenizer* tokenizer = detail::tokenizer_of(*model);
  if (tokenizer == nullptr) return no_vocabulary();
  MT_RETURN_IF_ERROR(options.validate(this->options));
  if (sources.size() > size_t(plan.B)) {
    return Status::error(Errc::capacity_exceeded, "batch of %zu sentences exceeds the session's max_batch_size %d",
                         sources.size(), plan.B);
  }
  int* truncated = at<int>(plan.truncated);
  std::fill_n(truncated, plan.B, 0);
  auto* spans = at<std::span<const int32_t>>(plan.source_spans);
  const std::span<std::byte> workspace{at<std::byte>(plan.text_workspace), plan.text_workspace_bytes};
  for (size_t b = 0; b < sources.size(); ++b) {
    std::string_view text = sources[b];
    if (text.size() > size_t(this->options.max_text_bytes)) {
      if (!options.truncate_long_sources) {
        return Status::error(Errc::capacity_exceeded,
                             "sentence %zu has %zu bytes; the session allows %d (max_text_bytes)", b, text.size(),
                             this->options.max_text_bytes);
      }
      text = utf8_prefix(text, size_t(this->options.max_text_bytes));
      truncated[b] = 1;
    }
    int32_t* ids = at<int32_t>(plan.text_ids) + b * plan.text_ids_stride;
    size_t count = 0;
    const Status encoded = tokenizer->encode(text, workspace, {ids, plan.text_ids_stride}, &count);
    if (!encoded.ok()) return Status::error(encoded.code(), "sentence %zu: %s", b, encoded.message());
    spans[b] = {ids, count};
    if (plan.source_texts != 0) at<std::string_view>(plan.source_texts)[b] = text;
  }
  return {};
}

Status Session::Impl::encode_target_texts(std::span<const std::string_view> texts, const char* what) {
  const detail::Tokenizer* target = detail::target_tokenizer_of(*model);
  if (target == nullptr) return no_vocabulary();
  if (texts.size() > size_t(plan.B)) {
    return Status::error(Errc::capacity_exceeded, "%zu %ss exceed the session's max_batch_size %d", texts.size(), what,
                         plan.B);
  }
  auto* spans = at<std::span<const int32_t>>(plan.target_id_spans);
  int32_t* scratch = at<int32_t>(plan.target_scratch);
  const std::span<std::byte> workspace{at<std::byte>(plan.text_workspace), plan.text_workspace_bytes};
  for (size_t b = 0; b < texts.size(); ++b) {
    if (texts[b].size() > size_t(this->options.max_text_bytes)) {
      return Status::error(Errc::capacity_exceeded, "%s %zu has %zu bytes; the session allows %d (max_text_bytes)",
                           what, b, texts[b].size(), this->options.max_text_bytes);
    }
    size_t count = 0;
    const Status encoded = target->encode(texts[b], workspace, {scratch, plan.target_scratch_stride}, &count);
    if (!encoded.ok()) return Status::error(encoded.code(), "%s %zu: %s", what, b, encoded.message());
    if (count >= size_t(plan.T)) {
      return Status::error(Errc::capacity_exceeded,
                           "%s %zu encodes to %zu tokens; the session allows %d with EOS (max_target_length)", what, b,
                           count, plan.T);
    }
    int32_t* ids = at<int32_t>(plan.target_ids) + b * size_t(plan.T);
    std::copy_n(scratch, count, ids);
    spans[b] = {ids, count};
  }
  return {};
}

Status Session::Impl::add_quality(size_t slot, TextHypothesis& h) {
  const detail::Tokenizer& target = *detail::target_tokenizer_of(*model);
  const size_t n = h.tokens.size(), T = size_t(plan.T);
  ByteRange* ranges = at<ByteRange>(plan.token_ranges) + slot * T;
  WordScore* words = at<WordScore>(plan.word_scores) + slot * T;
  char* scratch = at<char>(plan.decode_scratch);
  // Token i ends where the text of tokens [0, i] ends. A prefix cut inside
  // a character decodes longer (U+FFFD) than the text has there: each end
  // is also held to the ends after it, so the ranges tile the text.
  for (size_t i = 0; i < n; ++i) {
    size_t length = 0;
    MT_RETURN_IF_ERROR(target.decode(h.tokens.first(i + 1), {scratch, plan.text_out_stride}, &length));
    ranges[i].end = std::min(detail::replace_line_breaks(scratch, length), h.text.size());
  }
  if (n > 0) ranges[n - 1].end = h.text.size();
  for (size_t i = n; i-- > 1;) ranges[i - 1].end = std::min(ranges[i - 1].end, ranges[i].end);
  for (size_t i = 0; i < n; ++i) ranges[i].begin = i == 0 ? 0 : ranges[i - 1].end;
  // Words: from a token whose text starts with a space, or the first with any text.
  size_t count = 0, pieces = 0;
  float sum = 0.0f, total = 0.0f;
  const auto close = [&] {
    if (pieces == 0) return;
    words[count - 1].score = sum / float(pieces);
    total += words[count - 1].score;
  };
  for (size_t i = 0; i < n; ++i) {
    const ByteRange r = ranges[i];
    const bool starts = r.end > r.begin && (count == 0 || h.text[r.begin] == ' ');
    if (starts) {
      close();
      words[count++] = {{r.begin, r.end}, 0.0f};
      sum = 0.0f, pieces = 0;
    }
    if (count == 0) continue;  // control tokens before any text belong to no word
    words[count - 1].bytes.end = r.end;
    sum += i < h.token_log_probs.size() ? h.token_log_probs[i] : 0.0f;
    ++pieces;
  }
  close();
  if (count > 0) words[0].bytes.begin = 0;  // with what comes before the first word's text
  h.token_ranges = {ranges, n};
  h.words = {words, count};
  h.quality = count > 0 ? total / float(count) : 0.0f;
  return {};
}

using detail::text::is_blank_or_newline;
using detail::utf8_char_length;

// Where offsets of a decoded text fall in the original it was encoded from,
// asked in ascending order: both texts walked together, equal bytes matched,
// extra whitespace on either side skipped, and any other difference (a
// character normalization rewrote) taken as one character for one.
class DecodedToOriginal {
 public:
  DecodedToOriginal(std::string_view decoded, std::string_view original) : decoded_(decoded), original_(original) {}
  size_t map(size_t offset) {
    const size_t target = std::min(offset, decoded_.size());
    while (i_ < target) {
      if (j_ < original_.size() && decoded_[i_] == original_[j_]) {
        ++i_, ++j_;
      } else if (j_ < original_.size() && is_blank_or_newline(original_[j_])) {
        ++j_;
      } else if (is_blank_or_newline(decoded_[i_]) || j_ >= original_.size()) {
        ++i_;
      } else {
        i_ += utf8_char_length(static_cast<uint8_t>(decoded_[i_]));
        j_ = std::min(original_.size(), j_ + utf8_char_length(static_cast<uint8_t>(original_[j_])));
      }
    }
    return j_;
  }

 private:
  std::string_view decoded_, original_;
  size_t i_ = 0, j_ = 0;
};

namespace detail {

Status token_byte_ranges(const Tokenizer& tokenizer, std::span<const int32_t> ids, std::string_view text,
                         std::span<char> scratch, ByteRange* out) {
  // Half the scratch for the whole decoding, half for each token prefix's.
  const size_t half = scratch.size() / 2;
  size_t decoded_length = 0;
  MT_RETURN_IF_ERROR(tokenizer.decode(ids, {scratch.data(), half}, &decoded_length));
  DecodedToOriginal mapper({scratch.data(), decoded_length}, text);
  // Token i ends where tokens [0, i] decoded end (held to the whole
  // decoding and to the ends before: a byte piece inside a character).
  size_t previous = 0, end = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t length = decoded_length;
    if (!tokenizer.decode(ids.first(i + 1), {scratch.data() + half, half}, &length).ok()) length = decoded_length;
    previous = std::max(previous, std::min(length, decoded_length));
    const size_t begin = end;
    end = std::max(begin, mapper.map(previous));
    out[i] = {begin, end};
  }
  return {};
}

}  // namespace detail

Status Session::Impl::add_source_ranges(int b, size_t prefix) {
  const detail::Tokenizer& source = *detail::tokenizer_of(*model);
  const std::span<const int32_t> ids = at<std::span<const int32_t>>(plan.source_spans)[b];
  const std::string_view text = at<std::string_view>(plan.source_texts)[b];
  ByteRange* ranges = at<ByteRange>(plan.source_ranges) + size_t(b) * size_t(plan.S);
  const int* offsets = at<int>(plan.source_offsets);
  const size_t columns = size_t(offsets[b + 1] - offsets[b]);
  at<int>(plan.source_columns)[b] = int(columns);
  // The columns: the prefix (none before an empty source), the tokens (as
  // many as fit: a truncated source has fewer), EOS (if the model has it).
  if (ids.empty()) prefix = 0;
  const size_t eos = model->config().source_eos || ids.empty() ? 1 : 0;
  const size_t tokens = std::min(ids.size(), columns - std::min(columns, prefix + eos));
  MT_RETURN_IF_ERROR(detail::token_byte_ranges(source, ids.first(tokens), text,
                                               {at<char>(plan.decode_scratch), plan.decode_scratch_bytes},
                                               ranges + prefix));
  for (size_t c = 0; c < prefix; ++c) ranges[c] = {0, 0};
  for (size_t c = prefix + tokens; c < columns; ++c) ranges[c] = {text.size(), text.size()};
  return {};
}

Status Session::Impl::text_results(int B, TextTranslations* results, size_t prefix) {
  const Hypothesis* hyps = at<Hypothesis>(plan.hypotheses);
  TextHypothesis* texts = at<TextHypothesis>(plan.text_hypotheses);
  const int* counts = at<int>(plan.hypothesis_counts);
  for (int b = 0; b < B; ++b) {
    for (int k = 0; k < counts[b]; ++k) {
      const size_t slot = size_t(b) * plan.K + size_t(k);
      char* out = at<char>(plan.text_out) + slot * plan.text_out_stride;
      size_t length = 0;
      MT_RETURN_IF_ERROR(
          detail::target_tokenizer_of(*model)->decode(hyps[slot].tokens, {out, plan.text_out_stride}, &length));
      length = detail::replace_line_breaks(out, length);
      texts[slot] = TextHypothesis{};
      texts[slot].text = {out, length};
      texts[slot].score = hyps[slot].score;
      texts[slot].log_prob = hyps[slot].log_prob;
      texts[slot].tokens = hyps[slot].tokens;
      texts[slot].token_log_probs = hyps[slot].token_log_probs;
      texts[slot].alignment = hyps[slot].alignment;
      if (plan.token_ranges != 0) MT_RETURN_IF_ERROR(add_quality(slot, texts[slot]));
    }
    if (plan.source_ranges != 0) MT_RETURN_IF_ERROR(add_source_ranges(b, prefix));
  }
  if (plan.source_ranges != 0) {
    results->source_ranges_ = at<ByteRange>(plan.source_ranges);
    results->source_columns_ = at<int>(plan.source_columns);
    results->source_stride_ = size_t(plan.S);
  }
  results->hypotheses_ = texts;
  results->counts_ = counts;
  results->truncated_ = at<int>(plan.truncated);
  results->stopped_ = at<int>(plan.stopped);
  results->stride_ = size_t(plan.K);
  results->sentences_ = size_t(B);
  return {};
}

Status Session::translate_text(std::span<const std::string_view> sources, const TranslateOptions& options,
                               TextTranslations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = TextTranslations{};
  MT_RETURN_IF_ERROR(s.encode_source_texts(sources, options));
  TranslateOptions with_prefixes = options;
  if (!options.text_prefixes.empty()) {
    if (options.text_prefixes.size() > sources.size()) {
      return Status::error(Errc::invalid_argument, "%zu text_prefixes for %zu sentences: at most one each",
                           options.text_prefixes.size(), sources.size());
    }
    MT_RETURN_IF_ERROR(s.encode_target_texts(options.text_prefixes, "prefix"));
    with_prefixes.prefixes = {s.at<std::span<const int32_t>>(s.plan.target_id_spans), options.text_prefixes.size()};
  }
  const int B = int(sources.size());
  MT_RETURN_IF_ERROR(s.translate_spans({s.at<std::span<const int32_t>>(s.plan.source_spans), size_t(B)}, with_prefixes));
  if (B == 0) return {};
  return s.text_results(B, results, options.source_prefix.size());
}

}  // namespace mt
