#include "tokenizer/piece_trie.hpp"

#include <algorithm>
#include <utility>

namespace mt::detail {

PieceTrie PieceTrie::build(const std::vector<Key>& keys) {
  // Keys sorted bytewise put every node's subtree in one contiguous range, so
  // the flat trie is built depth first with each node's edges laid out
  // together: no per-node containers, one pass over the key bytes.
  // Sorting compares the first 8 bytes as one big-endian integer (unsigned
  // bytes, as the labels are, and a shorter key first) and falls back to the
  // whole string only on a tie: a vocabulary loads several times faster than
  // with memcmp on every comparison.
  struct SortKey {
    uint64_t prefix;
    Key key;
  };
  std::vector<SortKey> order(keys.size());
  size_t total_bytes = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t prefix = 0;
    for (size_t b = 0; b < 8; ++b) {
      prefix = prefix << 8 | (b < keys[i].text.size() ? static_cast<uint8_t>(keys[i].text[b]) : 0);
    }
    order[i] = {prefix, keys[i]};
    total_bytes += keys[i].text.size();
  }
  std::sort(order.begin(), order.end(), [](const SortKey& a, const SortKey& b) {
    return a.prefix != b.prefix ? a.prefix < b.prefix : a.key.text < b.key.text;
  });
  std::vector<Key> sorted(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) sorted[i] = order[i].key;

  PieceTrie trie;
  trie.nodes_.reserve(total_bytes + 1);  // at most one node per key byte, plus the root
  trie.labels_.reserve(total_bytes);
  trie.children_.reserve(total_bytes);
  trie.nodes_.emplace_back();
  struct Range {
    int32_t node;
    size_t begin, end, depth;  // keys [begin, end) share their first `depth` bytes
  };
  std::vector<Range> stack{{0, 0, sorted.size(), 0}};
  while (!stack.empty()) {
    const Range r = stack.back();
    stack.pop_back();
    size_t i = r.begin;
    if (i < r.end && sorted[i].text.size() == r.depth) trie.nodes_[size_t(r.node)].value = sorted[i++].value;
    trie.nodes_[size_t(r.node)].first_edge = static_cast<uint32_t>(trie.labels_.size());
    while (i < r.end) {  // one child per distinct next byte
      const auto label = static_cast<uint8_t>(sorted[i].text[r.depth]);
      size_t j = i + 1;
      while (j < r.end && static_cast<uint8_t>(sorted[j].text[r.depth]) == label) ++j;
      const auto child = static_cast<int32_t>(trie.nodes_.size());
      trie.nodes_.emplace_back();
      trie.labels_.push_back(label);
      trie.children_.push_back(child);
      stack.push_back({child, i, j, r.depth + 1});
      i = j;
    }
    trie.nodes_[size_t(r.node)].edge_count = static_cast<uint32_t>(trie.labels_.size()) - trie.nodes_[size_t(r.node)].first_edge;
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
