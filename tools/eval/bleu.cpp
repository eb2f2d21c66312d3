// BLEU as sacreBLEU 2 (metrics/bleu.py, tokenizers/tokenizer_13a.py, tokenizer_zh.py).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string>

#include "scoring.hpp"
#include "unicode_text.hpp"

namespace mt::eval {

namespace {

std::u32string replace_all(std::u32string s, std::u32string_view from, std::u32string_view to) {
  for (size_t pos = s.find(from); pos != std::u32string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

// sacreBLEU's TokenizerRegexp: four regex substitutions applied left to right,
// each scanning for non-overlapping matches as Python's re.sub does, then
// whitespace normalised with str.split().
std::u32string regexp_tokenize(std::u32string_view in) {
  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
  std::u32string a;
  for (char32_t c : in) {
    const bool punct = (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
                       (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
    if (punct) {
      a += U' ';
      a += c;
      a += U' ';
    } else {
      a += c;
    }
  }
  // ([^0-9])([\.,]) -> "\1 \2 "
  std::u32string b;
  for (size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && !is_digit(a[i]) && (a[i + 1] == U'.' || a[i + 1] == U',')) {
      b += a[i], b += U' ', b += a[i + 1], b += U' ';
      i += 2;
    } else {
      b += a[i++];
    }
  }
  // ([\.,])([^0-9]) -> " \1 \2"
  std::u32string c;
  for (size_t i = 0; i < b.size();) {
    if (i + 1 < b.size() && (b[i] == U'.' || b[i] == U',') && !is_digit(b[i + 1])) {
      c += U' ', c += b[i], c += U' ', c += b[i + 1];
      i += 2;
    } else {
      c += b[i++];
    }
  }
  // ([0-9])(-) -> "\1 \2 "
  std::u32string d;
  for (size_t i = 0; i < c.size();) {
    if (i + 1 < c.size() && is_digit(c[i]) && c[i + 1] == U'-') {
      d += c[i], d += U' ', d += c[i + 1], d += U' ';
      i += 2;
    } else {
      d += c[i++];
    }
  }
  std::u32string out;
  for (const std::u32string& w : python_split(d)) {
    if (!out.empty()) out += U' ';
    out += w;
  }
  return out;
}

// sacreBLEU's Chinese ranges, compared as its Python does: the entries it
// writes as '\u20000' and '\u2f800' are two-character strings, so those two
// ranges are in effect U+2001..U+2A6D and U+2F81..U+2FA1.
bool is_chinese_char(char32_t c) {
  static constexpr char32_t kRanges[][2] = {
      {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A}, {0xFA70, 0xFAD9},
      {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF}, {0x3000, 0x303F}, {0x31C0, 0x31EF},
      {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F}, {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F},
      {0x2600, 0x26FF}, {0x2700, 0x27BF}, {0x3200, 0x32FF}, {0x3300, 0x33FF}};
  for (const auto& r : kRanges) {
    if (c >= r[0] && c <= r[1]) return true;
  }
  return false;
}

using Ngram = std::u32string;  // tokens joined by U+0001, never in text after splitting

struct Counts {
  std::map<Ngram, long> ngrams;
  long length = 0;
};

Counts count_ngrams(std::u32string_view tokenized) {
  const std::vector<std::u32string> tokens = python_split(tokenized);
  Counts c;
  c.length = long(tokens.size());
  for (size_t n = 1; n <= 4; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      Ngram g;
      for (size_t k = 0; k < n; ++k) {
        if (k) g += U'\x01';
        g += tokens[i + k];
      }
      ++c.ngrams[g];
    }
  }
  return c;
}

size_t ngram_order(const Ngram& g) {
  size_t n = 1;
  for (char32_t ch : g) n += ch == U'\x01';
  return n;
}

}  // namespace

std::u32string tokenize_13a(std::u32string_view line) {
  std::u32string s(line);
  s = replace_all(s, U"<skipped>", U"");
  s = replace_all(s, U"-\n", U"");
  s = replace_all(s, U"\n", U" ");
  if (s.find(U'&') != std::u32string::npos) {
    s = replace_all(s, U"&quot;", U"\"");
    s = replace_all(s, U"&amp;", U"&");
    s = replace_all(s, U"&lt;", U"<");
    s = replace_all(s, U"&gt;", U">");
  }
  return regexp_tokenize(U" " + s + U" ");
}

std::u32string tokenize_zh(std::u32string_view line) {
  std::u32string chars;
  for (char32_t c : python_strip(line)) {
    if (is_chinese_char(c)) {
      chars += U' ';
      chars += c;
      chars += U' ';
    } else {
      chars += c;
    }
  }
  return regexp_tokenize(chars);
}

std::string BleuOptions::signature() const {
  const char* tok = tokenizer == BleuTokenizer::zh ? "zh" : tokenizer == BleuTokenizer::none ? "none" : "13a";
  return "nrefs:" + std::to_string(references) + "|case:" + (lowercase ? "lc" : "mixed") + "|eff:no|tok:" + tok +
         "|smooth:exp|version:" + kSacrebleuVersion;
}

std::string BleuScore::format() const {
  char buf[256];
  const double ratio = ref_len > 0 ? double(hyp_len) / double(ref_len) : 0.0;
  std::snprintf(buf, sizeof(buf),
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %ld ref_len = %ld)", score,
                precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty, ratio, hyp_len, ref_len);
  return buf;
}

Expected<BleuScore> corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references,
                                const BleuOptions& options) {
  return corpus_bleu_multi(hypotheses, {references}, options);
}

Expected<BleuScore> corpus_bleu_multi(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::vector<std::string>>& reference_sets,
                                      const BleuOptions& options) {
  MT_RETURN_IF_ERROR(check_reference_sets(hypotheses, reference_sets));
  BleuScore s;
  auto prepare = [&](const std::string& line) {
    std::u32string text(python_rstrip(decode_utf8(line)));
    if (options.lowercase) text = to_lower(text);
    switch (options.tokenizer) {
      case BleuTokenizer::tok_13a:
        return tokenize_13a(text);
      case BleuTokenizer::zh:
        return tokenize_zh(text);
      case BleuTokenizer::none:
        return text;
    }
    return text;
  };
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const Counts hyp = count_ngrams(prepare(hypotheses[i]));
    Counts ref;  // each n-gram's largest count in any reference
    long closest = -1;
    for (const auto& references : reference_sets) {
      const Counts one = count_ngrams(prepare(references[i]));
      for (const auto& [g, count] : one.ngrams) {
        long& most = ref.ngrams[g];
        most = std::max(most, count);
      }
      const long diff = std::labs(hyp.length - one.length), best = std::labs(hyp.length - closest);
      if (closest < 0 || diff < best || (diff == best && one.length < closest)) closest = one.length;
    }
    s.hyp_len += hyp.length;
    s.ref_len += closest;
    for (const auto& [g, count] : hyp.ngrams) {
      const size_t n = ngram_order(g) - 1;
      s.total[n] += count;
      const auto it = ref.ngrams.find(g);
      if (it != ref.ngrams.end()) s.correct[n] += std::min(count, it->second);
    }
  }
  s.brevity_penalty = 1.0;
  if (s.hyp_len < s.ref_len)
    s.brevity_penalty = s.hyp_len > 0 ? std::exp(1.0 - double(s.ref_len) / double(s.hyp_len)) : 0.0;
  bool any_correct = false;
  for (long c : s.correct) any_correct |= c > 0;
  if (!any_correct) return s;
  double smooth = 1.0;
  for (int n = 0; n < 4; ++n) {
    if (s.total[size_t(n)] == 0) break;
    if (s.correct[size_t(n)] == 0) {
      smooth *= 2.0;
      s.precisions[size_t(n)] = 100.0 / (smooth * double(s.total[size_t(n)]));
    } else {
      s.precisions[size_t(n)] = 100.0 * double(s.correct[size_t(n)]) / double(s.total[size_t(n)]);
    }
  }
  double log_sum = 0.0;
  for (double p : s.precisions) log_sum += p == 0.0 ? -9999999999.0 : std::log(p);
  s.score = s.brevity_penalty * std::exp(log_sum / 4.0);
  return s;
}

}  // namespace mt::eval
