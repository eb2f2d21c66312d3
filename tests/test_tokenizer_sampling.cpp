// Sampled unigram segmentations (subword regularization, for training):
// each segmentation drawn with probability P^alpha, checked exactly against
// an enumeration on a hand-made vocabulary and in distribution against
// libsentencepiece 0.1.97's SampleEncode; any sample decodes to the text
// encode()'s ids decode to; the errors encode_sampled returns.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tokenizer_parity.hpp"

namespace mt::test {
namespace {

std::vector<int> sample(const detail::Tokenizer& t, std::string_view text, double alpha, uint64_t seed) {
  std::vector<std::byte> workspace(t.encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids(t.max_encoded_ids(text.size()));
  size_t count = 0;
  const Status s = t.encode_sampled(text, alpha, seed, workspace, ids, &count);
  INFO(s.message());
  REQUIRE(s.ok());
  return std::vector<int>(ids.begin(), ids.begin() + long(count));
}

// Pieces "a" .. "abab" with made-up scores, a user-defined two-byte
// character, no normalization. "b" scores above 0 so that the user-defined
// piece's score, its length x the best normal score - 0.1, depends on how its
// length is counted (with every score negative SentencePiece's best score is
// FLT_MIN, and the length does not matter).
VocabularyData small_unigram() {
  VocabularyData v;
  v.type = VocabularyType::unigram;
  v.add_dummy_prefix = false;
  v.remove_extra_whitespaces = false;
  v.pieces = {{"<unk>", 0.0f, PieceType::unknown},    {"a", -1.0f, PieceType::normal},
              {"b", 0.5f, PieceType::normal},         {"ab", -1.0f, PieceType::normal},
              {"ba", -2.25f, PieceType::normal},      {"aba", -3.0f, PieceType::normal},
              {"abab", -3.5f, PieceType::normal},     {"\xC3\xA9", 0.0f, PieceType::user_defined},
              {"a\xC3\xA9", -1.5f, PieceType::normal}};
  return v;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Every segmentation of `text` with the sum of its pieces' scores as
// SentencePiece's sampling lattice counts them: a user-defined piece its
// length in characters x the best normal score - 0.1, and a character that
// no piece of its own length covers <unk>, the worst normal score - 10
// (best from FLT_MIN, worst from FLT_MAX, as SentencePiece).
void segmentations(const VocabularyData& v, std::string_view text, std::vector<int>* prefix, double score,
                   std::map<std::vector<int>, double>* out) {
  if (text.empty()) {
    (*out)[*prefix] = score;
    return;
  }
  float best = FLT_MIN, worst = FLT_MAX;
  for (const auto& p : v.pieces) {
    if (p.type == PieceType::normal) best = std::max(best, p.score), worst = std::min(worst, p.score);
  }
  size_t first_char = 1;
  while (first_char < text.size() && (static_cast<unsigned char>(text[first_char]) & 0xC0) == 0x80) ++first_char;
  bool single_char = false;
  for (size_t id = 0; id < v.pieces.size(); ++id) {
    const auto& p = v.pieces[id];
    if ((p.type != PieceType::normal && p.type != PieceType::user_defined) || !text.starts_with(p.text)) continue;
    single_char |= p.text.size() == first_char;
    const double s = p.type == PieceType::normal ? p.score : float(utf8_length(p.text)) * best - 0.1;
    prefix->push_back(int(id));
    segmentations(v, text.substr(p.text.size()), prefix, score + s, out);
    prefix->pop_back();
  }
  if (!single_char) {
    prefix->push_back(0);
    segmentations(v, text.substr(first_char), prefix, score + double(worst - 10.0f), out);
    prefix->pop_back();
  }
}

// |observed - expected| within 5 standard deviations of a share estimated from n draws (plus 1e-3 slack).
bool within_sampling_error(double observed, double expected, double n) {
  return std::abs(observed - expected) <= 5.0 * std::sqrt(expected * (1.0 - expected) / n) + 1e-3;
}

TEST_CASE("tokenizer sampling draws each segmentation with probability P^alpha", "[tokenizer][sampling]") {
  const VocabularyData v = small_unigram();
  auto tokenizer = detail::Tokenizer::create(v);
  INFO(tokenizer.status().message());
  REQUIRE(tokenizer.ok());
  const detail::Tokenizer& t = **tokenizer;
  REQUIRE(t.can_sample());
  // With an unknown character, and with the user-defined one (2 bytes, 1 character).
  for (const std::string text : {"abab", "ababa", "babab", "abxab",
                                 "a\xC3\xA9"
                                 "ab\xC3\xA9"}) {
    std::map<std::vector<int>, double> all;
    std::vector<int> prefix;
    segmentations(v, text, &prefix, 0.0, &all);
    for (const double alpha : {0.1, 0.5, 1.0}) {
      double total = 0.0;
      for (const auto& [ids, score] : all) total += std::exp(alpha * score);
      const int n = 20000;
      std::map<std::vector<int>, int> seen;
      for (int seed = 0; seed < n; ++seed) ++seen[sample(t, text, alpha, uint64_t(seed))];
      INFO(text << ", alpha " << alpha << ": " << all.size() << " segmentations");
      for (const auto& [ids, count] : seen) {
        INFO("[" << join(ids) << "]");
        CHECK(all.count(ids) == 1);  // only real segmentations come out
      }
      for (const auto& [ids, score] : all) {
        const double expected = std::exp(alpha * score) / total;
        const double observed = double(seen[ids]) / n;
        INFO("[" << join(ids) << "] expected " << expected << " observed " << observed);
        CHECK(within_sampling_error(observed, expected, n));
      }
    }
  }
}

TEST_CASE("tokenizer sampling follows SentencePiece's SampleEncode in distribution", "[tokenizer][sampling]") {
  // Seeds SentencePiece's draws only if nothing drew on this thread before
  // (its generator is thread_local); unseeded, the test still holds, it
  // just draws other samples.
  sentencepiece::SetRandomGeneratorSeed(7);
  // The plain fixture model, and one with user-defined pieces ("ß" and
  // "\u2581the": more bytes than characters) on the texts' paths.
  const std::string common = "--vocab_size=600 --hard_vocab_limit=false --num_threads=2 --model_type=unigram";
  const std::string user = " --user_defined_symbols=\xC3\x9F,\xE2\x96\x81the,mt";
  for (const std::string& args : {common, common + user}) {
    const std::string proto = cached_model(args == common ? "unigram" : "unigram-user-sampling", args,
                                           {std::filesystem::path(MT_TEST_DATA_DIR) / "tokenizer_corpus.txt"});
    const auto pair = load_pair(proto);
    // Words of the fixture corpus split several ways, whole and as the dummy-prefixed start of a line.
    for (const std::string text : {"translation", "Tokenizer", "the weather",
                                   "Stra\xC3\x9F"
                                   "e mt"}) {
      for (const double alpha : {0.2, 1.0}) {
        const int n = 20000;
        std::map<std::vector<int>, int> ours, theirs;
        for (int i = 0; i < n; ++i) {
          ++ours[sample(*pair->ours, text, alpha, uint64_t(i))];
          ++theirs[pair->reference.SampleEncodeAsIds(text, -1, float(alpha))];
        }
        INFO(text << ", alpha " << alpha << ": " << ours.size() << " segmentations drawn by us, " << theirs.size()
                  << " by SentencePiece");
        CHECK(ours.size() > 1);
        // Two samples of one distribution: every segmentation's shares differ by
        // no more than the sampling error of both (5 standard deviations).
        std::map<std::vector<int>, int> all = ours;
        for (const auto& [ids, count] : theirs) all[ids] += 0;
        for (const auto& [ids, unused] : all) {
          const double a = double(ours[ids]) / n, b = double(theirs[ids]) / n, p = (a + b) / 2;
          INFO("[" << join(ids) << "] ours " << a << " SentencePiece " << b);
          CHECK(std::abs(a - b) <= 5.0 * std::sqrt(2.0 * p * (1.0 - p) / n) + 1e-3);
        }
      }
    }
  }
}

TEST_CASE("tokenizer samples decode to the text and repeat with their seed", "[tokenizer][sampling]") {
  for (const char* args : {"--model_type=unigram", "--model_type=unigram --byte_fallback=true"}) {
    const std::string proto =
        cached_model(std::string("sampling-") + (std::strstr(args, "byte") ? "bytes" : "plain"),
                     std::string("--vocab_size=600 --hard_vocab_limit=false --num_threads=2 ") + args,
                     {std::filesystem::path(MT_TEST_DATA_DIR) / "tokenizer_corpus.txt"});
    const auto pair = load_pair(proto);
    const detail::Tokenizer& t = *pair->ours;
    std::vector<std::string> lines = read_lines(std::filesystem::path(MT_TEST_DATA_DIR) / "tokenizer_corpus.txt");
    lines.resize(std::min<size_t>(lines.size(), 300));
    lines.push_back("Ünïcödé ✓ 日本語 and \xff bytes");  // unknown characters (and, with byte fallback, byte pieces)
    size_t differ = 0, best_at_high_alpha = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::vector<int> best = encode(t, lines[i]);
      const std::vector<int> drawn = sample(t, lines[i], 0.1, i);
      INFO(args << ": line " << i << " \"" << escape(lines[i]) << "\"");
      CHECK(decode(t, drawn) == decode(t, best));
      CHECK(sample(t, lines[i], 0.1, i) == drawn);
      differ += drawn != best;
      best_at_high_alpha += sample(t, lines[i], 1000.0, i) == best;
    }
    INFO(differ << " of " << lines.size() << " samples differ from the best path; " << best_at_high_alpha
                << " equal it at alpha 1000");
    CHECK(differ > lines.size() / 2);                      // sampling changes most lines at alpha 0.1
    CHECK(best_at_high_alpha >= lines.size() * 95 / 100);  // and at a high alpha it is the best path (ties aside)
  }
}

TEST_CASE("tokenizer sampling errors", "[tokenizer][sampling]") {
  auto tokenizer = detail::Tokenizer::create(small_unigram());
  REQUIRE(tokenizer.ok());
  const detail::Tokenizer& t = **tokenizer;
  std::vector<std::byte> workspace(t.encode_workspace_bytes(4));
  std::vector<int32_t> ids(t.max_encoded_ids(4));
  size_t count = 99;
  for (const double bad :
       {0.0, -1.0, 1001.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const Status s = t.encode_sampled("abab", bad, 1, workspace, ids, &count);
    INFO(bad << ": " << s.message());
    CHECK(s.code() == Errc::invalid_argument);
    CHECK_THAT(s.message(), Catch::Contains("alpha"));
    CHECK(count == 0);
  }
  std::vector<std::byte> small(workspace.size() / 2);
  CHECK(t.encode_sampled("abab", 0.5, 1, small, ids, &count).code() == Errc::capacity_exceeded);
  CHECK(t.encode_sampled("", 0.5, 1, workspace, ids, &count).ok());
  CHECK(count == 0);

  VocabularyData bpe = small_unigram();
  bpe.type = VocabularyType::bpe;
  auto b = detail::Tokenizer::create(bpe);
  REQUIRE(b.ok());
  CHECK_FALSE((*b)->can_sample());
  const Status s = (*b)->encode_sampled("abab", 0.5, 1, workspace, ids, &count);
  CHECK(s.code() == Errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::Contains("unigram"));
}

}  // namespace
}  // namespace mt::test
