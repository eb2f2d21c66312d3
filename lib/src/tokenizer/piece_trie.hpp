// A byte trie over the vocabulary's pieces: the lookup both encoders walk one
// byte at a time (unigram: every piece starting at a position; BPE: is this
// concatenation a piece?). Pieces never contain NUL (the vocabulary checks
// refuse them), so a NUL byte never matches, as in SentencePiece's Darts trie.
//
// Flat layout, breadth first: node k > 0 is the child at the end of edge
// k - 1, and node k's edges, labels sorted, follow node k - 1's. So the trie
// is fully described by each node's edge count, the labels and the node of
// each key: ModelWriter stores those three arrays (a byte per node and edge,
// 4 bytes per piece), and loading checks them instead of sorting the pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "mt/status.hpp"

namespace mt::detail {

class PieceTrie {
 public:
  static constexpr int32_t kNone = -1;

  struct Key {
    std::string_view text;
    int32_t value;
  };
  struct Node {
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
    int32_t value = kNone;
  };
  // What ModelWriter stores (see above).
  struct Stored {
    std::span<const uint8_t> edge_counts;  // per node; at most 255, NUL being no label
    std::span<const uint8_t> labels;       // per edge
    std::span<const uint32_t> key_nodes;   // per value 0, 1, ...: the node its key ends at
  };

  PieceTrie();  // just a root: matches nothing

  // Keys must be non-empty and free of NUL; two equal keys are an error
  // naming them.
  static Expected<PieceTrie> build(const std::vector<Key>& keys);
  // The trie of the pieces from its stored form, checked: a tree with sorted
  // labels whose keys are exactly the pieces, piece i with value i (which
  // also proves the pieces distinct). Piece i is text[ends[i - 1], ends[i])
  // (from 0 for i = 0), ends checked by the caller.
  static Expected<PieceTrie> from_stored(const Stored& stored, std::span<const char> text,
                                         std::span<const uint32_t> ends);
  // The stored form of a trie whose values are 0 .. count - 1, each once.
  void store(size_t count, std::vector<uint8_t>* edge_counts, std::vector<uint8_t>* labels,
             std::vector<uint32_t>* key_nodes) const;

  static constexpr int32_t root() { return 0; }
  // The node reached from `node` by `byte`, or kNone.
  int32_t next(int32_t node, uint8_t byte) const {
    const Node& n = nodes_[size_t(node)];
    uint32_t lo = n.first_edge, hi = n.first_edge + n.edge_count;
    while (lo < hi) {  // labels of a node's edges are sorted
      const uint32_t mid = (lo + hi) / 2;
      if (labels_[mid] < byte)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < n.first_edge + n.edge_count && labels_[lo] == byte ? static_cast<int32_t>(lo + 1) : kNone;
  }
  // The value of the key ending at `node`, or kNone.
  int32_t value(int32_t node) const { return nodes_[size_t(node)].value; }
  // The value of `text` as a whole key, or kNone.
  int32_t find(std::string_view text) const;
  // Length of the longest key that is a prefix of `text`; 0 when none is.
  size_t longest_prefix(std::string_view text) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;
};

}  // namespace mt::detail
