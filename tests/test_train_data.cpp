// The trainer's data pipeline: aligned corpus reading, length filters,
// token-based batching and teacher-forcing batches, sampled segmentations.
#include <cmath>
#include <fstream>
#include <set>

#include "data/parallel_corpus.hpp"
#include "data/subword_sampling.hpp"
#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"
#include "vocab/vocab_train.hpp"

using namespace mt;
using namespace mt::train;

namespace {

struct Files {
  std::string source, target;
};

// tests/data/text/corpus.txt alternates English and German lines: split it.
Files split_corpus() {
  std::ifstream in(std::string(MT_TEXT_DATA_DIR) + "/corpus.txt");
  Files f{test::scratch_path("train.en"), test::scratch_path("train.de")};
  std::ofstream en(f.source), de(f.target);
  std::string a, b;
  while (std::getline(in, a) && std::getline(in, b)) {
    en << a << "\n";
    de << b << "\n";
  }
  return f;
}

const VocabularyData& vocabulary() {
  static const VocabularyData v = [] {
    vocab::TrainOptions o;
    o.inputs = {std::string(MT_TEXT_DATA_DIR) + "/corpus.txt"};
    o.vocab_size = 300;
    o.soft_limit = true;
    return vocab::train(o).value();
  }();
  return v;
}

}  // namespace

TEST_CASE("a parallel corpus is read, tokenized and filtered", "[train_data]") {
  const Files f = split_corpus();
  CorpusStats stats;
  auto corpus = read_parallel_corpus(f.source, f.target, vocabulary(), {}, &stats);
  INFO(corpus.status().message());
  REQUIRE(corpus.ok());
  CHECK(stats.lines == 290);
  CHECK(stats.kept == corpus->size());
  CHECK(stats.kept + stats.dropped_long + stats.dropped_ratio + stats.dropped_empty == stats.lines);
  REQUIRE_FALSE(corpus->empty());
  CHECK(corpus->front().line == 1);

  CorpusFilter strict;
  strict.max_tokens = 8;
  strict.max_ratio = 1.2f;
  auto filtered = read_parallel_corpus(f.source, f.target, vocabulary(), strict, &stats);
  REQUIRE(filtered.ok());
  CHECK(filtered->size() < corpus->size());
  CHECK(stats.dropped_long > 0);
  for (const SentencePair& p : *filtered) {
    CHECK(p.source.size() <= 8);
    CHECK(p.target.size() <= 8);
    CHECK(float(p.source.size()) <= 1.2f * float(p.target.size()));
  }
}

TEST_CASE("misaligned or missing files are refused", "[train_data]") {
  const Files f = split_corpus();
  std::ofstream(test::scratch_path("short.de")) << "nur eine Zeile\n";
  auto r = read_parallel_corpus(f.source, test::scratch_path("short.de"), vocabulary(), {}, nullptr);
  CHECK_THAT(r.status().message(), Catch::Contains("must be aligned"));
  CHECK_THAT(
      read_parallel_corpus(test::scratch_path("none.en"), f.target, vocabulary(), {}, nullptr).status().message(),
      Catch::Contains("cannot read") && Catch::Contains("none.en") && Catch::Contains("No such file"));
}

TEST_CASE("batches cover every pair once within the token budget", "[train_data]") {
  const Files f = split_corpus();
  auto corpus = read_parallel_corpus(f.source, f.target, vocabulary(), {}, nullptr);
  REQUIRE(corpus.ok());
  BatchingOptions o;
  o.max_tokens = 200;
  const auto batches = make_batches(*corpus, o, 7);
  std::multiset<uint32_t> seen;
  for (const auto& batch : batches) {
    REQUIRE_FALSE(batch.empty());
    const Batch b = assemble_batch(*corpus, batch, {});
    CHECK((b.B * std::max(b.S, b.T) <= 200 || b.B == 1));
    seen.insert(batch.begin(), batch.end());
  }
  CHECK(seen.size() == corpus->size());
  CHECK(std::set<uint32_t>(seen.begin(), seen.end()).size() == corpus->size());
  // Same seed, same batches; another seed, another order.
  CHECK(make_batches(*corpus, o, 7) == batches);
  CHECK(make_batches(*corpus, o, 8) != batches);
  o.max_sentences = 3;
  for (const auto& batch : make_batches(*corpus, o, 7)) CHECK(batch.size() <= 3);
}

TEST_CASE("batches hold teacher-forcing inputs and shifted labels", "[train_data]") {
  std::vector<SentencePair> corpus = {{{10, 11, 12}, {20, 21}, 1}, {{13}, {22, 23, 24, 25}, 2}};
  const Batch b = assemble_batch(corpus, {0, 1}, {0, 1, 2});
  REQUIRE(b.B == 2);
  CHECK(b.S == 4);
  CHECK(b.T == 5);
  CHECK(b.source == std::vector<int32_t>{10, 11, 12, 2, 13, 2, 0, 0});
  CHECK(b.source_lengths == std::vector<int32_t>{4, 2});
  CHECK(b.target_input == std::vector<int32_t>{1, 20, 21, 0, 0, 1, 22, 23, 24, 25});
  CHECK(b.target_output == std::vector<int32_t>{20, 21, 2, 0, 0, 22, 23, 24, 25, 2});
  CHECK(b.target_lengths == std::vector<int32_t>{3, 5});
  CHECK(b.target_tokens == 8);
}

namespace {

std::string decoded(const detail::Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string out(t.max_decoded_bytes(ids.size()), '\0');
  size_t length = 0;
  REQUIRE(t.decode(ids, {out.data(), out.size()}, &length).ok());
  out.resize(length);
  return out;
}

size_t tokens(const std::vector<SentencePair>& pairs) {
  size_t n = 0;
  for (const SentencePair& p : pairs) n += p.source.size() + p.target.size();
  return n;
}

}  // namespace

TEST_CASE("subword sampling draws each epoch's segmentations anew, the same again for the same epoch",
          "[train_data][sampling]") {
  const Files f = split_corpus();
  auto corpus = read_parallel_corpus(f.source, f.target, vocabulary(), {}, nullptr);
  REQUIRE(corpus.ok());
  auto sampler = SegmentationSampler::create(f.source, f.target, vocabulary(), 0.1, 100);
  INFO(sampler.status().message());
  REQUIRE(sampler.ok());
  const auto drawn = [&](uint64_t seed, int epoch) {
    std::vector<SentencePair> pairs = *corpus;
    auto kept_best = (*sampler)->resegment(seed, epoch, &pairs);
    INFO(kept_best.status().message());
    REQUIRE(kept_best.ok());
    CHECK(*kept_best == 0);
    return pairs;
  };
  const std::vector<SentencePair> a = drawn(1, 0);
  const auto tokenizer = detail::Tokenizer::create(vocabulary());
  REQUIRE(tokenizer.ok());
  size_t changed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const SentencePair &best = (*corpus)[i], &got = a[i];
    CHECK(got.line == best.line);
    CHECK(decoded(**tokenizer, got.source) == decoded(**tokenizer, best.source));
    CHECK(decoded(**tokenizer, got.target) == decoded(**tokenizer, best.target));
    changed += got.source != best.source || got.target != best.target;
  }
  INFO(changed << " of " << a.size() << " pairs segmented otherwise than best; tokens " << tokens(a) << " against "
               << tokens(*corpus));
  CHECK(changed > a.size() * 3 / 4);
  CHECK(tokens(a) > tokens(*corpus));  // the best path is the one with the fewest, likeliest pieces

  const auto same = [](const std::vector<SentencePair>& x, const std::vector<SentencePair>& y) {
    size_t n = 0;
    for (size_t i = 0; i < x.size(); ++i) n += x[i].source == y[i].source && x[i].target == y[i].target;
    return n;
  };
  CHECK(same(drawn(1, 0), a) == a.size());  // the same seed and epoch: the same draws
  CHECK(same(drawn(1, 1), a) < a.size() / 4);
  CHECK(same(drawn(2, 0), a) < a.size() / 4);
}

TEST_CASE("a side drawn longer than the length filter keeps its best segmentation", "[train_data][sampling]") {
  const Files f = split_corpus();
  CorpusFilter strict;
  strict.max_tokens = 24;
  auto corpus = read_parallel_corpus(f.source, f.target, vocabulary(), strict, nullptr);
  REQUIRE(corpus.ok());
  REQUIRE(corpus->size() > 10);
  auto sampler = SegmentationSampler::create(f.source, f.target, vocabulary(), 0.1, strict.max_tokens);
  REQUIRE(sampler.ok());
  std::vector<SentencePair> pairs = *corpus;
  auto kept_best = (*sampler)->resegment(3, 0, &pairs);
  REQUIRE(kept_best.ok());
  CHECK(*kept_best > 0);
  size_t best = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    CHECK(pairs[i].source.size() <= 24);
    CHECK(pairs[i].target.size() <= 24);
    best += pairs[i].source == (*corpus)[i].source;
    best += pairs[i].target == (*corpus)[i].target;
  }
  CHECK(best >= *kept_best);
}

TEST_CASE("subword sampling refuses what it cannot do, saying why", "[train_data][sampling]") {
  const Files f = split_corpus();
  for (const double bad : {0.0, -0.5, 1e4, std::nan("")}) {
    auto s = SegmentationSampler::create(f.source, f.target, vocabulary(), bad, 100);
    CHECK_THAT(s.status().message(), Catch::Contains("alpha must be in (0, 1000]"));
  }
  VocabularyData bpe = vocabulary();
  bpe.type = VocabularyType::bpe;
  CHECK_THAT(SegmentationSampler::create(f.source, f.target, bpe, 0.1, 100).status().message(),
             Catch::Contains("needs a unigram vocabulary"));
  std::ofstream(test::scratch_path("short.de")) << "nur eine Zeile\n";
  CHECK_THAT(
      SegmentationSampler::create(f.source, test::scratch_path("short.de"), vocabulary(), 0.1, 100).status().message(),
      Catch::Contains("must be aligned"));
  CHECK_THAT(
      SegmentationSampler::create(test::scratch_path("none.en"), f.target, vocabulary(), 0.1, 100).status().message(),
      Catch::Contains("none.en"));
  auto sampler = SegmentationSampler::create(f.source, f.target, vocabulary(), 0.1, 100);
  REQUIRE(sampler.ok());
  std::vector<SentencePair> stray = {{{5}, {6}, 100000}};
  CHECK_THAT((*sampler)->resegment(1, 0, &stray).status().message(), Catch::Contains("line 100000"));
}
