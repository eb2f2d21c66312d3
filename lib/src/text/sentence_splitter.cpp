// The sentence splitter (mt/sentence_splitter.hpp). The Moses rules are four
// regular-expression passes that each turn the spaces between two words into
// a break, then a last pass over the periods that remain; each pass sees the
// breaks of the passes before it. Here every gap between two words is decided
// on its own, from the words beside it: a pass's pattern reaches at most one
// word further on each side (a lone quote between the stop and the next
// sentence), and the earlier passes can only have broken those neighbouring
// gaps in cases the pattern rules out anyway, which the comments of pass3 and
// pass4 spell out. So the walk needs no memory but the text itself.
#include "mt/sentence_splitter.hpp"

#include <cstring>

#include "text/unicode_classes.hpp"
#include "text/utf8_walk.hpp"

namespace mt {

using namespace detail::text;

namespace {

bool is_stop(char32_t c) { return c == '.' || c == '?' || c == '!'; }

// What may stand before a sentence's first letter: quotes, brackets, ¿ ¡.
bool is_opening(char32_t c) {
  return c == '\'' || c == '"' || c == '(' || c == '[' || c == 0xBF || c == 0xA1 || is_initial_quote(c);
}
// The same without '(' (the Moses pass for a stop followed by an opening quote).
bool is_opening_quote(char32_t c) { return c != '(' && is_opening(c); }
// What may follow a sentence's stop: closing quotes and brackets.
bool is_closing(char32_t c) { return c == '\'' || c == '"' || c == ')' || c == ']' || is_final_quote(c); }
// The same with '%' (the Moses pass over periods).
bool is_closing_or_percent(char32_t c) { return c == '%' || is_closing(c); }

struct Word {
  size_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
};

// One paragraph [begin, end) of the text: its words and the breaks between them.
class Paragraph {
 public:
  Paragraph(std::string_view text, size_t begin, size_t end, bool newline_is_space, bool split,
            const NonBreakingPrefixes* prefixes)
      : t_(text), begin_(begin), end_(end), newline_is_space_(newline_is_space), split_(split), prefixes_(prefixes) {}

  bool is_space(size_t i) const { return is_blank(t_[i]) || (newline_is_space_ && t_[i] == '\n'); }

  size_t skip_spaces(size_t p) const {
    while (p < end_ && is_space(p)) ++p;
    return p;
  }

  // The word starting at s (not a space): up to a space, the paragraph's end,
  // or the first letter after a CJK full stop and its closing marks.
  Word word_at(size_t s) const {
    size_t p = s;
    bool after_cjk_stop = false;
    while (p < end_ && !is_space(p)) {
      const CodePoint cp = decode_at(t_, p, end_);
      if (split_ && after_cjk_stop && !is_cjk_stop(cp.c) && !is_cjk_closer(cp.c)) break;
      if (is_cjk_stop(cp.c)) {
        after_cjk_stop = true;
      } else if (!is_cjk_closer(cp.c)) {
        after_cjk_stop = false;
      }
      p += cp.length;
    }
    return {s, p};
  }

  // The word after w across spaces; empty at the paragraph's end.
  Word next_word(const Word& w) const {
    const size_t n = skip_spaces(w.end);
    return n < end_ ? word_at(n) : Word{n, n};
  }

  // The sentence that starts at s (not a space): its end.
  size_t sentence_end(size_t s) const {
    Word w = word_at(s);
    while (split_) {
      if (w.end < end_ && !is_space(w.end)) return w.end;  // a CJK full stop with no space after it
      const Word r = next_word(w);
      if (r.empty() || breaks(w, r)) return w.end;
      w = r;
    }
    const Word last = last_word(s);
    return last.end;
  }

 private:
  char32_t first(const Word& w) const { return decode_at(t_, w.begin, w.end).c; }
  char32_t last(const Word& w) const { return decode_before(t_, w.end, w.begin).c; }

  // Without splitting: the end of the last non-space character.
  Word last_word(size_t s) const {
    size_t e = end_;
    while (e > s && is_space(e - 1)) --e;
    return {s, e};
  }

  // Past the leading characters of w for which `skip` holds.
  template <class Pred>
  size_t skip_front(const Word& w, Pred skip) const {
    size_t p = w.begin;
    while (p < w.end) {
      const CodePoint cp = decode_at(t_, p, w.end);
      if (!skip(cp.c)) break;
      p += cp.length;
    }
    return p;
  }
  // The start of w's trailing run of characters for which `in_run` holds.
  template <class Pred>
  size_t run_back(const Word& w, size_t from, Pred in_run) const {
    size_t p = from;
    while (p > w.begin) {
      const CodePoint cp = decode_before(t_, p, w.begin);
      if (!in_run(cp.c)) break;
      p -= cp.length;
    }
    return p;
  }

  // Opening marks, then an upper-case or caseless letter, within r.
  bool opens_sentence(const Word& r) const {
    const size_t p = skip_front(r, is_opening);
    return p < r.end && is_sentence_letter(decode_at(t_, p, r.end).c);
  }

  // w ends with a CJK full stop and its closing marks.
  bool ends_with_cjk_stop(const Word& w) const {
    const size_t p = run_back(w, w.end, is_cjk_closer);
    return p > w.begin && is_cjk_stop(decode_before(t_, p, w.begin).c);
  }

  bool breaks(const Word& l, const Word& r) const {
    if (ends_with_cjk_stop(l)) return true;
    return pass1_2(l, r) || pass3(l, r) || pass4(l, r) || pass5(l, r);
  }

  // "? The", "! (The", "... The".
  bool pass1_2(const Word& l, const Word& r) const {
    const char32_t c = last(l);
    const bool question = c == '?' || c == '!';
    const bool dots = l.end - l.begin >= 2 && t_[l.end - 1] == '.' && t_[l.end - 2] == '.';
    return (question || dots) && opens_sentence(r);
  }

  // A stop and closing marks, then opening marks and a letter: 'end." The',
  // 'end.) "The', and with a lone closing mark before ('end. " The') or a
  // lone opening mark after ('end." " The'). The neighbouring gaps those
  // reach across consist of lone quotes and brackets, which the first two
  // passes never break.
  bool pass3(const Word& l, const Word& r) const {
    const size_t c = run_back(l, l.end, is_closing);
    if (c == l.end) return false;
    if (c > l.begin) {
      if (!is_stop(decode_before(t_, c, l.begin).c)) return false;
    } else {
      // l is closing marks alone: the word before it must end with a stop.
      if (l.begin == begin_ || !is_space(l.begin - 1)) return false;
      size_t q = l.begin;
      while (q > begin_ && is_space(q - 1)) --q;
      if (q == begin_ || !is_stop(decode_before(t_, q, begin_).c)) return false;
    }
    const size_t p = skip_front(r, is_opening);
    if (p < r.end) return is_sentence_letter(decode_at(t_, p, r.end).c);
    const Word r2 = next_word(r);  // r is opening marks alone
    return !r2.empty() && is_sentence_letter(first(r2));
  }

  // A stop, then at least one opening quote and a letter: 'end. "The',
  // 'end. " The' (unless pass 3 broke after the lone quote, as it does when
  // the quote can close the sentence before).
  bool pass4(const Word& l, const Word& r) const {
    if (!is_stop(last(l))) return false;
    const size_t p = skip_front(r, is_opening_quote);
    if (p == r.begin) return false;
    if (p < r.end) return is_sentence_letter(decode_at(t_, p, r.end).c);
    const Word r2 = next_word(r);
    return !r2.empty() && is_sentence_letter(first(r2)) && !pass3(r, r2);
  }

  // A word ending with a period, before a word that starts (after opening
  // marks) with a letter or a digit: a break, unless the word is a
  // non-breaking prefix ("Dr."), an acronym ("U.S."), or a numeric-only
  // prefix before a number ("No. 5").
  bool pass5(const Word& l, const Word& r) const {
    if (t_[l.end - 1] != '.') return false;
    const size_t d = run_back(l, l.end, [](char32_t c) { return c == '.'; });
    const size_t c = run_back(l, d, is_closing_or_percent);
    const size_t p = run_back(l, c, [](char32_t ch) { return is_word_char(ch) || ch == '.' || ch == '-'; });
    const bool closing = c < d;
    const std::string_view prefix = t_.substr(p, (closing ? c : l.end - 1) - p);
    const NonBreakingPrefixes::Kind kind =
        prefix.empty() || prefixes_ == nullptr || closing ? NonBreakingPrefixes::Kind::none : prefixes_->find(prefix);
    if (kind == NonBreakingPrefixes::Kind::always) return false;
    const size_t u = run_back(l, d, [](char32_t ch) { return is_sentence_letter(ch) || ch == '-'; });
    if (u < d && u > l.begin && t_[u - 1] == '.') return false;  // an acronym: U.S.
    const size_t q = skip_front(r, is_opening);
    if (q == r.end) return false;
    const char32_t next = decode_at(t_, q, r.end).c;
    if (!is_sentence_letter(next) && !is_ascii_digit(next)) return false;
    return !(kind == NonBreakingPrefixes::Kind::numeric_only && is_ascii_digit(first(r)));
  }

  std::string_view t_;
  size_t begin_, end_;
  bool newline_is_space_;
  bool split_;
  const NonBreakingPrefixes* prefixes_;
};

// wrapped: the paragraph from `begin` ends at the first line feed that a
// blank line follows (or at the text's end).
size_t wrapped_paragraph_end(std::string_view t, size_t begin) {
  size_t i = begin;
  while (true) {
    const void* found = std::memchr(t.data() + i, '\n', t.size() - i);
    if (found == nullptr) return t.size();
    const size_t nl = size_t(static_cast<const char*>(found) - t.data());
    size_t j = nl + 1;
    while (j < t.size() && is_blank(t[j])) ++j;
    if (j == t.size() || t[j] == '\n') return nl;
    i = j;
  }
}

}  // namespace

bool SentenceSplitter::next(std::string_view text, Cursor* cursor, SentenceRange* sentence) const {
  Cursor& c = *cursor;
  while (c.position < text.size()) {
    if (!c.in_paragraph) {
      c.paragraph_end = text.size();
      if (mode_ == SplitMode::lines) {
        const void* nl = std::memchr(text.data() + c.paragraph_begin, '\n', text.size() - c.paragraph_begin);
        if (nl != nullptr) c.paragraph_end = size_t(static_cast<const char*>(nl) - text.data());
      } else if (mode_ == SplitMode::wrapped) {
        c.paragraph_end = wrapped_paragraph_end(text, c.paragraph_begin);
      }
      c.in_paragraph = true;
    }
    const size_t end = c.paragraph_end;
    const Paragraph paragraph(text, c.paragraph_begin, end, mode_ != SplitMode::lines, mode_ != SplitMode::sentence,
                              prefixes_);
    const size_t start = paragraph.skip_spaces(c.position);
    if (start < end) {
      const size_t stop = paragraph.sentence_end(start);
      *sentence = {start, stop, c.paragraph};
      c.position = stop;
      c.paragraph_has_sentence = true;
      return true;
    }
    // The paragraph is done: on to the next.
    if (end == text.size()) break;
    size_t next = end + 1;
    if (mode_ == SplitMode::lines) {
      ++c.paragraph;
    } else {
      while (next < text.size() && is_blank_or_newline(text[next])) ++next;
      if (c.paragraph_has_sentence) ++c.paragraph;
    }
    c.paragraph_has_sentence = false;
    c.position = c.paragraph_begin = next;
    c.in_paragraph = false;
  }
  c.position = text.size();
  return false;
}

std::vector<SentenceRange> SentenceSplitter::split(std::string_view text) const {
  std::vector<SentenceRange> out;
  Cursor cursor;
  SentenceRange s;
  while (next(text, &cursor, &s)) out.push_back(s);
  return out;
}

size_t SentenceSplitter::count(std::string_view text) const {
  size_t n = 0;
  Cursor cursor;
  SentenceRange s;
  while (next(text, &cursor, &s)) ++n;
  return n;
}

Expected<SplitMode> parse_split_mode(std::string_view name) {
  if (name == "sentence") return SplitMode::sentence;
  if (name == "lines") return SplitMode::lines;
  if (name == "wrapped") return SplitMode::wrapped;
  return Status::error(Errc::invalid_argument, "unknown split mode '%.*s': sentence, lines or wrapped",
                       int(name.size()), name.data());
}

const char* split_mode_name(SplitMode mode) {
  switch (mode) {
    case SplitMode::sentence:
      return "sentence";
    case SplitMode::lines:
      return "lines";
    case SplitMode::wrapped:
      return "wrapped";
  }
  return "unknown";
}

}  // namespace mt
