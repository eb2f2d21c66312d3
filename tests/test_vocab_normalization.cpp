// Vocabulary normalizations for CJK targets (tools/vocab/vocab_train.cpp):
// nmt_nfkc folds full-width punctuation to ASCII, so a Chinese target could
// never write ，？！; nmt_nfkc_cjk is nmt_nfkc without those rules (letters
// and digits still fold), handed to SentencePiece as a rule file. Checked
// against SentencePiece itself: its tokenization of such a vocabulary equals
// ours, and the rules read back from a charsmap are the ones it compiled.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tokenizer/normalizer.hpp"
#include "tokenizer_parity.hpp"
#include "vocab/vocab_train.hpp"

using namespace mt;

namespace {

const std::vector<std::string> kLines = {
    "我买了书，你呢？", "他说：“好！”（真的）", "ＡＢＣ１２３ 是全角字母。", "Hello, world? Yes!", "半角｡｢テスト｣",
    "你好～再见；",     "a（b）c",             "一 二　三",                 "１０％的人：",     "what?！"};

// A vocabulary trained on kLines with `normalization`; its .model bytes in *proto.
VocabularyData train_on_lines(const std::string& normalization, std::string* proto) {
  const std::string path = "test_vocab_normalization_" + normalization + ".txt";
  {
    std::ofstream out(path);
    for (int copy = 0; copy < 20; ++copy)
      for (const std::string& line : kLines) out << line << '\n';
  }
  vocab::TrainOptions o;
  o.inputs = {path};
  o.vocab_size = 80;
  o.soft_limit = true;
  o.normalization = normalization;
  auto v = vocab::train(o, proto);
  std::remove(path.c_str());
  INFO(v.status().message());
  REQUIRE(v.ok());
  return v.value();
}

std::string normalize(const VocabularyData& v, std::string_view text) {
  return test::normalize_with(v.precompiled_charsmap, text, /*add_dummy_prefix=*/false);
}

const std::string* rule_for(const std::vector<std::pair<std::string, std::string>>& rules, const std::string& key) {
  for (const auto& [from, to] : rules)
    if (from == key) return &to;
  return nullptr;
}

}  // namespace

TEST_CASE("nmt_nfkc_cjk keeps full-width punctuation and folds the rest as nmt_nfkc", "[vocab_normalization]") {
  std::string nfkc_proto, cjk_proto;
  const VocabularyData nfkc = train_on_lines("nmt_nfkc", &nfkc_proto);
  const VocabularyData cjk = train_on_lines("nmt_nfkc_cjk", &cjk_proto);
  CHECK(cjk.normalization_name == "user_defined");  // SentencePiece's name for rules from a file
  std::string again;
  train_on_lines("nmt_nfkc_cjk", &again);
  CHECK(again == cjk_proto);  // the same vocabulary twice is the same bytes (the rule file's path is fixed)

  CHECK(normalize(nfkc, "我买了书，你呢？") == "我买了书,你呢?");
  CHECK(normalize(cjk, "我买了书，你呢？") == "我买了书，你呢？");
  CHECK(normalize(cjk, "他说：“好！”（真的）～；") == "他说：“好！”（真的）～；");
  // Letters and digits still fold, half-width forms still widen, the ideographic space is a space.
  CHECK(normalize(cjk, "ＡＢＣ１２３") == "ABC123");
  CHECK(normalize(cjk, "半角｡｢テスト｣") == "半角。「テスト」");
  CHECK(normalize(cjk, "一　二") == normalize(nfkc, "一　二"));

  // The rules: nmt_nfkc's, less exactly the kept punctuation.
  std::vector<std::pair<std::string, std::string>> nfkc_rules, cjk_rules;
  REQUIRE(detail::charsmap_rules(nfkc.precompiled_charsmap, &nfkc_rules).ok());
  REQUIRE(detail::charsmap_rules(cjk.precompiled_charsmap, &cjk_rules).ok());
  REQUIRE(nfkc_rules.size() > 1000);
  REQUIRE(rule_for(nfkc_rules, "，") != nullptr);
  CHECK(*rule_for(nfkc_rules, "，") == ",");
  CHECK(rule_for(cjk_rules, "，") == nullptr);
  CHECK(rule_for(cjk_rules, "？") == nullptr);
  REQUIRE(rule_for(cjk_rules, "Ａ") != nullptr);
  CHECK(*rule_for(cjk_rules, "Ａ") == "A");
  const std::map<std::string, std::string> cjk_map(cjk_rules.begin(), cjk_rules.end());
  size_t removed = 0, changed = 0;
  for (const auto& [from, to] : nfkc_rules) {
    const auto kept = cjk_map.find(from);
    if (kept == cjk_map.end()) {
      ++removed;
      INFO("removed rule for " << from);
      CHECK((from.size() == 3 && static_cast<unsigned char>(from[0]) == 0xEF));  // U+FFxx: one full-width mark
    } else if (kept->second != to) {
      ++changed;
    }
  }
  CHECK(changed == 0);
  CHECK(nfkc_rules.size() - removed == cjk_rules.size());
  // U+FF01-FF0F, FF1A-FF20, FF3B-FF40, FF5B-FF60, less ～ (U+FF5E), which nmt_nfkc already keeps.
  CHECK(removed == 15 + 7 + 6 + 6 - 1);

  // Ours tokenizes such a vocabulary as SentencePiece does.
  const auto pair = test::load_pair(cjk_proto);
  for (const std::string& line : kLines) {
    INFO(line);
    std::vector<int> theirs;
    REQUIRE(pair->reference.Encode(line, &theirs).ok());
    CHECK(test::encode(*pair->ours, line) == theirs);
  }
}

TEST_CASE("a charsmap whose trie loops is refused when its rules are read", "[vocab_normalization]") {
  // Unit 0 is its own child under label 'a' (offset 'a' from node 0): keys a, aa, aaa, ... without end.
  std::vector<uint8_t> blob(4 + 4 * 128 + 2, 0);
  const auto put = [&](size_t at, uint32_t v) {
    for (int b = 0; b < 4; ++b) blob[at + size_t(b)] = uint8_t(v >> (8 * b));
  };
  put(0, 4 * 128);
  put(4, (uint32_t('a') << 10) | 'a');
  std::vector<std::pair<std::string, std::string>> rules;
  const Status s = detail::charsmap_rules(blob, &rules);
  CHECK_FALSE(s.ok());
  CHECK(std::string(s.message()).find("loop") != std::string::npos);
}
