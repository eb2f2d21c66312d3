// A byte trie over the vocabulary's pieces, built once at load: the lookup
// both encoders walk one byte at a time (unigram: every piece starting at a
// position; BPE: is this concatenation a piece?). Pieces never contain NUL
// (VocabularyData::validate refuses them), so a NUL byte never matches, as in
// SentencePiece's Darts trie.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mt::detail {

class PieceTrie {
 public:
  static constexpr int32_t kNone = -1;

  struct Key {
    std::string_view text;
    int32_t value;
  };
  // Keys must be distinct and non-empty.
  static PieceTrie build(const std::vector<Key>& keys);

  static constexpr int32_t root() { return 0; }
  // The node reached from `node` by `byte`, or kNone.
  int32_t next(int32_t node, uint8_t byte) const {
    const Node& n = nodes_[node];
    uint32_t lo = n.first_edge, hi = n.first_edge + n.edge_count;
    while (lo < hi) {  // labels of a node's edges are sorted
      const uint32_t mid = (lo + hi) / 2;
      if (labels_[mid] < byte) lo = mid + 1; else hi = mid;
    }
    return lo < n.first_edge + n.edge_count && labels_[lo] == byte ? children_[lo] : kNone;
  }
  // The value of the key ending at `node`, or kNone.
  int32_t value(int32_t node) const { return nodes_[node].value; }
  // The value of `text` as a whole key, or kNone.
  int32_t find(std::string_view text) const;
  // Length of the longest key that is a prefix of `text`; 0 when none is.
  size_t longest_prefix(std::string_view text) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
    int32_t value = kNone;
  };
  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;   // per edge, grouped by node
  std::vector<int32_t> children_;  // per edge
};

}  // namespace mt::detail
