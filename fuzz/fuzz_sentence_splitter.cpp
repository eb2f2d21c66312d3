// The sentence splitter on arbitrary bytes, in every mode, with libmt's
// English list, no list, or a list parsed from the input itself: sentences
// are ordered, disjoint, inside the text, without spaces at either end, and
// every byte outside them is a space or a line feed; count() agrees.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "mt/sentence_splitter.hpp"

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n'; }

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const mt::NonBreakingPrefixes english = *mt::NonBreakingPrefixes::builtin("en");
  const uint8_t control = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const mt::SplitMode mode = static_cast<mt::SplitMode>(control % 3);
  mt::NonBreakingPrefixes own;
  const mt::NonBreakingPrefixes* prefixes = nullptr;
  if ((control >> 2) % 3 == 1) prefixes = &english;
  if ((control >> 2) % 3 == 2) {
    // The input's first line is a prefix list, the rest the text.
    const size_t nl = text.find('\n');
    const std::string_view list = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (auto parsed = mt::NonBreakingPrefixes::parse(list)) own = std::move(parsed.value());
    prefixes = &own;
  }
  const mt::SentenceSplitter splitter(mode, prefixes);
  mt::SentenceSplitter::Cursor cursor;
  mt::SentenceRange s;
  size_t at = 0, count = 0, paragraph = 0;
  while (splitter.next(text, &cursor, &s)) {
    check(s.begin >= at && s.begin < s.end && s.end <= text.size());
    check(!is_space(text[s.begin]) && !is_space(text[s.end - 1]));
    check(s.paragraph >= paragraph);
    for (size_t i = at; i < s.begin; ++i) check(is_space(text[i]));
    if (mode == mt::SplitMode::lines) {
      for (size_t i = s.begin; i < s.end; ++i) check(text[i] != '\n');
    }
    at = s.end;
    paragraph = s.paragraph;
    ++count;
  }
  for (size_t i = at; i < text.size(); ++i) check(is_space(text[i]));
  check(splitter.count(text) == count);
  if (mode == mt::SplitMode::sentence) check(count <= 1);
  return 0;
}
