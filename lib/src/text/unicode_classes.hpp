// The few Unicode classes the sentence splitter asks about, by code point
// ranges (no tables): enough for the Latin, Greek, Cyrillic, CJK, Hangul and
// other scripts of the languages libmt's models translate. A code point
// outside these ranges counts as neither upper case nor a letter of a
// caseless script, so the splitter never breaks before it.
#pragma once

#include <cstdint>

namespace mt::detail::text {

// Unicode category Lu, for the Latin, Greek, Cyrillic and Armenian blocks and
// fullwidth Latin.
inline bool is_upper(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  if (c >= 0xC0 && c <= 0xDE) return c != 0xD7;
  if (c >= 0x100 && c <= 0x137) return c % 2 == 0;
  if (c >= 0x139 && c <= 0x148) return c % 2 == 1;
  if (c >= 0x14A && c <= 0x177) return c % 2 == 0;
  if (c == 0x178 || c == 0x179 || c == 0x17B || c == 0x17D) return true;
  if (c >= 0x391 && c <= 0x3AB) return c != 0x3A2;
  if (c >= 0x400 && c <= 0x42F) return true;
  if (c >= 0x460 && c <= 0x4FF) return c % 2 == 0 && !(c >= 0x482 && c <= 0x489);
  if (c >= 0x531 && c <= 0x556) return true;
  if (c >= 0x1E00 && c <= 0x1EFF) return c % 2 == 0;
  return c >= 0xFF21 && c <= 0xFF3A;
}

// Unicode category Lo (letters of scripts without case): Hebrew, Arabic,
// Devanagari, Thai, Hangul, kana, CJK ideographs; ª and º.
inline bool is_other_letter(char32_t c) {
  if (c < 0xAA) return false;
  return c == 0xAA || c == 0xBA || (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x63F) ||
         (c >= 0x641 && c <= 0x64A) || (c >= 0x904 && c <= 0x939) || (c >= 0xE01 && c <= 0xE30) ||
         (c >= 0x1100 && c <= 0x11FF) || (c >= 0x3041 && c <= 0x3096) || (c >= 0x30A1 && c <= 0x30FA) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x2FA1F);
}

// What may start a sentence: an upper-case letter or a letter of a caseless script.
inline bool is_sentence_letter(char32_t c) { return is_upper(c) || is_other_letter(c); }

// Unicode categories Pi and Pf: opening and closing quotation marks.
inline bool is_initial_quote(char32_t c) {
  return c == 0xAB || c == 0x2018 || c == 0x201B || c == 0x201C || c == 0x201F || c == 0x2039 || c == 0x2E02 ||
         c == 0x2E04 || c == 0x2E09 || c == 0x2E0C || c == 0x2E1C || c == 0x2E20;
}
inline bool is_final_quote(char32_t c) {
  return c == 0xBB || c == 0x2019 || c == 0x201D || c == 0x203A || c == 0x2E03 || c == 0x2E05 || c == 0x2E0A ||
         c == 0x2E0D || c == 0x2E1D || c == 0x2E21;
}

// A word character (letter, mark, digit, connector): ASCII letters, digits
// and '_', and every other code point outside the punctuation, symbol and
// space blocks.
inline bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
  if (c == 0xD7 || c == 0xF7) return false;
  if (c >= 0x2000 && c <= 0x2BFF) return false;  // punctuation, symbols, arrows, math, boxes
  if (c >= 0x2E00 && c <= 0x2E7F) return false;  // supplemental punctuation
  if (c >= 0x3000 && c <= 0x303F) return false;  // CJK symbols and punctuation
  if (c >= 0xFE30 && c <= 0xFE4F) return false;  // CJK compatibility forms
  if (c >= 0xFF00 && c <= 0xFF0F) return false;  // fullwidth punctuation
  if (c >= 0xFF1A && c <= 0xFF20) return false;
  if (c >= 0xFF3B && c <= 0xFF40) return false;
  if (c >= 0xFF5B && c <= 0xFF65) return false;
  if (c >= 0xFFF0 && c <= 0xFFFF) return false;
  if (c >= 0x1F000 && c <= 0x1FAFF) return false;  // emoji and pictographs
  return true;
}

inline bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }

// The spaces between words (mt/sentence_splitter.hpp): U+0020, tab, CR, VT,
// FF; a line feed is one too, or a paragraph break, depending on the mode.
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
inline bool is_blank_or_newline(char c) { return is_blank(c) || c == '\n'; }

// Full stops of Chinese and Japanese text, which end a sentence with no space after them.
inline bool is_cjk_stop(char32_t c) { return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF0E || c == 0xFF61; }

// What may follow a CJK stop and still belong to its sentence: closing quotes and brackets.
inline bool is_cjk_closer(char32_t c) {
  return c == 0x300D || c == 0x300F || c == 0xFF09 || c == 0x3011 || c == 0x3015 || c == 0x300B || c == 0x3009 ||
         c == 0x201D || c == 0x2019 || c == '"' || c == '\'' || c == ')' || c == ']';
}

}  // namespace mt::detail::text
