// translate_paragraphs with ParagraphOptions::format html: the document's
// blocks of text (text/html_markup.hpp) translated as the lines of one plain
// text, each piece's word alignment turned into links between source and
// target bytes, and the markup put back around the translations by them.
#include <algorithm>
#include <string>
#include <vector>

#include "access.hpp"
#include "session/session_impl.hpp"
#include "text/html_markup.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt {

namespace {

// Collects each translated piece's links, in the joined text's bytes.
class LinkCollector final : public detail::PieceObserver {
 public:
  LinkCollector(const Model& model, std::string_view joined, std::span<char> scratch, size_t prefix)
      : source_(*detail::tokenizer_of(model)),
        target_(*detail::target_tokenizer_of(model)),
        joined_(joined),
        scratch_(scratch),
        prefix_(prefix) {}

  Status piece(const detail::ParagraphPiece& piece, std::span<const int32_t> source_ids, size_t target_begin,
               std::string_view target_text, const Hypothesis& h) override {
    const std::string_view source_text = joined_.substr(piece.begin, piece.end - piece.begin);
    source_ranges_.resize(source_ids.size());
    target_ranges_.resize(h.tokens.size());
    MT_RETURN_IF_ERROR(detail::token_byte_ranges(source_, source_ids, source_text, scratch_, source_ranges_.data()));
    MT_RETURN_IF_ERROR(detail::token_byte_ranges(target_, h.tokens, target_text, scratch_, target_ranges_.data()));
    // A truncated piece's columns hold fewer tokens than it has ids.
    const size_t tokens = std::min(source_ids.size(), h.alignment.columns - std::min(h.alignment.columns, prefix_));
    // Each target token to the source token it attends to most; of the
    // target tokens that pick one source token, only the one attending to
    // it most (attention also links a German article to its noun: the
    // noun's own word is the one markup should wrap).
    best_row_.assign(tokens, -1);
    for (size_t t = 0; t < h.tokens.size() && t < h.alignment.rows; ++t) {
      const size_t column = h.alignment.argmax(t);
      if (column < prefix_ || column >= prefix_ + tokens) continue;  // a language id, EOS
      int& best = best_row_[column - prefix_];
      if (best < 0 || h.alignment(t, column) > h.alignment(size_t(best), column)) best = int(t);
    }
    for (size_t c = 0; c < tokens; ++c) {
      if (best_row_[c] < 0) continue;
      const ByteRange s = source_ranges_[c], g = target_ranges_[size_t(best_row_[c])];
      links_.push_back({piece.begin + s.begin, piece.begin + s.end, target_begin + g.begin, target_begin + g.end});
    }
    return {};
  }

  std::vector<detail::html::Link>& links() { return links_; }

 private:
  const detail::Tokenizer& source_;
  const detail::Tokenizer& target_;
  std::string_view joined_;
  std::span<char> scratch_;
  size_t prefix_;
  std::vector<ByteRange> source_ranges_, target_ranges_;
  std::vector<int> best_row_;
  std::vector<detail::html::Link> links_;
};

class StringOnlySink final : public ParagraphSink {
 public:
  Status write(std::string_view bytes) override {
    text.append(bytes);
    return {};
  }
  Status sentence(const TranslatedSentence&) override { return {}; }
  std::string text;
};

// Sets the session's piece observer for its lifetime.
class Observing {
 public:
  Observing(Session::Impl& s, detail::PieceObserver* o) : s_(s) { s_.piece_observer = o; }
  ~Observing() { s_.piece_observer = nullptr; }
  Observing(const Observing&) = delete;
  Observing& operator=(const Observing&) = delete;

 private:
  Session::Impl& s_;
};

}  // namespace

namespace detail {

Status translate_html(Session& session, std::string_view text, const ParagraphOptions& paragraphs,
                      const TranslateOptions& options, ParagraphSink* sink) {
  Session::Impl& s = *Access::impl(session);
  const Model* model = s.model.get();
  const SessionPlan& plan = s.plan;
  if (plan.finished_alignments == 0) {
    return Status::error(Errc::invalid_argument,
                         "format html places markup by word alignments: create the session with "
                         "SessionOptions::alignments");
  }
  if (detail::tokenizer_of(*model) == nullptr) {
    return Status::error(Errc::invalid_argument, "format html translates text: this model has no vocabulary");
  }
  const detail::html::Document document = detail::html::Document::parse(text);
  // The translatable blocks as the lines of one text (their text has no line breaks).
  std::string joined;
  std::vector<size_t> block_of_line, line_begin;
  for (size_t b = 0; b < document.block_count(); ++b) {
    if (!document.translatable(b)) continue;
    block_of_line.push_back(b);
    line_begin.push_back(joined.size());
    joined.append(document.block_text(b));
    joined.push_back('\n');
  }
  if (!joined.empty()) joined.pop_back();
  LinkCollector links(*model, joined, {s.at<char>(plan.decode_scratch), plan.decode_scratch_bytes},
                      options.source_prefix.size());
  StringOnlySink translated;
  ParagraphOptions plain = paragraphs;
  plain.format = TextFormat::plain;
  plain.mode = SplitMode::lines;
  {
    const Observing observing(s, &links);
    MT_RETURN_IF_ERROR(session.translate_paragraphs(joined, plain, options, &translated));
  }
  // Each line's translation, and its links in its own bytes.
  const size_t lines = block_of_line.size();
  std::vector<std::string> translations(document.block_count());
  std::vector<std::vector<detail::html::Link>> block_links(document.block_count());
  std::vector<size_t> target_begin(lines + 1, translated.text.size());
  size_t at = 0;
  for (size_t l = 0; l < lines; ++l) {
    const size_t end = l + 1 < lines ? translated.text.find('\n', at) : translated.text.size();
    target_begin[l] = at;
    translations[block_of_line[l]] = translated.text.substr(at, end - at);
    at = end + 1;
  }
  for (const detail::html::Link& link : links.links()) {
    // The line of its source bytes; the link is kept only if its target is in that line's translation.
    const size_t l = size_t(std::upper_bound(line_begin.begin(), line_begin.end(), link.source_begin) -
                            line_begin.begin()) - 1;
    const size_t b = block_of_line[l];
    if (link.target_begin < target_begin[l] || link.target_end > target_begin[l] + translations[b].size()) continue;
    block_links[b].push_back({link.source_begin - line_begin[l], link.source_end - line_begin[l],
                              link.target_begin - target_begin[l], link.target_end - target_begin[l]});
  }
  return sink->write(document.restore(translations, block_links));
}

}  // namespace detail

}  // namespace mt
