// Paragraphs into sentences: byte ranges into the caller's text, found with
// no heap allocation, by the rules of the Moses sentence splitter
// (split-sentences.perl, Koehn and Schroeder) written anew: a sentence ends
// after ? ! or . (and any closing quotes or brackets) when the next word
// starts with an upper-case letter, a letter of a caseless script, an
// opening quote or bracket before one, or a digit after a period; never after a
// non-breaking prefix ("Dr.", "e.g."; "No." only before a number) or inside an
// upper-case acronym ("U.S."). Chinese and Japanese full stops (。！？．)
// end a sentence with no space after them; 、 and ， never do.
//
// Spaces are U+0020, tab, CR, VT and FF; a line feed is a paragraph break or
// a space depending on the mode.
#pragma once

#include "mt/export.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mt/status.hpp"

namespace mt {

enum class SplitMode : uint8_t {
  sentence = 0,  // the whole text is one sentence (leading and trailing spaces left out)
  lines = 1,     // each line is a paragraph, split into sentences
  wrapped = 2,   // a single line feed is a space; a blank line ends a paragraph
};

// Parses "sentence", "lines" or "wrapped".
MT_API Expected<SplitMode> parse_split_mode(std::string_view name);
MT_API const char* split_mode_name(SplitMode mode);

// The words after which a period does not end a sentence, for one language.
// The list format is the Moses one: one prefix per line, without its period;
// "#" starts a comment; a line with "#NUMERIC_ONLY#" holds a prefix that
// does not end a sentence only when a number follows ("No. 5", "p. 12").
class MT_API NonBreakingPrefixes {
 public:
  NonBreakingPrefixes() = default;  // no prefixes
  // Error for a line longer than 256 bytes or invalid UTF-8.
  static Expected<NonBreakingPrefixes> parse(std::string_view list);
  // libmt's own list for a language ("en", "de", "fr", "cs", "es"; Chinese,
  // Japanese and Korean need none and get an empty list). Error for a
  // language without a list; the message names the ones that have one.
  static Expected<NonBreakingPrefixes> builtin(std::string_view language);
  // The text of libmt's own list for a language (empty if none).
  static std::string_view builtin_list(std::string_view language);

  enum class Kind : uint8_t { none = 0, always = 1, numeric_only = 2 };
  // Looks the word up (without its period); allocates nothing.
  Kind find(std::string_view word) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint32_t offset = 0;
    uint32_t length = 0;
    Kind kind = Kind::always;
  };
  std::string text_;            // the prefixes, back to back
  std::vector<Entry> entries_;  // sorted by text
};

// One sentence: text.substr(begin, end - begin), without surrounding spaces.
struct SentenceRange {
  size_t begin = 0;
  size_t end = 0;
  size_t paragraph = 0;  // index of its paragraph (lines: the line's index, counting empty lines)
};

class MT_API SentenceSplitter {
 public:
  // `prefixes` (may be null: none) must outlive the splitter.
  explicit SentenceSplitter(SplitMode mode = SplitMode::lines, const NonBreakingPrefixes* prefixes = nullptr)
      : mode_(mode), prefixes_(prefixes) {}

  // Where a walk over a text stands; start each text with a fresh Cursor.
  struct Cursor {
    size_t position = 0;
    size_t paragraph = 0;
    size_t paragraph_begin = 0;
    size_t paragraph_end = 0;
    bool in_paragraph = false;  // paragraph_end is known
    bool paragraph_has_sentence = false;
  };
  // The next sentence of `text` after the cursor, which moves past it; false
  // when none is left. Allocates nothing; linear in the text over a whole walk.
  bool next(std::string_view text, Cursor* cursor, SentenceRange* sentence) const;

  // Every sentence of the text (allocates the vector).
  std::vector<SentenceRange> split(std::string_view text) const;
  // How many sentences the text has, without storing them.
  size_t count(std::string_view text) const;

  SplitMode mode() const { return mode_; }

 private:
  SplitMode mode_;
  const NonBreakingPrefixes* prefixes_;
};

}  // namespace mt
