// The UTF-8 rules SentencePiece 0.1.97 applies (util.h): how far one
// character reaches from its first byte, and when a sequence counts as valid.
// Both are copied in behaviour, not code: tokenization must match byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mt::detail {

// U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's visible space.
inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";
// U+FFFD REPLACEMENT CHARACTER: what a malformed byte becomes.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Length of the character starting with `lead`, from its high nibble alone
// (continuation bytes count as 1); callers clip it to the bytes left.
inline size_t utf8_char_length(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Decodes one character of `text` (non-empty). Returns true and its length
// when it is well formed (shortest form, no surrogates, <= U+10FFFF); false
// with length 1 otherwise. An encoded U+FFFD in the input counts as valid.
inline bool utf8_decode_valid(std::string_view text, size_t* length) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const auto trail = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
  const auto valid_cp = [](uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); };
  const size_t n = text.size();
  const uint8_t b0 = byte(0);
  *length = 1;
  if (b0 < 0x80) return true;
  if (n >= 2 && (b0 & 0xE0) == 0xC0) {
    const uint32_t c = ((b0 & 0x1Fu) << 6) | (byte(1) & 0x3Fu);
    if (trail(1) && c >= 0x80 && valid_cp(c)) return *length = 2, true;
  } else if (n >= 3 && (b0 & 0xF0) == 0xE0) {
    const uint32_t c = ((b0 & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
    if (trail(1) && trail(2) && c >= 0x800 && valid_cp(c)) return *length = 3, true;
  } else if (n >= 4 && (b0 & 0xF8) == 0xF0) {
    const uint32_t c = ((b0 & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) | ((byte(2) & 0x3Fu) << 6) | (byte(3) & 0x3Fu);
    if (trail(1) && trail(2) && trail(3) && c >= 0x10000 && valid_cp(c)) return *length = 4, true;
  }
  return false;
}

}  // namespace mt::detail
