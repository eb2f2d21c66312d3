#include "text/html_markup.hpp"

#include "text/unicode_classes.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

namespace mt::detail::html {

namespace {

using text::is_blank_or_newline;
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == ':' || c == '.';
}
char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

bool equal_lower(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != b[i]) return false;
  }
  return true;
}

template <size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return equal_lower(name, n); });
}

// Phrasing elements that stay inside a sentence (HTML's "phrasing content",
// those that wrap words).
constexpr std::array<std::string_view, 31> kInline = {
    "a",    "abbr", "b",     "bdi",   "bdo",  "cite", "data", "dfn",    "em",  "font", "i",
    "ins",  "del",  "mark",  "q",     "s",    "small", "span", "strong", "sub", "sup",  "time",
    "u",    "label", "big",  "tt",    "nobr", "ruby", "rt",   "rp",     "wbr"};
// Void elements: no close tag, no content. Those that sit inside a sentence are points.
constexpr std::array<std::string_view, 14> kVoid = {"area", "base", "br",    "col",   "embed", "hr",    "img",
                                                    "input", "link", "meta", "param", "source", "track", "wbr"};
constexpr std::array<std::string_view, 4> kInlineVoid = {"br", "img", "input", "wbr"};
// Elements whose content is not text to translate, kept whole as one point.
constexpr std::array<std::string_view, 6> kKeptWhole = {"code", "kbd", "samp", "var", "math", "svg"};
// Elements whose content is raw text (never markup): copied as they are, ending a block.
constexpr std::array<std::string_view, 4> kRaw = {"script", "style", "textarea", "title"};

// The end of the tag starting at `at` ('<'): the byte after its '>', quoted
// attribute values skipped; npos when it never ends.
size_t tag_end(std::string_view s, size_t at) {
  char quote = 0;
  for (size_t i = at + 1; i < s.size(); ++i) {
    if (quote != 0) {
      if (s[i] == quote) quote = 0;
    } else if (s[i] == '"' || s[i] == '\'') {
      quote = s[i];
    } else if (s[i] == '>') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The first case-insensitive "</name" at or after `from` (npos: none).
size_t find_close(std::string_view s, size_t from, std::string_view name) {
  for (size_t i = s.find("</", from); i != std::string_view::npos; i = s.find("</", i + 1)) {
    if (i + 2 + name.size() <= s.size() && equal_lower(s.substr(i + 2, name.size()), name) &&
        (i + 2 + name.size() == s.size() || !is_name_char(s[i + 2 + name.size()])))
      return i;
  }
  return std::string_view::npos;
}

void append_utf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(char(c));
  } else if (c < 0x800) {
    out->push_back(char(0xC0 | (c >> 6)));
    out->push_back(char(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(char(0xE0 | (c >> 12)));
    out->push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(char(0x80 | (c & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (c >> 18)));
    out->push_back(char(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(char(0x80 | (c & 0x3F)));
  }
}

struct Entity {
  std::string_view name;
  char32_t code;
};
constexpr std::array<Entity, 16> kEntities = {{{"amp", '&'},
                                               {"lt", '<'},
                                               {"gt", '>'},
                                               {"quot", '"'},
                                               {"apos", '\''},
                                               {"nbsp", 0xA0},
                                               {"copy", 0xA9},
                                               {"reg", 0xAE},
                                               {"trade", 0x2122},
                                               {"mdash", 0x2014},
                                               {"ndash", 0x2013},
                                               {"hellip", 0x2026},
                                               {"laquo", 0xAB},
                                               {"raquo", 0xBB},
                                               {"euro", 0x20AC},
                                               {"shy", 0xAD}}};

// Decodes the entity at `at` ('&') into `out`; returns the bytes it took
// (0: not an entity libmt knows: the '&' is text).
size_t decode_entity(std::string_view s, size_t at, std::string* out) {
  const size_t semicolon = s.find(';', at);
  if (semicolon == std::string_view::npos || semicolon - at > 12) return 0;
  const std::string_view body = s.substr(at + 1, semicolon - at - 1);
  if (body.size() >= 2 && body[0] == '#') {
    const bool hex = body[1] == 'x' || body[1] == 'X';
    uint32_t value = 0;
    const std::string_view digits = body.substr(hex ? 2 : 1);
    if (digits.empty() || digits.size() > 7) return 0;
    for (const char c : digits) {
      const int d = c >= '0' && c <= '9' ? c - '0' : hex && lower(c) >= 'a' && lower(c) <= 'f' ? lower(c) - 'a' + 10 : -1;
      if (d < 0) return 0;
      value = value * (hex ? 16 : 10) + uint32_t(d);
    }
    if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) value = 0xFFFD;
    // As the same characters written out are (the block's text is one
    // line: blocks are translated one per line).
    if (value == '\n' || value == '\r' || value == '\t' || value == '\f') value = ' ';
    append_utf8(char32_t(value), out);
    return semicolon - at + 1;
  }
  for (const Entity& e : kEntities) {
    if (body == e.name) {
      append_utf8(e.code, out);
      return semicolon - at + 1;
    }
  }
  return 0;
}

}  // namespace

void append_escaped(std::string_view text, std::string* out) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '&') {
      out->append("&amp;");
    } else if (c == '<') {
      out->append("&lt;");
    } else if (c == '>') {
      out->append("&gt;");
    } else if (c == '\xC2' && i + 1 < text.size() && text[i + 1] == '\xA0') {
      out->append("&nbsp;");
      ++i;
    } else {
      out->push_back(c);
    }
  }
}

Document Document::parse(std::string_view html) {
  Document d;
  d.input_ = html;
  Block block;
  std::vector<int> open;            // the block's open elements, innermost last
  std::vector<std::string_view> names;  // their names
  size_t verbatim_from = 0;         // input bytes not in a block yet, to copy as they are
  bool in_block = false;

  const auto start_block = [&](size_t at) {
    if (in_block) return;
    if (at > verbatim_from) d.segments_.push_back({verbatim_from, at, -1});
    block = Block{};
    block.input_begin = at;
    open.clear();
    names.clear();
    in_block = true;
  };
  const auto end_block = [&](size_t at) {
    if (!in_block) {
      return;
    }
    block.input_end = at;
    for (const int e : open) block.items[size_t(e)].paired = false;  // unclosed: points where they opened
    for (Item& item : block.items) {  // a point's content belongs to its parent
      if (!item.paired) item.text_end = item.text_begin;
      while (item.parent >= 0 && !block.items[size_t(item.parent)].paired) item.parent = block.items[size_t(item.parent)].parent;
    }
    block.translatable = std::any_of(block.text.begin(), block.text.end(), [](char c) { return !is_blank_or_newline(c); });
    d.segments_.push_back({block.input_begin, at, int(d.blocks_.size())});
    d.blocks_.push_back(std::move(block));
    verbatim_from = at;
    in_block = false;
  };
  const auto add_point = [&](size_t begin, size_t end) {
    Item item;
    item.markup_begin = begin, item.markup_end = end;
    item.text_begin = item.text_end = block.text.size();
    item.parent = open.empty() ? -1 : open.back();
    block.items.push_back(item);
  };

  size_t i = 0;
  while (i < html.size()) {
    const char c = html[i];
    if (c == '<' && i + 1 < html.size() &&
        (std::isalpha(static_cast<unsigned char>(html[i + 1])) || html[i + 1] == '/' || html[i + 1] == '!' ||
         html[i + 1] == '?')) {
      // Comments, declarations, processing instructions: kept as they are.
      if (html.compare(i, 4, "<!--") == 0 || html[i + 1] == '!' || html[i + 1] == '?') {
        size_t end = html.compare(i, 4, "<!--") == 0 ? html.find("-->", i + 4) : html.find('>', i);
        end = end == std::string_view::npos ? html.size() : end + (html.compare(i, 4, "<!--") == 0 ? 3 : 1);
        if (in_block) {
          add_point(i, end);  // a comment inside a sentence stays with its neighbours
        }
        i = end;
        continue;
      }
      const size_t end = tag_end(html, i);
      if (end == std::string_view::npos) {  // never closed: the rest is text
        start_block(i);
        block.text.push_back('<');
        ++i;
        continue;
      }
      const bool closing = html[i + 1] == '/';
      size_t n = i + (closing ? 2 : 1);
      const size_t name_begin = n;
      while (n < end && is_name_char(html[n])) ++n;
      const std::string_view name = html.substr(name_begin, n - name_begin);
      const bool self_closing = end >= 2 && html[end - 2] == '/';
      if (!closing && one_of(name, kRaw)) {  // raw text up to its close tag, copied
        end_block(i);
        const size_t close = find_close(html, end, name);
        const size_t close_end = close == std::string_view::npos ? html.size() : tag_end(html, close);
        i = close_end == std::string_view::npos ? html.size() : close_end;
        continue;
      }
      if (!closing && one_of(name, kKeptWhole)) {  // the whole element, one point
        const size_t close = find_close(html, end, name);
        size_t whole = close == std::string_view::npos ? std::string_view::npos : tag_end(html, close);
        if (self_closing) whole = end;
        if (whole == std::string_view::npos) whole = end;  // unclosed: the tag alone
        start_block(i);
        add_point(i, whole);
        i = whole;
        continue;
      }
      const bool inline_tag = one_of(name, kInline) || one_of(name, kInlineVoid);
      if (!inline_tag) {  // a block-level tag: copied, and ends the block
        end_block(i);
        i = end;
        continue;
      }
      start_block(i);
      if (closing) {
        const auto at = std::find_if(names.rbegin(), names.rend(), [&](std::string_view o) {
          return o.size() == name.size() && std::equal(o.begin(), o.end(), name.begin(), [](char a, char b) {
                   return lower(a) == lower(b);
                 });
        });
        if (at == names.rend()) {
          add_point(i, end);  // a close tag without its open: a point
        } else {
          const size_t depth = size_t(names.rend() - at) - 1;
          for (size_t k = depth + 1; k < open.size(); ++k) block.items[size_t(open[k])].paired = false;
          Item& item = block.items[size_t(open[depth])];
          item.close_begin = i, item.close_end = end;
          item.text_end = block.text.size();
          open.resize(depth);
          names.resize(depth);
        }
      } else if (self_closing || one_of(name, kVoid) || open.size() >= kMaxDepth) {
        add_point(i, end);
      } else {
        add_point(i, end);
        block.items.back().paired = true;  // until its close tag fails to come
        open.push_back(int(block.items.size()) - 1);
        names.push_back(name);
      }
      i = end;
      continue;
    }
    start_block(i);
    if (c == '&') {
      if (const size_t took = decode_entity(html, i, &block.text); took > 0) {
        i += took;
        continue;
      }
    }
    block.text.push_back(c == '\n' || c == '\r' || c == '\t' || c == '\f' ? ' ' : c);
    ++i;
  }
  end_block(html.size());
  if (html.size() > verbatim_from) d.segments_.push_back({verbatim_from, html.size(), -1});
  return d;
}

// An item's place in the translation: [begin, end) of its block's
// translation (a point: begin == end), and its children in output order.
struct Document::Placed {
  size_t begin = 0, end = 0;
  std::vector<int> children;
};

namespace {

bool is_word_space(char c) { return c == ' '; }
// A byte of a word: a letter or digit, or any byte of a non-ASCII character.
bool is_word_byte(char c) { return static_cast<unsigned char>(c) >= 0x80 || std::isalnum(static_cast<unsigned char>(c)); }

// The target position of a source position. Inside a linked source token:
// the same share of its target token (on a character boundary). Else just
// after the target token linked to the last source byte before it, and, when
// the source has a word boundary there, after the rest of that target word and
// the spaces after it. The start when nothing before is linked.
size_t target_position(std::span<const Link> links, size_t source, std::string_view text,
                       std::string_view translation) {
  for (const Link& l : links) {
    if (l.source_begin < source && source < l.source_end && l.target_begin < l.target_end) {
      size_t t = l.target_begin + (source - l.source_begin) * (l.target_end - l.target_begin) /
                                      (l.source_end - l.source_begin);
      while (t > l.target_begin && (static_cast<unsigned char>(translation[t]) & 0xC0) == 0x80) --t;
      return t;
    }
  }
  size_t best = 0, best_source = 0;
  bool found = false;
  for (const Link& l : links) {
    if (l.source_begin == l.source_end || l.source_end > source) continue;
    if (!found || l.source_end > best_source || (l.source_end == best_source && l.target_end > best)) {
      best = l.target_end, best_source = l.source_end;
      found = true;
    }
  }
  if (!found) return 0;
  const bool boundary = source >= text.size() || source == 0 || !is_word_byte(text[source - 1]) ||
                        !is_word_byte(text[source]);
  if (boundary) {
    while (best < translation.size() && is_word_byte(translation[best])) ++best;  // the rest of its word
    if (source > 0 && source <= text.size() && is_blank_or_newline(text[source - 1])) {
      while (best < translation.size() && is_word_space(translation[best])) ++best;
    }
  }
  return best;
}

}  // namespace

void Document::restore_block(const Block& block, std::string_view translation, std::span<const Link> links,
                             std::string* out) const {
  const size_t n = block.items.size();
  std::vector<Placed> placed(n + 1);  // placed[n]: the block itself
  placed[n] = {0, translation.size(), {}};
  // Each item's wish: the target words linked to its source words.
  for (size_t k = 0; k < n; ++k) {
    const Item& item = block.items[k];
    Placed& p = placed[k];
    bool any = false;
    if (item.paired && item.text_end > item.text_begin) {
      for (const Link& l : links) {
        if (l.source_begin >= l.source_end || l.target_begin >= l.target_end) continue;
        if (l.source_begin >= item.text_end || l.source_end <= item.text_begin) continue;
        // The linked source token must have text inside the element, not just its leading space.
        size_t first = l.source_begin;
        while (first < l.source_end && is_blank_or_newline(block.text[first])) ++first;
        if (first >= item.text_end || l.source_end <= std::max(first, item.text_begin)) continue;
        p.begin = any ? std::min(p.begin, l.target_begin) : l.target_begin;
        p.end = any ? std::max(p.end, l.target_end) : l.target_end;
        any = true;
      }
    }
    if (any) {
      while (p.begin < p.end && is_word_space(translation[p.begin])) ++p.begin;  // not the space before a word
      while (p.begin > 0 && is_word_byte(translation[p.begin - 1]) && p.begin < translation.size() &&
             is_word_byte(translation[p.begin]))
        --p.begin;  // whole words: a word's pieces all inside
      while (p.end > p.begin && p.end < translation.size() && is_word_byte(translation[p.end - 1]) &&
             is_word_byte(translation[p.end]))
        ++p.end;
    } else {
      p.begin = p.end = target_position(links, item.text_begin, block.text, translation);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const int parent = block.items[k].parent;
    placed[parent < 0 ? n : size_t(parent)].children.push_back(int(k));
  }
  // Fit each item into its parent and after its earlier siblings, parents
  // first (an item's index is always above its parent's).
  const auto fit = [&](size_t node) {
    Placed& parent = placed[node];
    std::vector<int>& children = parent.children;
    std::stable_sort(children.begin(), children.end(),
                     [&](int a, int b) { return placed[size_t(a)].begin < placed[size_t(b)].begin; });
    size_t at = parent.begin;
    for (const int c : children) {
      Placed& child = placed[size_t(c)];
      child.begin = std::min(std::max(child.begin, at), parent.end);
      child.end = std::min(std::max(child.end, child.begin), parent.end);
      at = child.end;
    }
  };
  fit(n);
  for (size_t k = 0; k < n; ++k) fit(k);
  // Write the tree: text between children escaped, each item's markup around its words.
  const auto write = [&](const auto& self, size_t node) -> void {
    const Placed& p = placed[node];
    const Item* item = node < n ? &block.items[node] : nullptr;
    if (item != nullptr) out->append(input_.substr(item->markup_begin, item->markup_end - item->markup_begin));
    size_t at = p.begin;
    for (const int c : p.children) {
      append_escaped(translation.substr(at, placed[size_t(c)].begin - at), out);
      self(self, size_t(c));
      at = placed[size_t(c)].end;
    }
    append_escaped(translation.substr(at, p.end - at), out);
    if (item != nullptr && item->paired) out->append(input_.substr(item->close_begin, item->close_end - item->close_begin));
  };
  write(write, n);
}

std::string Document::restore(std::span<const std::string> translations,
                              std::span<const std::vector<Link>> links) const {
  std::string out;
  out.reserve(input_.size() * 2);
  for (const Segment& s : segments_) {
    if (s.block < 0 || !blocks_[size_t(s.block)].translatable) {
      out.append(input_.substr(s.begin, s.end - s.begin));
      continue;
    }
    const size_t b = size_t(s.block);
    restore_block(blocks_[b], translations[b], links[b], &out);
  }
  return out;
}

}  // namespace mt::detail::html
