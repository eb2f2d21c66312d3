#include "tokenizer/piece_trie.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace mt::detail {

PieceTrie::PieceTrie() : nodes_(1) {}

Expected<PieceTrie> PieceTrie::build(const std::vector<Key>& keys) {
  // Keys sorted bytewise put every node's subtree in one contiguous range, so
  // the flat trie is built breadth first with each node's edges laid out
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
  for (size_t i = 0; i < keys.size(); ++i) {
    sorted[i] = order[i].key;
    if (i > 0 && sorted[i].text == sorted[i - 1].text) {  // equal keys end up side by side
      const auto [first, second] = std::minmax(sorted[i - 1].value, sorted[i].value);
      return Status::error(Errc::invalid_model, "piece %d (\"%.40s\") is defined twice (also piece %d)", second,
                           std::string(sorted[i].text).c_str(), first);
    }
  }

  PieceTrie trie;
  trie.nodes_.reserve(total_bytes + 1);  // at most one node per key byte, plus the root
  trie.labels_.reserve(total_bytes);
  struct Range {
    size_t begin, end;  // node k's keys share their first depth(k) bytes
  };
  std::vector<Range> ranges{{0, sorted.size()}};
  ranges.reserve(total_bytes + 1);
  std::vector<uint32_t> depths{0};
  depths.reserve(total_bytes + 1);
  for (size_t k = 0; k < trie.nodes_.size(); ++k) {  // children are appended as their parents are processed
    const Range r = ranges[k];
    const uint32_t depth = depths[k];
    size_t i = r.begin;
    if (i < r.end && sorted[i].text.size() == depth) trie.nodes_[k].value = sorted[i++].value;
    trie.nodes_[k].first_edge = static_cast<uint32_t>(trie.labels_.size());
    while (i < r.end) {  // one child per distinct next byte; its node follows its edge
      const auto label = static_cast<uint8_t>(sorted[i].text[depth]);
      size_t j = i + 1;
      while (j < r.end && static_cast<uint8_t>(sorted[j].text[depth]) == label) ++j;
      trie.labels_.push_back(label);
      trie.nodes_.emplace_back();
      ranges.push_back({i, j});
      depths.push_back(depth + 1);
      i = j;
    }
    trie.nodes_[k].edge_count = static_cast<uint32_t>(trie.labels_.size()) - trie.nodes_[k].first_edge;
  }
  return trie;
}

void PieceTrie::store(size_t count, std::vector<uint8_t>* edge_counts, std::vector<uint8_t>* labels,
                      std::vector<uint32_t>* key_nodes) const {
  edge_counts->resize(nodes_.size());
  key_nodes->assign(count, 0);
  for (size_t k = 0; k < nodes_.size(); ++k) {
    (*edge_counts)[k] = static_cast<uint8_t>(nodes_[k].edge_count);  // <= 255: no label is NUL
    if (nodes_[k].value != kNone) (*key_nodes)[size_t(nodes_[k].value)] = static_cast<uint32_t>(k);
  }
  *labels = labels_;
}

Expected<PieceTrie> PieceTrie::from_stored(const Stored& stored, std::span<const char> text,
                                           std::span<const uint32_t> ends) {
  const size_t node_count = stored.edge_counts.size(), edge_count = stored.labels.size();
  if (node_count != edge_count + 1 || node_count > 0x7FFFFFFF) {
    return Status::error(Errc::corrupt_model, "piece trie: %zu nodes for %zu edges (expected one node more)",
                         node_count, edge_count);
  }
  if (stored.key_nodes.size() != ends.size()) {
    return Status::error(Errc::corrupt_model, "piece trie: %zu key nodes for %zu pieces", stored.key_nodes.size(),
                         ends.size());
  }
  // Node k's edges follow node k - 1's. Each node's first child comes after
  // it (first_edge >= k), so every node but the root has exactly one parent,
  // an earlier node: a tree.
  PieceTrie trie;
  trie.nodes_.resize(node_count);
  trie.labels_.assign(stored.labels.begin(), stored.labels.end());
  std::vector<uint32_t> parent(node_count, 0);
  uint32_t first = 0;
  for (size_t k = 0; k < node_count; ++k) {
    const uint32_t n = stored.edge_counts[k];
    if (n > 0 && first < k) {
      return Status::error(Errc::corrupt_model, "piece trie: node %zu's edges lead back to earlier nodes", k);
    }
    if (n > edge_count - first) {
      return Status::error(Errc::corrupt_model, "piece trie: node %zu has edges beyond the %zu edges", k, edge_count);
    }
    for (uint32_t e = first; e < first + n; ++e) {
      if (e > first && trie.labels_[e] <= trie.labels_[e - 1]) {
        return Status::error(Errc::corrupt_model, "piece trie: the labels of node %zu are not sorted", k);
      }
      parent[e + 1] = static_cast<uint32_t>(k);
    }
    trie.nodes_[k] = {first, n, kNone};
    first += n;
  }
  if (first != edge_count) {
    return Status::error(Errc::corrupt_model, "piece trie: the nodes hold %u of the %zu edges", first, edge_count);
  }
  // Each piece ends at its own node, whose path read back to the root spells it.
  for (size_t id = 0; id < ends.size(); ++id) {
    uint32_t node = stored.key_nodes[id];
    if (node >= node_count || trie.nodes_[node].value != kNone) {
      return Status::error(Errc::corrupt_model, "piece trie: piece %zu ends at node %u, outside the trie or taken", id,
                           node);
    }
    trie.nodes_[node].value = static_cast<int32_t>(id);
    const uint32_t begin = id == 0 ? 0 : ends[id - 1];
    bool spelt = ends[id] > begin;
    for (uint32_t i = ends[id]; spelt && i > begin; --i) {
      spelt = node != 0 && trie.labels_[node - 1] == static_cast<uint8_t>(text[i - 1]);
      node = parent[node];
    }
    if (!spelt || node != 0) {
      return Status::error(Errc::corrupt_model, "piece trie: the path to piece %zu's node does not spell it", id);
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
