// What the unigram and BPE encoders hand back: pieces of the normalized
// text, in order, with the id each one got (before SentencePiece's final
// pass merges unknown runs or spells them out as byte pieces).
#pragma once

#include <cstdint>

namespace mt::detail {

struct EncodedPiece {
  uint32_t start;   // byte offset in the normalized text
  uint32_t length;  // bytes
  int32_t id;
};

}  // namespace mt::detail
