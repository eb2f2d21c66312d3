#include "shortlist/lexical_table.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace mt::shortlist {

namespace {

// The column of target `t` in row `s` (it is there: the rows hold every co-occurring pair).
size_t find(const LexicalTable& table, int s, int32_t t) {
  const size_t begin = s == 0 ? 0 : table.row_ends[size_t(s) - 1];
  const auto* first = table.targets.data() + begin;
  const auto* last = table.targets.data() + table.row_ends[size_t(s)];
  return size_t(std::lower_bound(first, last, t) - table.targets.data());
}

}  // namespace

LexicalTable learn_ibm1(const std::vector<SentencePair>& corpus, int source_vocab, int iterations) {
  const int empty = source_vocab;  // the empty word, which every target may come from
  // Rows: each source id's co-occurring targets, sorted and unique.
  std::vector<std::vector<int32_t>> rows(size_t(source_vocab) + 1);
  for (const SentencePair& pair : corpus) {
    for (const int32_t t : pair.target) {
      for (const int32_t s : pair.source) rows[size_t(s)].push_back(t);
      rows[size_t(empty)].push_back(t);
    }
  }
  LexicalTable table;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    table.targets.insert(table.targets.end(), row.begin(), row.end());
    table.row_ends.push_back(uint32_t(table.targets.size()));
    std::vector<int32_t>().swap(row);
  }
  // Uniform start: every target of a row equally likely.
  table.probabilities.resize(table.targets.size());
  for (size_t s = 0, begin = 0; s < table.row_ends.size(); begin = table.row_ends[s++]) {
    const size_t n = table.row_ends[s] - begin;
    std::fill_n(table.probabilities.begin() + ptrdiff_t(begin), n, n > 0 ? 1.0f / float(n) : 0.0f);
  }
  std::vector<double> counts(table.targets.size()), totals(table.row_ends.size());
  std::vector<size_t> columns;
  for (int round = 0; round < iterations; ++round) {
    std::fill(counts.begin(), counts.end(), 0.0);
    std::fill(totals.begin(), totals.end(), 0.0);
    for (const SentencePair& pair : corpus) {
      const size_t S = pair.source.size() + 1;
      for (const int32_t t : pair.target) {
        // E: how much each source word (and the empty one) accounts for t.
        columns.clear();
        double sum = 0.0;
        for (size_t i = 0; i < S; ++i) {
          const int s = i < pair.source.size() ? pair.source[i] : empty;
          columns.push_back(find(table, s, t));
          sum += table.probabilities[columns.back()];
        }
        if (sum <= 0.0) continue;
        for (size_t i = 0; i < S; ++i) {
          const double share = table.probabilities[columns[i]] / sum;
          counts[columns[i]] += share;
          totals[i < pair.source.size() ? size_t(pair.source[i]) : size_t(empty)] += share;
        }
      }
    }
    // M: p(t | s) = count(s, t) / count(s).
    for (size_t s = 0, begin = 0; s < table.row_ends.size(); begin = table.row_ends[s++]) {
      for (size_t j = begin; j < table.row_ends[s]; ++j) {
        table.probabilities[j] = totals[s] > 0.0 ? float(counts[j] / totals[s]) : 0.0f;
      }
    }
  }
  return table;
}

ShortlistData choose_shortlist(const LexicalTable& table, const std::vector<SentencePair>& corpus, int source_vocab,
                               int target_vocab, int k, int frequent, bool copies) {
  ShortlistData out;
  std::vector<size_t> order;
  for (int s = 0; s < source_vocab; ++s) {
    const size_t begin = s == 0 ? 0 : table.row_ends[size_t(s) - 1], end = table.row_ends[size_t(s)];
    order.resize(end - begin);
    std::iota(order.begin(), order.end(), begin);
    const size_t keep = std::min(order.size(), size_t(k));
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(keep), order.end(), [&](size_t a, size_t b) {
      return table.probabilities[a] != table.probabilities[b] ? table.probabilities[a] > table.probabilities[b]
                                                              : table.targets[a] < table.targets[b];
    });
    std::vector<int32_t> row;
    for (size_t j = 0; j < keep; ++j) row.push_back(table.targets[order[j]]);
    if (copies && s < target_vocab && std::find(row.begin(), row.end(), s) == row.end()) row.push_back(s);
    std::sort(row.begin(), row.end());
    out.targets.insert(out.targets.end(), row.begin(), row.end());
    out.row_ends.push_back(uint32_t(out.targets.size()));
  }
  std::vector<int64_t> seen(size_t(target_vocab), 0);
  for (const SentencePair& pair : corpus) {
    for (const int32_t t : pair.target) ++seen[size_t(t)];
  }
  std::vector<int32_t> ids(static_cast<size_t>(target_vocab), 0);
  std::iota(ids.begin(), ids.end(), 0);
  const size_t keep = std::min(ids.size(), size_t(frequent));
  std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(keep), ids.end(), [&](int32_t a, int32_t b) {
    return seen[size_t(a)] != seen[size_t(b)] ? seen[size_t(a)] > seen[size_t(b)] : a < b;
  });
  out.frequent.assign(ids.begin(), ids.begin() + ptrdiff_t(keep));
  std::sort(out.frequent.begin(), out.frequent.end());
  return out;
}

ShortlistData random_shortlist(int source_vocab, int target_vocab, int k, int frequent, uint64_t seed) {
  std::mt19937_64 random(seed);
  // k distinct ids of [0, V), ascending (Floyd's sampling).
  const auto sample = [&](int count) {
    std::vector<int32_t> ids;
    if (count >= target_vocab) {
      ids.resize(size_t(target_vocab));
      std::iota(ids.begin(), ids.end(), 0);
      return ids;
    }
    std::vector<char> taken(size_t(target_vocab), 0);
    for (int j = target_vocab - count; j < target_vocab; ++j) {
      const int32_t pick = int32_t(random() % uint64_t(j + 1));
      const int32_t id = taken[size_t(pick)] ? j : pick;
      taken[size_t(id)] = 1;
      ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  ShortlistData out;
  for (int s = 0; s < source_vocab; ++s) {
    const std::vector<int32_t> row = sample(k);
    out.targets.insert(out.targets.end(), row.begin(), row.end());
    out.row_ends.push_back(uint32_t(out.targets.size()));
  }
  out.frequent = sample(frequent);
  return out;
}

}  // namespace mt::shortlist
