// Session::translate_paragraphs: a text split into sentences, translated in
// batches, reassembled around the source's own bytes between sentences.
// Sentences over the session's limits are cut into pieces between words,
// each small enough to translate, instead of being refused.
#include <algorithm>

#include "access.hpp"
#include "session/session_impl.hpp"
#include "text/unicode_classes.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt {

namespace {

using detail::text::is_blank_or_newline;

// The last place at or before `limit` (and after `from`) to end a piece: the
// start of a space run; else a character boundary; never `from` itself
// while a character remains.
size_t piece_cut(std::string_view text, size_t from, size_t limit) {
  const auto continuation = [&](size_t p) { return (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80; };
  for (size_t p = limit; p > from; --p) {
    if (is_blank_or_newline(text[p]) && !is_blank_or_newline(text[p - 1])) return p;
  }
  size_t p = limit;
  while (p > from && continuation(p)) --p;
  if (p > from) return p;
  // No character starts in (from, limit]: the one at `from` runs past the
  // limit (its end, at most 4 bytes on), or the bytes are a run of
  // continuation bytes, no character, which a whole character's 4 bytes do
  // not end (cut at the limit: invalid bytes are text too, never a reason
  // to refuse it).
  p = from + 1;
  while (p < text.size() && p < from + 4 && continuation(p)) ++p;
  return std::max(p, limit);
}

class StringSink final : public ParagraphSink {
 public:
  explicit StringSink(ParagraphTranslation* out) : out_(out) {}
  Status write(std::string_view bytes) override {
    out_->text.append(bytes);
    return {};
  }
  Status sentence(const TranslatedSentence& s) override {
    out_->sentences.push_back(s);
    return {};
  }

 private:
  ParagraphTranslation* out_;
};

}  // namespace

Expected<NonBreakingPrefixes> model_nonbreaking_prefixes(const Model& model) {
  const Status& status = detail::Access::sentence_prefixes_status(model);
  if (!status.ok()) return status;
  return detail::Access::sentence_prefixes(model);
}

Status Session::translate_paragraphs(std::string_view text, const ParagraphOptions& paragraphs,
                                     const TranslateOptions& options, ParagraphSink* sink) {
  Impl& s = *impl_;
  if (sink == nullptr) return Status::error(Errc::invalid_argument, "sink must not be null");
  if (paragraphs.format == TextFormat::html) return detail::translate_html(*this, text, paragraphs, options, sink);
  if (paragraphs.format != TextFormat::plain) {
    return Status::error(Errc::invalid_argument, "unknown text format %d", int(paragraphs.format));
  }
  const detail::Tokenizer* tokenizer = detail::tokenizer_of(*s.model);
  if (tokenizer == nullptr) {
    return Status::error(Errc::invalid_argument,
                         "this model has no vocabulary (or was loaded without it): translate token ids instead");
  }
  if (paragraphs.mode != SplitMode::sentence && paragraphs.mode != SplitMode::lines &&
      paragraphs.mode != SplitMode::wrapped) {
    return Status::error(Errc::invalid_argument, "unknown split mode %d", int(paragraphs.mode));
  }
  MT_RETURN_IF_ERROR(options.validate(s.options));
  if (options.on_token || options.cancel != nullptr) {
    return Status::error(Errc::unsupported, "translate_paragraphs does not take on_token or cancel yet");
  }
  if (!options.prefixes.empty() || !options.text_prefixes.empty() || options.alternatives > 0) {
    return Status::error(Errc::invalid_argument,
                         "translate_paragraphs takes no prefixes or alternatives (they belong to one sentence)");
  }
  TranslateOptions one = options;  // each sentence's best hypothesis is all that is written
  one.num_hypotheses = 1;
  one.truncate_long_sources = true;  // only a single character too long for a source is ever cut

  const SentenceSplitter splitter(paragraphs.mode,
                                  paragraphs.prefixes != nullptr ? paragraphs.prefixes : s.sentence_prefixes);
  SentenceSplitter::Cursor cursor;
  SentenceRange sentence;
  bool have = splitter.next(text, &cursor, &sentence);
  size_t piece_from = sentence.begin;

  const size_t room = size_t(s.plan.S) - 1 - options.source_prefix.size();  // tokens a source may have
  const size_t max_bytes = size_t(s.options.max_text_bytes);
  const std::span<std::byte> workspace{s.at<std::byte>(s.plan.text_workspace), s.plan.text_workspace_bytes};
  auto* spans = s.at<std::span<const int32_t>>(s.plan.source_spans);
  auto* pieces = s.at<detail::ParagraphPiece>(s.plan.paragraph_pieces);
  const detail::Tokenizer* target = detail::target_tokenizer_of(*s.model);

  size_t written = 0;  // bytes given to the sink
  size_t copied = 0;   // source bytes before this are written (or translated)
  TranslatedSentence record;
  const auto write = [&](std::string_view bytes) -> Status {
    if (bytes.empty()) return {};
    written += bytes.size();
    return sink->write(bytes);
  };

  while (have) {
    // A batch: the next sentences, or pieces of one.
    int n = 0;
    while (n < s.plan.B && have) {
      int32_t* ids = s.at<int32_t>(s.plan.text_ids) + size_t(n) * s.plan.text_ids_stride;
      const std::span<int32_t> slot{ids, s.plan.text_ids_stride};
      size_t end = std::min(sentence.end, piece_from + max_bytes);
      if (end < sentence.end) end = piece_cut(text, piece_from, end);
      size_t count = 0;
      bool cut = false;
      while (true) {
        MT_RETURN_IF_ERROR(tokenizer->encode(text.substr(piece_from, end - piece_from), workspace, slot, &count));
        if (count <= room) break;
        // Too many tokens: a shorter piece, in proportion.
        const size_t bytes = end - piece_from;
        const size_t shorter = std::min(bytes - 1, bytes * room / count * 9 / 10);
        const size_t next_end = piece_cut(text, piece_from, piece_from + std::max<size_t>(shorter, 1));
        if (next_end >= end) {  // one character that is too long: cut its tokens
          count = room;
          cut = true;
          break;
        }
        end = next_end;
      }
      spans[n] = {ids, count};
      const bool first = piece_from == sentence.begin;
      size_t next_from = end;
      while (next_from < sentence.end && is_blank_or_newline(text[next_from])) ++next_from;
      const bool last = next_from >= sentence.end;
      pieces[n] = {sentence, piece_from, end, first, last, cut};
      ++n;
      if (last) {
        have = splitter.next(text, &cursor, &sentence);
        piece_from = sentence.begin;
      } else {
        piece_from = next_from;
      }
    }
    MT_RETURN_IF_ERROR(s.translate_spans({spans, size_t(n)}, one));

    const Hypothesis* hyps = s.at<Hypothesis>(s.plan.hypotheses);
    char* out = s.at<char>(s.plan.text_out);
    for (int i = 0; i < n; ++i) {
      const detail::ParagraphPiece& piece = pieces[i];
      if (piece.first) {
        MT_RETURN_IF_ERROR(write(text.substr(copied, piece.sentence.begin - copied)));
        record = {piece.sentence.begin, piece.sentence.end, written, written, piece.sentence.paragraph, 0, false};
      }
      size_t length = 0;
      MT_RETURN_IF_ERROR(target->decode(hyps[size_t(i) * s.plan.K].tokens, {out, s.plan.text_out_stride}, &length));
      length = detail::replace_line_breaks(out, length);
      if (!piece.first && length > 0 && written > record.target_begin) MT_RETURN_IF_ERROR(write(" "));
      const size_t target_begin = written;
      MT_RETURN_IF_ERROR(write({out, length}));
      if (s.piece_observer != nullptr) {
        MT_RETURN_IF_ERROR(
            s.piece_observer->piece(piece, spans[i], target_begin, {out, length}, hyps[size_t(i) * s.plan.K]));
      }
      ++record.pieces;
      record.truncated = record.truncated || piece.truncated;
      if (piece.last) {
        record.target_end = written;
        copied = piece.sentence.end;
        MT_RETURN_IF_ERROR(sink->sentence(record));
      }
    }
  }
  return write(text.substr(copied));
}

Expected<ParagraphTranslation> Session::translate_paragraphs(std::string_view text, const ParagraphOptions& paragraphs,
                                                             const TranslateOptions& options) {
  ParagraphTranslation result;
  StringSink sink(&result);
  MT_RETURN_IF_ERROR(translate_paragraphs(text, paragraphs, options, &sink));
  return result;
}

}  // namespace mt
