// Corpus parity: libmt's tokenizer and libsentencepiece 0.1.97 give the same
// ids and decoded text for every line of Multi30k (en, de, fr, cs) and
// Tatoeba (en, zh), with joint unigram and BPE vocabularies of 8k and 32k
// trained here (cached in the build tree). Skipped (MT_SKIP: ctest says
// Skipped) without ../shared/data; with it, every split file must be there
// and at least kMinCompared lines compared, so a corpus that went missing or
// empty cannot pass as parity. Builds that run 10x slower (sanitizers, qemu)
// compare the val and test splits only.
#include "test_skip.hpp"
#include "tokenizer_parity.hpp"

namespace mt::test {
namespace {

const std::filesystem::path kShared = MT_SHARED_DATA_DIR;

// Multi30k's val and test splits alone are 8,056 lines, Tatoeba's 4,000.
constexpr size_t kMinCompared = 1000;

struct Corpus {
  const char* dir;
  std::vector<const char*> languages;
  std::vector<const char*> splits;
};

const Corpus kMulti30k{"multi30k", {"en", "de", "fr", "cs"}, {"train", "val", "test_2016_flickr"}};
const Corpus kTatoeba{"tatoeba-cmn", {"en", "zh"}, {"train", "dev", "test"}};

void check_corpus(const Corpus& corpus, const char* type, int vocab_size) {
  const std::filesystem::path dir = kShared / corpus.dir;
  if (!std::filesystem::exists(dir)) MT_SKIP(dir.string() << " is absent (../shared/data)");
  std::vector<std::filesystem::path> train;
  for (const char* language : corpus.languages) train.push_back(dir / (std::string("train.") + language));
  const std::string name = std::string(corpus.dir) + "-" + type + "-" + std::to_string(vocab_size);
  const std::string model =
      cached_model(name,
                   std::string("--model_type=") + type + " --vocab_size=" + std::to_string(vocab_size) +
                       " --hard_vocab_limit=false --num_threads=2 --input_sentence_size=200000",
                   train);
  const auto pair = load_pair(model);
  ParityChecker checker(*pair);
  for (const char* split : corpus.splits) {
    // Sanitizers, qemu: val and test only (the release build compares the train split too).
    if (MT_SLOW_BUILD && std::string(split) == "train") continue;
    for (const char* language : corpus.languages) {
      const std::filesystem::path path = dir / (std::string(split) + "." + language);
      const std::vector<std::string> lines = read_lines(path);
      INFO(path);
      REQUIRE(!lines.empty());  // absent or empty: read_lines gives nothing
      for (const std::string& line : lines) checker.check(line);
    }
  }
  INFO(checker.compared() << " lines compared");
  checker.require_none();
  REQUIRE(checker.compared() >= kMinCompared);
}

TEST_CASE("tokenizer corpus parity multi30k unigram 8k", "[tokenizer][corpus]") {
  check_corpus(kMulti30k, "unigram", 8000);
}
TEST_CASE("tokenizer corpus parity multi30k unigram 32k", "[tokenizer][corpus]") {
  check_corpus(kMulti30k, "unigram", 32000);
}
TEST_CASE("tokenizer corpus parity multi30k bpe 8k", "[tokenizer][corpus]") { check_corpus(kMulti30k, "bpe", 8000); }
TEST_CASE("tokenizer corpus parity multi30k bpe 32k", "[tokenizer][corpus]") { check_corpus(kMulti30k, "bpe", 32000); }
TEST_CASE("tokenizer corpus parity tatoeba unigram 8k", "[tokenizer][corpus]") {
  check_corpus(kTatoeba, "unigram", 8000);
}
TEST_CASE("tokenizer corpus parity tatoeba unigram 32k", "[tokenizer][corpus]") {
  check_corpus(kTatoeba, "unigram", 32000);
}
TEST_CASE("tokenizer corpus parity tatoeba bpe 8k", "[tokenizer][corpus]") { check_corpus(kTatoeba, "bpe", 8000); }
TEST_CASE("tokenizer corpus parity tatoeba bpe 32k", "[tokenizer][corpus]") { check_corpus(kTatoeba, "bpe", 32000); }

}  // namespace
}  // namespace mt::test
