// HTML for translation (ParagraphOptions::format = html): a document split
// into blocks of text to translate, each with the inline markup inside it,
// and the document put back together around their translations, each inline
// element moved with the words it wraps.
//
// Parsing is tolerant, as browsers are: a stray "<" is text, an unclosed
// element or a stray close tag stays where it was as a point, never lost or
// duplicated. Block-level tags (any tag not in the inline list) end a block;
// <script>, <style>, comments and declarations are copied as they are, and
// <code>, <kbd>, <samp>, <var>, <math>, <svg> elements are kept whole, moved
// as one point. Text is decoded (entities, line breaks as spaces) and
// re-encoded on output (& < > and no-break spaces as entities; attributes
// are copied byte for byte). Elements nested deeper than kMaxDepth are kept
// as points, so nothing recurses without bound.
//
// Placement needs links: for each target token, its bytes in the block's
// translation and the bytes of the source token the attention links it to
// (an empty source range: none). An element goes to the target words linked
// to its source words; an element with none, and a point, to just after the
// target word linked to the source word before it. Intervals are then fitted
// into their parents and after their earlier siblings, so the output nests
// validly and holds every tag of the input exactly once.
//
// This allocates in proportion to the document: HTML translation is the one
// part of translate_paragraphs that uses the heap.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/status.hpp"

namespace mt::detail::html {

inline constexpr size_t kMaxDepth = 256;

struct Link {
  size_t source_begin = 0, source_end = 0;  // bytes of the block's text
  size_t target_begin = 0, target_end = 0;  // bytes of its translation
};

class Document {
 public:
  // `html` must outlive the document.
  static Document parse(std::string_view html);

  size_t block_count() const { return blocks_.size(); }
  // The decoded text of block b (inline markup out, entities decoded, line
  // breaks as spaces); blocks of whitespace only are not to be translated.
  std::string_view block_text(size_t b) const { return blocks_[b].text; }
  bool translatable(size_t b) const { return blocks_[b].translatable; }

  // The document with each translatable block's text replaced by
  // translations[b] and its markup placed by links[b] (other blocks as they were).
  std::string restore(std::span<const std::string> translations, std::span<const std::vector<Link>> links) const;

 private:
  // A piece of inline markup in a block: an element (open and close tags)
  // or a point (a void or stray tag, a comment, a kept-whole element).
  struct Item {
    size_t markup_begin = 0, markup_end = 0;  // input bytes: the open tag, or the whole point
    size_t close_begin = 0, close_end = 0;    // an element's close tag
    size_t text_begin = 0, text_end = 0;      // its place in the block's text (a point: one place)
    bool paired = false;
    int parent = -1;  // the element it is in (an index into items), or -1: the block
  };
  struct Block {
    size_t input_begin = 0, input_end = 0;
    std::string text;
    std::vector<Item> items;
    bool translatable = false;
  };
  // The document in order: input bytes copied as they are, or a block.
  struct Segment {
    size_t begin = 0, end = 0;
    int block = -1;
  };
  struct Placed;

  void restore_block(const Block& block, std::string_view translation, std::span<const Link> links,
                     std::string* out) const;

  std::string_view input_;
  std::vector<Block> blocks_;
  std::vector<Segment> segments_;
};

// Text as HTML text: & < > escaped, U+00A0 as &nbsp;.
void append_escaped(std::string_view text, std::string* out);

}  // namespace mt::detail::html
