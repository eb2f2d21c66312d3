// Corpus BLEU and chrF, computed exactly as sacreBLEU 2 computes them with its
// defaults: BLEU with the 13a tokenizer (or zh, or none) and exponential
// smoothing; chrF with character 6-grams, beta 2, whitespace removed.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "mt/status.hpp"

namespace mt::eval {

enum class BleuTokenizer { tok_13a, zh, none };

// sacreBLEU's tokenizers on one line (the output's tokens are space-separated).
std::u32string tokenize_13a(std::u32string_view line);
std::u32string tokenize_zh(std::u32string_view line);

struct BleuScore {
  double score = 0.0;
  std::array<double, 4> precisions{};
  std::array<long, 4> correct{}, total{};
  double brevity_penalty = 0.0;
  long hyp_len = 0, ref_len = 0;

  std::string format() const;  // "BLEU = 37.60 68.1/44.5/30.8/21.6 (BP = 1.000 ratio = ...)"
};

struct BleuOptions {
  BleuTokenizer tokenizer = BleuTokenizer::tok_13a;
  bool lowercase = false;
  int references = 1;             // reference sets scored against (the signature's nrefs)
  std::string signature() const;  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
};

// One reference per hypothesis; sizes must match.
Expected<BleuScore> corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                                const BleuOptions& options = {});
// Several references per hypothesis, as sacreBLEU: each n-gram clipped by its
// largest count in any reference, the closest reference length (the shorter
// on a tie). `reference_sets[k][i]` is hypothesis i's k-th reference.
Expected<BleuScore> corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::vector<std::string>>& reference_sets,
                                      const BleuOptions& options = {});

struct ChrfScore {
  double score = 0.0;
  std::string format() const;  // "chrF2 = 58.46"
};

struct ChrfOptions {
  bool lowercase = false;
  int references = 1;             // reference sets scored against (the signature's nrefs)
  std::string signature() const;  // "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"
};

Expected<ChrfScore> corpus_chrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                                const ChrfOptions& options = {});
// Several references: each sentence counts its statistics against the
// reference with the best sentence chrF (the first on a tie), as sacreBLEU.
Expected<ChrfScore> corpus_chrf_multi(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::vector<std::string>>& reference_sets,
                                      const ChrfOptions& options = {});

// At least one reference set, each with a line per hypothesis.
inline Status check_reference_sets(const std::vector<std::string>& hypotheses,
                                   const std::vector<std::vector<std::string>>& reference_sets) {
  if (reference_sets.empty()) return Status::error(Errc::invalid_argument, "no references");
  for (const auto& references : reference_sets) {
    if (hypotheses.size() != references.size()) {
      return Status::error(Errc::invalid_argument, "%zu hypotheses but %zu references", hypotheses.size(),
                           references.size());
    }
  }
  return {};
}

// The sacreBLEU version whose results these reproduce (checked by tests/test_scoring.cpp).
inline constexpr const char* kSacrebleuVersion = "2.6.0";

}  // namespace mt::eval
