// chrF as sacreBLEU 2 (metrics/chrf.py) with its defaults: character n-grams of
// orders 1..6 over the text with whitespace removed, beta = 2, no word n-grams.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

#include "scoring.hpp"
#include "unicode_text.hpp"

namespace mt::eval {

namespace {

constexpr int kOrder = 6;
constexpr double kBeta = 2.0;

std::map<std::u32string, long> char_ngrams(const std::u32string& line, int n) {
  std::map<std::u32string, long> counts;
  for (size_t i = 0; i + size_t(n) <= line.size(); ++i) ++counts[line.substr(i, size_t(n))];
  return counts;
}

std::u32string without_whitespace(std::u32string_view text) {
  std::u32string out;
  for (const std::u32string& w : python_split(text)) out += w;
  return out;
}

using Stats = std::array<long, 3 * kOrder>;  // per order: hypothesis n-grams, reference n-grams, matches

Stats sentence_stats(const std::u32string& hyp, const std::u32string& ref) {
  Stats stats{};
  for (int n = 1; n <= kOrder; ++n) {
    const auto h = char_ngrams(hyp, n), r = char_ngrams(ref, n);
    long matches = 0, hyp_count = 0, ref_count = 0;
    for (const auto& [g, count] : h) {
      hyp_count += count;
      const auto it = r.find(g);
      if (it != r.end()) matches += std::min(count, it->second);
    }
    for (const auto& [g, count] : r) ref_count += count;
    // sacreBLEU counts no hypothesis n-grams of an order the reference lacks.
    stats[size_t(3 * (n - 1))] = r.empty() ? 0 : hyp_count;
    stats[size_t(3 * (n - 1) + 1)] = ref_count;
    stats[size_t(3 * (n - 1) + 2)] = matches;
  }
  return stats;
}

double f_score(const Stats& stats) {
  const double eps = 1e-16, factor = kBeta * kBeta;
  double avg_prec = 0.0, avg_rec = 0.0;
  int effective_order = 0;
  for (int i = 0; i < kOrder; ++i) {
    const long n_hyp = stats[size_t(3 * i)], n_ref = stats[size_t(3 * i + 1)], n_match = stats[size_t(3 * i + 2)];
    const double prec = n_hyp > 0 ? double(n_match) / double(n_hyp) : eps;
    const double rec = n_ref > 0 ? double(n_match) / double(n_ref) : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  return 100.0 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec);
}

}  // namespace

std::string ChrfOptions::signature() const {
  return "nrefs:" + std::to_string(references) + "|case:" + (lowercase ? "lc" : "mixed") +
         "|eff:yes|nc:6|nw:0|space:no|version:" + kSacrebleuVersion;
}

std::string ChrfScore::format() const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "chrF2 = %.2f", score);
  return buf;
}

Expected<ChrfScore> corpus_chrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                                const ChrfOptions& options) {
  return corpus_chrf_multi(hypotheses, {references}, options);
}

Expected<ChrfScore> corpus_chrf_multi(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::vector<std::string>>& reference_sets,
                                      const ChrfOptions& options) {
  MT_RETURN_IF_ERROR(check_reference_sets(hypotheses, reference_sets));
  const auto prepare = [&](const std::string& line) {
    std::u32string text = decode_utf8(line);
    if (options.lowercase) text = to_lower(text);
    return without_whitespace(text);
  };
  Stats corpus{};
  for (size_t s = 0; s < hypotheses.size(); ++s) {
    const std::u32string hyp = prepare(hypotheses[s]);
    Stats best{};
    double best_f = -1.0;
    for (const auto& references : reference_sets) {
      const Stats one = sentence_stats(hyp, prepare(references[s]));
      const double f = f_score(one);
      if (f > best_f) best_f = f, best = one;
    }
    for (size_t k = 0; k < corpus.size(); ++k) corpus[k] += best[k];
  }
  return ChrfScore{f_score(corpus)};
}

}  // namespace mt::eval
