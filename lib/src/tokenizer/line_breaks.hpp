// A translation is one line: whatever a model's pieces, byte pieces or
// unk_surface decode to, the text a session returns holds no line break, so
// "one line out per line in" holds for every loadable model file.
#pragma once

#include <cstddef>

namespace mt::detail {

// Replaces every line break in text[0, length) with one space, in place, and
// returns the new length (never longer). Line breaks: LF, VT, FF, CR (CR LF
// is one break), and U+0085 NEL, U+2028 LINE SEPARATOR, U+2029 PARAGRAPH
// SEPARATOR; Unicode's mandatory breaks (UAX #14 BK, CR, LF, NL).
inline size_t replace_line_breaks(char* text, size_t length) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  size_t out = 0;
  for (size_t i = 0; i < length;) {
    const unsigned char c = byte(i);
    size_t width = 0;  // bytes of the line break at i, 0 if none
    if (c == '\r') {
      width = i + 1 < length && text[i + 1] == '\n' ? 2 : 1;
    } else if (c == '\n' || c == '\v' || c == '\f') {
      width = 1;
    } else if (c == 0xC2 && i + 1 < length && byte(i + 1) == 0x85) {
      width = 2;
    } else if (c == 0xE2 && i + 2 < length && byte(i + 1) == 0x80 && (byte(i + 2) == 0xA8 || byte(i + 2) == 0xA9)) {
      width = 3;
    }
    if (width > 0) {
      text[out++] = ' ';
      i += width;
    } else {
      text[out++] = text[i++];
    }
  }
  return out;
}

}  // namespace mt::detail
