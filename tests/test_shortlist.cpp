// The vocabulary shortlist (SessionOptions::shortlist, Model::shortlist):
// what a sentence may be translated into, and that it depends on the
// sentence alone. A shortlist holding every id changes nothing, bit for bit;
// a sentence gives the same output alone and in any batch, on any thread
// split; every output token is one of its candidates; the file section is
// checked at load, kept by the writer and the quantizer, and refused when
// damaged.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "mt/model_writer.hpp"
#include "test_util.hpp"

using namespace mt;
using test::spans;

namespace {

// `k` seeded random targets per source id and `frequent` random frequent
// ids (k >= V: every id).
ShortlistData random_shortlist(const ModelConfig& c, int k, int frequent, uint32_t seed) {
  std::mt19937 random(seed);
  const int V = c.target_vocab_size;
  std::vector<int32_t> pool(static_cast<size_t>(V));
  for (int i = 0; i < V; ++i) pool[size_t(i)] = i;
  // n distinct ids by a partial Fisher-Yates shuffle of the pool (any order
  // of it will do): n swaps a row. A whole shuffle of 8,000 ids for each of
  // 8,000 rows was most of the int8 case's time under TSan (~80 of 89 s).
  const auto sample = [&](int n) {
    if (n >= V) {
      std::vector<int32_t> every(static_cast<size_t>(V));
      std::iota(every.begin(), every.end(), 0);
      return every;
    }
    for (int i = 0; i < n; ++i) {
      std::uniform_int_distribution<int> pick(i, V - 1);
      std::swap(pool[size_t(i)], pool[size_t(pick(random))]);
    }
    std::vector<int32_t> ids(pool.begin(), pool.begin() + n);
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  ShortlistData s;
  for (int src = 0; src < c.source_vocab_size; ++src) {
    const auto row = sample(k);
    s.targets.insert(s.targets.end(), row.begin(), row.end());
    s.row_ends.push_back(uint32_t(s.targets.size()));
  }
  s.frequent = sample(frequent);
  s.method = "test";
  return s;
}

// `model` written again with `shortlist` (or none) and loaded.
std::shared_ptr<const Model> with_shortlist(const Model& model, std::optional<ShortlistData> shortlist,
                                            const std::string& name) {
  auto writer = ModelWriter::from_model(model);
  REQUIRE(writer.ok());
  writer->set_shortlist(std::move(shortlist));
  const std::string path = test::scratch_path(name);
  const Status written = writer->write(path);
  INFO(written.message());
  REQUIRE(written.ok());
  auto loaded = Model::load(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  return loaded.value();
}

Session session_of(std::shared_ptr<const Model> model, bool shortlist, int threads = 1, int batch = 8) {
  SessionOptions o;
  o.max_batch_size = batch;
  o.max_beam_size = 4;
  o.max_source_length = 40;
  o.max_target_length = 40;
  o.num_threads = threads;
  o.shortlist = shortlist;
  auto session = Session::create(std::move(model), o);
  INFO(session.status().message());
  REQUIRE(session.ok());
  return std::move(session.value());
}

struct Output {
  std::vector<int32_t> tokens;
  std::vector<float> log_probs;
  float score = 0.0f;
  bool operator==(const Output&) const = default;
};

std::vector<std::vector<Output>> translate(Session& session, const std::vector<std::vector<int32_t>>& sources,
                                           const TranslateOptions& options) {
  Translations results;
  const Status s = session.translate(spans(sources), options, &results);
  INFO(s.message());
  REQUIRE(s.ok());
  std::vector<std::vector<Output>> out;
  for (size_t b = 0; b < results.size(); ++b) {
    auto& sentence = out.emplace_back();
    for (const Hypothesis& h : results[b]) {
      sentence.push_back({{h.tokens.begin(), h.tokens.end()}, {h.token_log_probs.begin(), h.token_log_probs.end()},
                          h.score});
    }
  }
  return out;
}

// The options the search takes different paths for.
std::vector<std::pair<std::string, TranslateOptions>> option_sets() {
  std::vector<std::pair<std::string, TranslateOptions>> sets;
  TranslateOptions greedy;
  greedy.beam_size = 1;
  sets.push_back({"greedy", greedy});
  TranslateOptions beam;
  beam.beam_size = 4;
  beam.num_hypotheses = 2;
  sets.push_back({"beam 4", beam});
  TranslateOptions guarded = beam;
  guarded.no_repeat_ngram_size = 2;
  guarded.repetition_penalty = 1.3f;
  guarded.min_decoding_length = 3;
  sets.push_back({"beam 4 with repetition guards and a minimum length", guarded});
  TranslateOptions greedy_guarded = guarded;
  greedy_guarded.beam_size = 1;
  greedy_guarded.num_hypotheses = 1;
  sets.push_back({"greedy with repetition guards", greedy_guarded});
  TranslateOptions alternatives;
  alternatives.alternatives = 3;
  sets.push_back({"alternatives 3", alternatives});
  return sets;
}

const std::vector<std::vector<int32_t>>& sources() {
  static const auto s = test::make_sources({7, 12, 3, 9, 15, 5, 11, 8}, test::tiny_config().source_vocab_size, 17);
  return s;
}

std::shared_ptr<const Model> tiny_model() {
  static const auto model = test::random_model(test::tiny_config(), 5, "shortlist-tiny.mtm");
  return model;
}

}  // namespace

TEST_CASE("a shortlist of the whole vocabulary translates bit for bit as none", "[shortlist]") {
  const auto plain = tiny_model();
  const auto full = with_shortlist(*plain, random_shortlist(plain->config(), 1 << 20, 0, 1), "full.mtm");
  REQUIRE(full->shortlist() != nullptr);
  REQUIRE(full->shortlist()->longest_row == plain->config().target_vocab_size);
  Session without = session_of(plain, true), with = session_of(full, true);
  for (const auto& [name, options] : option_sets()) {
    INFO(name);
    CHECK(translate(with, sources(), options) == translate(without, sources(), options));
  }
}

TEST_CASE("a shortlisted sentence translates the same alone and in any batch, on any thread split", "[shortlist]") {
  const auto plain = tiny_model();
  // Small rows: each sentence's candidates are a few dozen of the 301 ids,
  // and a batch's union is gathered (below half the vocabulary) or not.
  const int k = GENERATE(3, 12);
  const auto model = with_shortlist(*plain, random_shortlist(plain->config(), k, 5, 2), "k" + std::to_string(k) + ".mtm");
  for (const auto& [name, options] : option_sets()) {
    INFO(name << ", k " << k);
    Session alone = session_of(model, true, 1, 1);
    std::vector<std::vector<Output>> expected;
    for (const auto& source : sources()) expected.push_back(translate(alone, {source}, options)[0]);
#ifdef __EMSCRIPTEN__
    const int threads = 1;
#else
    const int threads = GENERATE(1, 2);
#endif
    Session batched = session_of(model, true, threads, 8);
    CHECK(translate(batched, sources(), options) == expected);
    // The same sentences, reversed: each with other neighbours.
    auto reversed = sources();
    std::reverse(reversed.begin(), reversed.end());
    auto got = translate(batched, reversed, options);
    std::reverse(got.begin(), got.end());
    CHECK(got == expected);
  }
}

TEST_CASE("every token a shortlisted sentence gets is one of its candidates", "[shortlist]") {
  const auto plain = tiny_model();
  const ShortlistData data = random_shortlist(plain->config(), 4, 3, 3);
  const auto model = with_shortlist(*plain, data, "k4.mtm");
  const ShortlistView& view = *model->shortlist();
  Session with = session_of(model, true), without = session_of(model, false);
  TranslateOptions options;
  options.beam_size = 4;
  options.num_hypotheses = 4;
  const auto got = translate(with, sources(), options);
  const auto whole = translate(without, sources(), options);
  int different = 0;
  for (size_t b = 0; b < sources().size(); ++b) {
    std::set<int32_t> candidates(view.frequent.begin(), view.frequent.end());
    candidates.insert(model->config().eos_id);
    for (const int32_t id : sources()[b]) candidates.insert(view.row(id).begin(), view.row(id).end());
    candidates.insert(view.row(model->config().eos_id).begin(), view.row(model->config().eos_id).end());  // source EOS
    for (const Output& h : got[b]) {
      for (const int32_t id : h.tokens) CHECK(candidates.count(id) == 1);
    }
    different += got[b] != whole[b];
  }
  CHECK(different > 0);  // 4 ids a row of 301: the shortlist did restrict
}

TEST_CASE("prefixes and a target prefix outside the shortlist are still taken", "[shortlist]") {
  const auto plain = tiny_model();
  const auto model = with_shortlist(*plain, random_shortlist(plain->config(), 2, 1, 4), "k2.mtm");
  const ShortlistView& view = *model->shortlist();
  // Ids no row and no frequent id holds.
  std::set<int32_t> listed(view.targets.begin(), view.targets.end());
  listed.insert(view.frequent.begin(), view.frequent.end());
  std::vector<int32_t> unlisted;
  for (int32_t id = 4; id < model->config().target_vocab_size && unlisted.size() < 3; ++id) {
    if (listed.count(id) == 0) unlisted.push_back(id);
  }
  REQUIRE(unlisted.size() == 3);
  Session session = session_of(model, true);
  for (const int beam : {1, 4}) {
    INFO("beam " << beam);
    TranslateOptions options;
    options.beam_size = beam;
    const std::vector<int32_t> forced = {unlisted[0]};
    options.target_prefix = forced;
    const std::vector<int32_t> given = {unlisted[1], unlisted[2]};
    const std::vector<std::span<const int32_t>> prefixes = {given};
    options.prefixes = prefixes;
    const auto got = translate(session, {sources()[0], sources()[1]}, options);
    REQUIRE(got[0][0].tokens.size() >= 3);
    CHECK(got[0][0].tokens[0] == unlisted[0]);
    CHECK(got[0][0].tokens[1] == unlisted[1]);
    CHECK(got[0][0].tokens[2] == unlisted[2]);
    CHECK(std::isfinite(got[0][0].log_probs[1]));  // scored among the sentence's candidates
    CHECK(got[1][0].tokens[0] == unlisted[0]);
  }
}

TEST_CASE("shortlist off translates as the model without one", "[shortlist]") {
  const auto plain = tiny_model();
  const auto model = with_shortlist(*plain, random_shortlist(plain->config(), 5, 5, 6), "k5.mtm");
  Session off = session_of(model, false), none = session_of(plain, true);
  for (const auto& [name, options] : option_sets()) {
    INFO(name);
    CHECK(translate(off, sources(), options) == translate(none, sources(), options));
  }
  // Session memory: only the session that uses it plans the shortlist's.
  CHECK(off.memory_size() == none.memory_size());
  CHECK(session_of(model, true).memory_size() > off.memory_size());
}

TEST_CASE("a cache shared by sessions with and without the shortlist keeps their translations apart",
          "[shortlist]") {
  const auto plain = tiny_model();
  const auto model = with_shortlist(*plain, random_shortlist(plain->config(), 3, 2, 7), "k3.mtm");
  auto cache = TranslationCache::create({100, 0});
  REQUIRE(cache.ok());
  Session with = session_of(model, true), without = session_of(model, false);
  TranslateOptions options;
  const auto expected_with = translate(with, sources(), options);
  const auto expected_without = translate(without, sources(), options);
  REQUIRE(expected_with != expected_without);
  options.cache = cache->get();
  for (int pass = 0; pass < 2; ++pass) {
    CHECK(translate(with, sources(), options) == expected_with);
    CHECK(translate(without, sources(), options) == expected_without);
  }
  CHECK((*cache)->stats().hits == 2 * sources().size());
}

TEST_CASE("scoring uses the whole vocabulary, shortlist or not", "[shortlist]") {
  const auto plain = tiny_model();
  const auto model = with_shortlist(*plain, random_shortlist(plain->config(), 3, 2, 8), "k3s.mtm");
  Session with = session_of(model, true), none = session_of(plain, true);
  const auto targets = test::make_sources({5, 8, 2, 6, 9, 3, 7, 4}, plain->config().target_vocab_size, 33);
  Translations a, b;
  REQUIRE(with.score(spans(sources()), spans(targets), {}, &a).ok());
  REQUIRE(none.score(spans(sources()), spans(targets), {}, &b).ok());
  for (size_t i = 0; i < a.size(); ++i) {
    const Hypothesis& x = a[i][0];
    const Hypothesis& y = b[i][0];
    CHECK(x.score == y.score);
    CHECK(std::vector<float>(x.token_log_probs.begin(), x.token_log_probs.end()) ==
          std::vector<float>(y.token_log_probs.begin(), y.token_log_probs.end()));
  }
}

TEST_CASE("an int8 model's shortlist: whole-vocabulary identity and batch independence", "[shortlist]") {
  const auto plain = test::shipped_int8_model();
  // The whole vocabulary as the frequent ids, one candidate per source id:
  // every id in every sentence's list without 8,000 x 8,000 candidates (a
  // 256 MB file written and loaded: half the case's time in release).
  const auto full = with_shortlist(*plain, random_shortlist(plain->config(), 1, 1 << 20, 9), "int8-full.mtm");
  REQUIRE(full->shortlist()->to_data().frequent.size() == size_t(plain->config().target_vocab_size));
  const auto small = with_shortlist(*plain, random_shortlist(plain->config(), 40, 60, 10), "int8-k40.mtm");
  const auto sources = test::encode_lines(*plain, std::vector<std::string>(test::shipped_sentences().begin(),
                                                                           test::shipped_sentences().begin() + 8));
  TranslateOptions options;
  options.beam_size = GENERATE(1, 4);
  INFO("beam " << options.beam_size);
  Session none = session_of(plain, true), whole = session_of(full, true);
  CHECK(translate(whole, sources, options) == translate(none, sources, options));
  Session alone = session_of(small, true, 1, 1), batched = session_of(small, true, 1, 8);
  std::vector<std::vector<Output>> expected;
  for (const auto& source : sources) expected.push_back(translate(alone, {source}, options)[0]);
  CHECK(translate(batched, sources, options) == expected);
}

TEST_CASE("the writer, from_model and the loader keep a shortlist as it was", "[shortlist]") {
  const auto plain = tiny_model();
  const ShortlistData data = random_shortlist(plain->config(), 6, 9, 11);
  const auto model = with_shortlist(*plain, data, "kept.mtm");
  const ShortlistData read = model->shortlist()->to_data();
  CHECK(read.frequent == data.frequent);
  CHECK(read.row_ends == data.row_ends);
  CHECK(read.targets == data.targets);
  CHECK(read.method == "test");
  CHECK(model->format_version() == plain->format_version());  // an older reader just ignores it
  const auto again = with_shortlist(*model, model->shortlist()->to_data(), "kept-again.mtm");
  CHECK(again->shortlist()->to_data().targets == data.targets);
  const auto removed = with_shortlist(*model, std::nullopt, "removed.mtm");
  CHECK(removed->shortlist() == nullptr);
}

TEST_CASE("a malformed shortlist is refused by the writer and the loader, naming what is wrong", "[shortlist]") {
  const auto plain = tiny_model();
  const ModelConfig& c = plain->config();
  struct Case {
    const char* name;
    void (*damage)(ShortlistData&, const ModelConfig&);
    const char* message;
  };
  const Case cases[] = {
      {"a target id past the vocabulary", [](ShortlistData& s, const ModelConfig& c) { s.targets[1] = c.target_vocab_size; },
       "outside [0, 301)"},
      {"a negative frequent id", [](ShortlistData& s, const ModelConfig&) { s.frequent[0] = -1; }, "frequent ids"},
      {"a row not ascending", [](ShortlistData& s, const ModelConfig&) { std::swap(s.targets[0], s.targets[1]); },
       "row 0 is not ascending"},
      {"a repeated id", [](ShortlistData& s, const ModelConfig&) { s.targets[1] = s.targets[0]; }, "not ascending"},
      {"a row missing", [](ShortlistData& s, const ModelConfig&) { s.row_ends.pop_back(); }, "rows for 301 source ids"},
      {"a row ending past the ids", [](ShortlistData& s, const ModelConfig&) { s.row_ends[3] = 1u << 30; }, "row 3 ends"},
      {"ids no row holds", [](ShortlistData& s, const ModelConfig&) { s.targets.push_back(7); }, "rows hold"},
      {"frequent ids out of order", [](ShortlistData& s, const ModelConfig&) { std::swap(s.frequent[0], s.frequent[1]); },
       "frequent ids is not ascending"},
  };
  for (const Case& k : cases) {
    INFO(k.name);
    ShortlistData data = random_shortlist(c, 4, 4, 12);
    k.damage(data, c);
    auto writer = ModelWriter::from_model(*plain);
    REQUIRE(writer.ok());
    writer->set_shortlist(data);
    auto bytes = writer->serialize();
    REQUIRE_FALSE(bytes.ok());
    CHECK_THAT(bytes.status().message(), Catch::Contains(k.message));
  }
}

TEST_CASE("a damaged shortlist section in a file is refused at load", "[shortlist]") {
  const auto plain = tiny_model();
  ShortlistData data = random_shortlist(plain->config(), 4, 4, 13);
  const auto model = with_shortlist(*plain, data, "to-damage.mtm");
  // Find the targets array in the file (its bytes follow a flatbuffers length) and break an id.
  const std::span<const uint8_t> bytes = model->bytes();
  const auto* targets = reinterpret_cast<const uint8_t*>(model->shortlist()->targets.data());
  const size_t at = size_t(targets - bytes.data());
  test::AlignedBytes copy(bytes.size());
  std::copy(bytes.begin(), bytes.end(), copy.data);
  for (const int32_t bad : {-5, 301, 1 << 30}) {
    INFO("id " << bad);
    std::memcpy(copy.data + at + 4, &bad, 4);
    auto loaded = Model::from_buffer(copy.span(bytes.size()));
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == Errc::invalid_model);
    CHECK_THAT(loaded.status().message(), Catch::Contains("shortlist row 0"));
  }
}
