// Code points forward and backward over UTF-8 within bounds; a malformed
// byte is one U+FFFD of length 1, as the tokenizer reads it.
#pragma once

#include <cstddef>
#include <string_view>

#include "tokenizer/utf8.hpp"

namespace mt::detail::text {

struct CodePoint {
  char32_t c = 0;
  size_t length = 1;
};

// The code point at i (< end).
inline CodePoint decode_at(std::string_view t, size_t i, size_t end) {
  size_t length = 1;
  if (!utf8_decode_valid(t.substr(i, end - i), &length)) return {0xFFFD, 1};
  const auto b = [&](size_t k) { return char32_t(static_cast<unsigned char>(t[i + k])); };
  switch (length) {
    case 1:
      return {b(0), 1};
    case 2:
      return {((b(0) & 0x1F) << 6) | (b(1) & 0x3F), 2};
    case 3:
      return {((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F), 3};
    default:
      return {((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F), 4};
  }
}

// The code point that ends at i (> begin).
inline CodePoint decode_before(std::string_view t, size_t i, size_t begin) {
  size_t s = i - 1;
  while (s > begin && i - s < 4 && (static_cast<unsigned char>(t[s]) & 0xC0) == 0x80) --s;
  const CodePoint cp = decode_at(t, s, i);
  if (s + cp.length == i) return cp;
  return {0xFFFD, 1};  // a stray continuation byte
}

}  // namespace mt::detail::text
