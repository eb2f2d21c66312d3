// mt_eval against sacreBLEU: scores and tokenizations it produced
// (tests/data/scoring/make_expected.py) on files of our own writing.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "eval/scoring.hpp"
#include "eval/unicode_text.hpp"

using namespace mt::eval;

namespace {

const std::string kDir = MT_SCORING_DATA_DIR;

std::vector<std::string> read_lines(const std::string& name) {
  std::ifstream f(kDir + "/" + name);
  REQUIRE(f);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(f, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\t') {
      cells.push_back(cell);
      cell.clear();
    } else if (line[i] == '\\' && i + 1 < line.size()) {
      cell += line[++i] == 't' ? '\t' : line[i];
    } else {
      cell += line[i];
    }
  }
  cells.push_back(cell);
  return cells;
}

}  // namespace

TEST_CASE("BLEU and chrF equal sacreBLEU on our files", "[scoring]") {
  int checked = 0;
  for (const std::string& row : read_lines("expected.tsv")) {
    if (row.empty() || row[0] == '#' || row.rfind("hyp\t", 0) == 0) continue;
    const auto cells = split_tabs(row);
    REQUIRE(cells.size() == 6);
    const auto hyps = read_lines(cells[0]);
    std::vector<std::vector<std::string>> refs;  // "ref.de" or "ref.de,ref2.de"
    std::stringstream names(cells[1]);
    for (std::string name; std::getline(names, name, ',');) refs.push_back(read_lines(name));
    const double expected = std::stod(cells[4]);
    const bool lowercase = cells[3].find("lc=1") != std::string::npos;
    INFO(row);
    if (cells[2] == "bleu") {
      BleuOptions options;
      options.lowercase = lowercase;
      options.references = int(refs.size());
      if (cells[3].find("tok=zh") != std::string::npos) options.tokenizer = BleuTokenizer::zh;
      if (cells[3].find("tok=none") != std::string::npos) options.tokenizer = BleuTokenizer::none;
      auto score = corpus_bleu_multi(hyps, refs, options);
      REQUIRE(score.ok());
      CHECK(std::fabs(score->score - expected) < 1e-6);
      // The whole line sacreBLEU prints, and its signature.
      CHECK(score->format() + "|" + options.signature() == cells[5]);
    } else {
      ChrfOptions options;
      options.lowercase = lowercase;
      options.references = int(refs.size());
      auto score = corpus_chrf_multi(hyps, refs, options);
      REQUIRE(score.ok());
      CHECK(std::fabs(score->score - expected) < 1e-6);
      CHECK(options.signature() == cells[5]);
    }
    ++checked;
  }
  CHECK(checked == 16);
}

TEST_CASE("13a and zh tokenizations equal sacreBLEU's", "[scoring]") {
  int checked = 0;
  for (const std::string& row : read_lines("tokenized.tsv")) {
    const auto cells = split_tabs(row);
    REQUIRE(cells.size() == 3);
    const std::u32string line(python_rstrip(decode_utf8(cells[0])));
    INFO(cells[0]);
    CHECK(encode_utf8(tokenize_13a(line)) == cells[1]);
    CHECK(encode_utf8(tokenize_zh(line)) == cells[2]);
    ++checked;
  }
  CHECK(checked == 10);
}

TEST_CASE("scores on hand-checked cases", "[scoring]") {
  // Identical text: 100; nothing in common: 0; mismatched line counts: an error.
  CHECK(corpus_bleu({"a b c d e"}, {"a b c d e"})->score == Approx(100.0));
  CHECK(corpus_bleu({"x y z w"}, {"a b c d"})->score == 0.0);
  CHECK(corpus_chrf({"abcdef"}, {"abcdef"})->score == Approx(100.0));
  CHECK_FALSE(corpus_bleu({"a"}, {"a", "b"}).ok());
  // Half the unigrams right, no bigram: exp smoothing halves the precision of each missing order.
  const auto s = corpus_bleu({"a x b y"}, {"a c b d"});
  REQUIRE(s.ok());
  CHECK(s->precisions[0] == Approx(50.0));
  CHECK(s->precisions[1] == Approx(100.0 / (2 * 3)));
  CHECK(s->precisions[2] == Approx(100.0 / (4 * 2)));
  CHECK(s->precisions[3] == Approx(100.0 / (8 * 1)));
  // Invalid UTF-8 is scored, not a crash.
  CHECK(corpus_chrf({"\xff\xfe abc"}, {"abc"}).ok());
}
