// Code-point level text helpers with Python's str semantics, so the scorers
// tokenize exactly as sacreBLEU does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mt::eval {

// UTF-8 -> code points; each invalid byte becomes U+FFFD.
std::u32string decode_utf8(std::string_view text);
std::string encode_utf8(std::u32string_view text);

// Python's str.isspace(): the characters str.split() splits on.
bool is_python_space(char32_t c);
// Python's str.split() with no argument.
std::vector<std::u32string> python_split(std::u32string_view text);
// Python's str.strip() / str.rstrip() with no argument.
std::u32string_view python_strip(std::u32string_view text);
std::u32string_view python_rstrip(std::u32string_view text);
// Lowercase by Unicode simple case mapping (Python's str.lower() but for
// the one-to-many mapping of U+0130).
std::u32string to_lower(std::u32string_view text);

}  // namespace mt::eval
