// Marian language codes (">>fra<<") as transformers' MarianTokenizer reads
// them (remove_language_code, 4.45): the regex >>.+<< (greedy; '.' is any
// character but a line feed) is removed wherever it matches, and the match at
// the very start of the text is the code, a token of its own.
#pragma once

#include <cstring>
#include <string_view>

namespace mt::detail {

// Writes `text` without its language codes to `out` (room for text.size()
// bytes) and returns the length; `code` gets the leading code, or empty.
// ASCII delimiters never occur inside a UTF-8 sequence, so bytes do what
// Python's re does on code points.
inline size_t strip_language_codes(std::string_view text, char* out, std::string_view* code) {
  *code = {};
  size_t n = 0, pos = 0;
  while (pos < text.size()) {
    if (text.compare(pos, 2, ">>") == 0) {
      size_t line_end = text.find('\n', pos);
      if (line_end == std::string_view::npos) line_end = text.size();
      // Greedy: the last "<<" of the line, with at least one character after ">>".
      const size_t close = line_end >= 2 ? text.substr(0, line_end).rfind("<<") : std::string_view::npos;
      if (close != std::string_view::npos && close >= pos + 3) {
        if (pos == 0) *code = text.substr(0, close + 2);
        pos = close + 2;
        continue;
      }
    }
    out[n++] = text[pos++];
  }
  return n;
}

}  // namespace mt::detail
