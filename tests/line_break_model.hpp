// A loadable model whose every piece decodes to text with a line break in it
// (LF, CR, CR LF, VT, FF, U+0085, U+2028, U+2029), and whose unknown piece's
// surface is a newline. Random weights: whatever it generates is full of line
// breaks, and a translation of it must still be one line
// (lib/src/tokenizer/line_breaks.hpp). line_break_vocabulary(true) has the
// 256 byte pieces too (<0x0A> ...), which random weights seldom pick.
#pragma once

#include <cstdio>
#include <string>

#include "mt/model_writer.hpp"
#include "mt/vocabulary.hpp"

namespace mt::test {

inline VocabularyData line_break_vocabulary(bool byte_fallback = false) {
  VocabularyData v;
  v.type = VocabularyType::unigram;
  v.byte_fallback = byte_fallback;
  v.unk_surface = "\n";
  v.pieces.push_back({"<unk>", 0.0f, PieceType::unknown});
  v.pieces.push_back({"<s>", 0.0f, PieceType::control});
  v.pieces.push_back({"</s>", 0.0f, PieceType::control});
  for (int b = 0; byte_fallback && b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.pieces.push_back({name, 0.0f, PieceType::byte});
  }
  const char* breaks[] = {"\n", "\r", "\r\n", "\v", "\f", "\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9"};
  const char* words[] = {"a", "y", "\xE2\x96\x81x", "\xE2\x96\x81"};
  float score = -1.0f;
  for (const char* b : breaks) {
    v.pieces.push_back({b, score -= 0.1f, PieceType::normal});
    for (const char* w : words) {
      v.pieces.push_back({std::string(w) + b, score -= 0.1f, PieceType::normal});
      v.pieces.push_back({std::string(b) + w, score -= 0.1f, PieceType::normal});
    }
  }
  v.pieces.push_back({"a", score -= 0.1f, PieceType::normal});  // so plain text has a piece too
  v.pieces.push_back({"y", score -= 0.1f, PieceType::normal});
  return v;
}

// A small model config over line_break_vocabulary()'s ids and special pieces.
inline ModelConfig line_break_config() {
  ModelConfig c;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.d_model = 32;
  c.heads = 2;
  c.d_ff = 64;
  c.max_positions = 256;
  c.shared_embeddings = c.tied_output = true;
  (void)c.use_vocabulary(line_break_vocabulary());  // it has <unk>, <s> and </s>
  return c;
}

inline Status write_line_break_model(const std::string& path, uint64_t seed) {
  auto writer = random_model_writer(line_break_config(), seed);
  if (!writer) return writer.status();
  writer->set_vocabulary(line_break_vocabulary());
  return writer->write(path);
}

}  // namespace mt::test
