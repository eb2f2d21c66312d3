#include "tokenizer/piece_trie.hpp"

#include <algorithm>
#include <utility>

namespace mt::detail {

PieceTrie PieceTrie::build(const std::vector<Key>& keys) {
  // First a pointer trie with unsorted edges, then flattened with each
  // node's edges sorted by label for binary search.
  struct Building {
    std::vector<std::pair<uint8_t, int32_t>> edges;
    int32_t value = kNone;
  };
  std::vector<Building> nodes(1);
  for (const Key& key : keys) {
    int32_t node = 0;
    for (const char c : key.text) {
      const auto label = static_cast<uint8_t>(c);
      int32_t child = kNone;
      for (const auto& [l, to] : nodes[node].edges) {
        if (l == label) { child = to; break; }
      }
      if (child == kNone) {
        child = static_cast<int32_t>(nodes.size());
        nodes[node].edges.emplace_back(label, child);
        nodes.emplace_back();
      }
      node = child;
    }
    nodes[node].value = key.value;
  }

  PieceTrie trie;
  trie.nodes_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto& edges = nodes[i].edges;
    std::sort(edges.begin(), edges.end());
    Node& out = trie.nodes_[i];
    out.first_edge = static_cast<uint32_t>(trie.labels_.size());
    out.edge_count = static_cast<uint32_t>(edges.size());
    out.value = nodes[i].value;
    for (const auto& [label, child] : edges) {
      trie.labels_.push_back(label);
      trie.children_.push_back(child);
    }
  }
  return trie;
}

int32_t PieceTrie::find(std::string_view text) const {
  int32_t node = root();
  for (const char c : text) {
    node = next(node, static_cast<uint8_t>(c));
    if (node == kNone) return kNone;
  }
  return value(node);
}

size_t PieceTrie::longest_prefix(std::string_view text) const {
  size_t longest = 0;
  int32_t node = root();
  for (size_t i = 0; i < text.size(); ++i) {
    node = next(node, static_cast<uint8_t>(text[i]));
    if (node == kNone) break;
    if (value(node) != kNone) longest = i + 1;
  }
  return longest;
}

}  // namespace mt::detail
