// Session::translate_text: UTF-8 in, through the model's tokenizer, the
// search, and its target tokenizer, UTF-8 out (one line per hypothesis).
#include <algorithm>

#include "session/session_impl.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"
#include "access.hpp"

namespace mt {

namespace {

// The longest prefix of `text` of at most `limit` bytes that ends on a
// UTF-8 character boundary.
std::string_view utf8_prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

Status Session::translate_text(std::span<const std::string_view> sources, const TranslateOptions& options,
                               TextTranslations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = TextTranslations{};
  const detail::Tokenizer* tokenizer = detail::tokenizer_of(*s.model);
  if (tokenizer == nullptr) {
    return Status::error(Errc::invalid_argument,
                         "this model has no vocabulary (or was loaded without it): translate token ids instead");
  }
  MT_RETURN_IF_ERROR(options.validate(s.options));
  if (sources.size() > size_t(s.plan.B)) {
    return Status::error(Errc::capacity_exceeded, "batch of %zu sentences exceeds the session's max_batch_size %d",
                         sources.size(), s.plan.B);
  }
  const int B = int(sources.size());
  int* truncated = s.at<int>(s.plan.truncated);
  std::fill_n(truncated, s.plan.B, 0);
  auto* spans = s.at<std::span<const int32_t>>(s.plan.source_spans);
  const std::span<std::byte> workspace{s.at<std::byte>(s.plan.text_workspace), s.plan.text_workspace_bytes};
  for (int b = 0; b < B; ++b) {
    std::string_view text = sources[size_t(b)];
    if (text.size() > size_t(s.options.max_text_bytes)) {
      if (!options.truncate_long_sources) {
        return Status::error(Errc::capacity_exceeded,
                             "sentence %d has %zu bytes; the session allows %d (max_text_bytes)", b, text.size(),
                             s.options.max_text_bytes);
      }
      text = utf8_prefix(text, size_t(s.options.max_text_bytes));
      truncated[b] = 1;
    }
    int32_t* ids = s.at<int32_t>(s.plan.text_ids) + size_t(b) * s.plan.text_ids_stride;
    size_t count = 0;
    const Status encoded = tokenizer->encode(text, workspace, {ids, s.plan.text_ids_stride}, &count);
    if (!encoded.ok()) return Status::error(encoded.code(), "sentence %d: %s", b, encoded.message());
    spans[b] = {ids, count};
  }
  MT_RETURN_IF_ERROR(s.translate_spans({spans, size_t(B)}, options));
  if (B == 0) return {};

  const Hypothesis* hyps = s.at<Hypothesis>(s.plan.hypotheses);
  TextHypothesis* texts = s.at<TextHypothesis>(s.plan.text_hypotheses);
  const int* counts = s.at<int>(s.plan.hypothesis_counts);
  for (int b = 0; b < B; ++b) {
    for (int k = 0; k < counts[b]; ++k) {
      const size_t slot = size_t(b) * s.plan.K + size_t(k);
      char* out = s.at<char>(s.plan.text_out) + slot * s.plan.text_out_stride;
      size_t length = 0;
      MT_RETURN_IF_ERROR(
          detail::target_tokenizer_of(*s.model)->decode(hyps[slot].tokens, {out, s.plan.text_out_stride}, &length));
      length = detail::replace_line_breaks(out, length);
      texts[slot] = {{out, length}, hyps[slot].score, hyps[slot].log_prob, hyps[slot].tokens};
    }
  }
  results->hypotheses_ = texts;
  results->counts_ = counts;
  results->truncated_ = truncated;
  results->stopped_ = s.at<int>(s.plan.stopped);
  results->stride_ = size_t(s.plan.K);
  results->sentences_ = size_t(B);
  return {};
}

}  // namespace mt
