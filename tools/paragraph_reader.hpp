// Reads text for mt_translate --paragraphs in windows of whole paragraphs,
// every byte kept (line feeds, CRs, blank lines), so that each window can be
// translated and written before the next is read.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>

#include "mt/sentence_splitter.hpp"

namespace mt::cli {

class ParagraphReader {
 public:
  // lines: a window ends at a line end; wrapped: at a blank line (a line of
  // spaces only), so no paragraph is cut. A window ends once it holds at
  // least `min_bytes` (1: every paragraph on its own, for a terminal); a line
  // with no end in `max_bytes` is cut after its last space (cut() says so).
  ParagraphReader(std::streambuf* in, SplitMode mode, size_t min_bytes, size_t max_bytes)
      : in_(in), mode_(mode), min_bytes_(min_bytes), max_bytes_(max_bytes) {}

  // The next window into *text; false at the end of the input.
  bool next(std::string* text);
  // The last window ended inside a line longer than max_bytes.
  bool cut() const { return cut_; }

 private:
  // One line with its line feed (if any) appended to *text; false at the end.
  bool read_line(std::string* text, size_t limit);

  std::streambuf* in_;
  SplitMode mode_;
  size_t min_bytes_, max_bytes_;
  std::string carry_;  // the rest of a cut line
  bool cut_ = false;
};

}  // namespace mt::cli
