// HTML for translation (text/html_markup.hpp) on arbitrary bytes: parsing
// never fails or recurses without bound, and an identity "translation" (each
// block's text linked to itself byte by byte, or links from the input itself,
// out of order and overlapping) restores a document whose tags are the
// input's tags, once each.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "text/html_markup.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// How many '<' of `html` open a tag or a comment that ends with '>' (counted
// roughly, the same way on both sides).
size_t count(std::string_view html, char c) { return size_t(std::count(html.begin(), html.end(), c)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view html(reinterpret_cast<const char*>(data + 1), size - 1);
  const mt::detail::html::Document d = mt::detail::html::Document::parse(html);
  std::vector<std::string> texts(d.block_count());
  std::vector<std::vector<mt::detail::html::Link>> links(d.block_count());
  for (size_t b = 0; b < d.block_count(); ++b) {
    texts[b] = std::string(d.block_text(b));
    const size_t n = texts[b].size();
    if (control % 2 == 0) {
      for (size_t i = 0; i < n; ++i) links[b].push_back({i, i + 1, i, i + 1});
    } else {  // links taken from the input's bytes: any order, overlapping, out of range
      for (size_t i = 0; i + 4 <= html.size() && links[b].size() < 64; i += 4) {
        const size_t m = n + 1;
        links[b].push_back({size_t(uint8_t(html[i])) % m, size_t(uint8_t(html[i + 1])) % m,
                            size_t(uint8_t(html[i + 2])) % m, size_t(uint8_t(html[i + 3])) % m});
        auto& l = links[b].back();
        if (l.source_begin > l.source_end) std::swap(l.source_begin, l.source_end);
        if (l.target_begin > l.target_end) std::swap(l.target_begin, l.target_end);
      }
    }
  }
  const std::string out = d.restore(texts, links);
  // Markup is only ever moved: as many '>' as the input has, or more (text's
  // '>' and '<' are written as entities).
  check(count(out, '<') <= count(html, '<'));
  check(count(out, '>') <= count(html, '>') + count(html, '&') + count(html, '<'));
  return 0;
}
