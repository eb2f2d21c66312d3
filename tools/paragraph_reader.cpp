#include "paragraph_reader.hpp"

namespace mt::cli {

namespace {

bool blank_line(const std::string& text, size_t begin) {
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') return false;
  }
  return true;
}

}  // namespace

bool ParagraphReader::read_line(std::string* text, size_t limit) {
  bool any = false;
  for (int c = in_->sgetc(); c != std::char_traits<char>::eof(); c = in_->sgetc()) {
    if (text->size() >= limit) return true;  // the caller cuts the line
    in_->sbumpc();
    any = true;
    text->push_back(char(c));
    if (c == '\n') break;
  }
  return any;
}

bool ParagraphReader::next(std::string* text) {
  text->swap(carry_);
  carry_.clear();
  cut_ = false;
  bool any = !text->empty();
  while (true) {
    const size_t line_start = text->size();
    if (!read_line(text, line_start + max_bytes_)) break;
    any = true;
    if (text->size() - line_start >= max_bytes_ && text->back() != '\n') {
      // A line with no end in sight: cut after its last space, keep the rest.
      size_t cut = text->find_last_of(" \t", text->size() - 1);
      if (cut == std::string::npos || cut < line_start) cut = text->size() - 1;
      carry_.assign(*text, cut + 1, std::string::npos);
      text->resize(cut + 1);
      cut_ = true;
      return true;
    }
    if (text->size() < min_bytes_) continue;
    if (mode_ != SplitMode::wrapped || blank_line(*text, line_start)) return true;
  }
  return any;
}

}  // namespace mt::cli
