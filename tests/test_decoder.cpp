// The decoder: incremental decoding equals recomputing the prefix, beam 1
// equals greedy, batching and threads do not change results, options are checked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "support/arena.hpp"
#include "session/session_impl.hpp"
#include "test_util.hpp"
#include "access.hpp"

using namespace mt;
using mt::test::make_sources;
using mt::test::random_model;
using mt::test::spans;
using mt::test::tiny_config;

namespace {

struct Output {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<float> scores;
};

Output run(Session& session, const std::vector<std::vector<int32_t>>& sources, const TranslateOptions& options) {
  Translations results;
  const Status status = session.translate(spans(sources), options, &results);
  INFO(status.message());
  REQUIRE(status.ok());
  REQUIRE(results.size() == sources.size());
  Output out;
  for (size_t i = 0; i < results.size(); ++i) {
    for (const Hypothesis& h : results[i]) {
      out.tokens.emplace_back(h.tokens.begin(), h.tokens.end());
      out.scores.push_back(h.score);
    }
  }
  return out;
}

Session make_session(std::shared_ptr<const Model> model, int batch = 8, int beam = 4, int threads = 1,
                     ThreadSplit split = ThreadSplit::layers) {
  SessionOptions o;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.max_source_length = 40;
  o.max_target_length = 24;
  o.num_threads = threads;
  o.thread_split = split;
  auto session = Session::create(std::move(model), o);
  INFO(session.status().message());
  REQUIRE(session.ok());
  return std::move(session.value());
}

ModelConfig config_variant(int variant) {
  ModelConfig c = tiny_config();
  if (variant == 1) {
    c.pre_norm = true;
    c.activation = Activation::gelu;
  } else if (variant == 2) {
    c.shared_embeddings = c.tied_output = false;
    c.source_vocab_size = 257;
  } else if (variant == 3) {
    c.activation = Activation::swish;  // OPUS-MT's
  }
  return c;
}

}  // namespace

TEST_CASE("incremental decoding matches recomputing the whole prefix", "[decoder]") {
  const int variant = GENERATE(0, 1, 2, 3);
  const ModelConfig config = config_variant(variant);
  auto model = random_model(config, 11 + variant);
  Session session = make_session(model, 2, 1);
  const auto sources = make_sources({9, 4}, config.source_vocab_size, 3);
  run(session, sources, {});  // encodes the batch: cross-attention keys/values now in the session

  Session::Impl& s = *detail::impl_of(session);
  const int T = 12, V = config.target_vocab_size, C = config.d_model, F = config.d_ff;
  std::vector<int32_t> prefix = {config.bos_id};
  for (int t = 1; t < T; ++t) prefix.push_back(int32_t(4 + (t * 37) % (V - 4)));

  for (int source = 0; source < 2; ++source) {
    // Full recomputation: T rows attending causally, one sequence.
    std::vector<float> x(T * C), y(T * C), qkv(T * 3 * C), q(T * C), attn(T * C), hidden(T * F), full(T * V);
    detail::DecoderBuffers full_buffers{x.data(), y.data(), qkv.data(), q.data(), attn.data(), hidden.data()};
    detail::DecoderState state = s.decoder_state(1);
    // Row r of this call reads source r: point the offsets at the wanted sentence.
    const int* offsets = state.source_offsets;
    const int one_source[2] = {offsets[source], offsets[source + 1]};
    state.source_offsets = one_source;
    s.transformer->decode_full(prefix.data(), 1, T, state, full_buffers, full.data());

    float* step_logits = s.at<float>(s.plan.logits);
    for (int t = 0; t < T; ++t) {
      s.transformer->decode_step(&prefix[t], 1, t, state, s.decoder_buffers(), step_logits);
      double max_diff = 0.0, max_abs = 0.0;
      for (int v = 0; v < V; ++v) {
        max_diff = std::max(max_diff, double(std::fabs(step_logits[v] - full[size_t(t) * V + v])));
        max_abs = std::max(max_abs, double(std::fabs(full[size_t(t) * V + v])));
      }
      INFO("variant " << variant << " source " << source << " step " << t);
      REQUIRE(max_abs > 0.0);
      REQUIRE(max_diff / max_abs <= 1e-5);
    }
  }
}

// Format version 3's config fields, each against a model that says the same
// thing in the older way (the same seed gives the same weights).
TEST_CASE("decoder_start_id and source_eos and embedding_scale do what they say", "[decoder]") {
  const ModelConfig base = tiny_config();
  const auto sources = make_sources({9, 4, 6}, base.source_vocab_size, 5);
  TranslateOptions beam;
  beam.beam_size = 4;
  auto translate = [&](const ModelConfig& config, const std::string& name,
                       const std::vector<std::vector<int32_t>>& input) {
    Session session = make_session(random_model(config, 31, name), 8, 4);
    return std::pair{run(session, input, {}).tokens, run(session, input, beam).tokens};
  };
  const auto reference = translate(base, "base.mtm", sources);

  SECTION("decoder_start_id: as a model whose bos is that id") {
    ModelConfig start = base, bos = base;
    start.decoder_start_id = 7;
    bos.bos_id = 7;
    const auto got = translate(start, "start.mtm", sources);
    CHECK(got == translate(bos, "bos.mtm", sources));
    CHECK(got != reference);               // the start token matters
    start.decoder_start_id = base.eos_id;  // fairseq starts from eos: allowed
    CHECK(translate(start, "start-eos.mtm", sources).first.size() == sources.size());
  }
  SECTION("source_eos false: as the caller appending eos itself") {
    ModelConfig no_eos = base;
    no_eos.source_eos = false;
    std::vector<std::vector<int32_t>> with_eos = sources;
    for (auto& s : with_eos) s.push_back(base.eos_id);
    CHECK(translate(no_eos, "no-eos.mtm", with_eos) == reference);
    CHECK(translate(no_eos, "no-eos.mtm", sources) != reference);
  }
  SECTION("embedding_scale: sqrt(d_model) is the default, another value changes the model") {
    ModelConfig scaled = base;
    scaled.embedding_scale = std::sqrt(float(base.d_model));
    CHECK(translate(scaled, "scale-sqrt.mtm", sources) == reference);
    scaled.embedding_scale = 1.0f;
    CHECK(translate(scaled, "scale-1.mtm", sources) != reference);
  }
}

TEST_CASE("stored position tables and suppressed ids do what they say", "[decoder]") {
  const ModelConfig base = tiny_config();
  const auto sources = make_sources({9, 4, 6, 12, 3}, base.source_vocab_size, 6);
  TranslateOptions beam;
  beam.beam_size = 4;
  auto translate = [&](std::shared_ptr<const Model> model) {
    Session session = make_session(std::move(model), 8, 4);
    return std::pair{run(session, sources, {}), run(session, sources, beam)};
  };
  const auto reference = translate(random_model(base, 41, "positions-computed.mtm"));

  SECTION("stored_positions: the sinusoid stored is the sinusoid computed; another table is another model") {
    ModelConfig stored = base;
    stored.stored_positions = true;
    auto model = random_model(stored, 41, "positions-stored.mtm");  // the table is filled with the sinusoid
    CHECK(model->format_version() == 3);
    const auto got = translate(model);
    CHECK(got.first.tokens == reference.first.tokens);
    CHECK(got.first.scores == reference.first.scores);
    CHECK(got.second.tokens == reference.second.tokens);
    CHECK(got.second.scores == reference.second.scores);

    // Offset by two rows, as fairseq's are: row p holds the sinusoid of p + 2.
    const TensorView* table = model->find_tensor("position_encoding");
    REQUIRE(table != nullptr);
    test::AlignedFile file(test::scratch_path("41-positions-stored.mtm"));
    const size_t offset = size_t(table->data.data() - model->bytes().data()), C = size_t(base.d_model);
    float* rows = reinterpret_cast<float*>(file.data + offset);
    std::memmove(rows, rows + 2 * C, (size_t(base.max_positions) - 2) * C * sizeof(float));
    auto shifted = Model::from_buffer(file.span(file.size));
    REQUIRE(shifted.ok());
    CHECK(translate(shifted.value()).first.tokens != reference.first.tokens);
  }
  SECTION("suppressed ids: never emitted, and the others keep their log-probabilities") {
    std::map<int32_t, int> counts;
    for (const auto& t : reference.first.tokens) {
      for (const int32_t id : t) ++counts[id];
    }
    const int32_t often =
        std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    ModelConfig suppressing = base;
    suppressing.suppressed_ids = {often};
    const auto got = translate(random_model(suppressing, 41, "suppressing.mtm"));
    int unchanged = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      const auto& ref = reference.first.tokens[i];
      CHECK(std::count(got.first.tokens[i].begin(), got.first.tokens[i].end(), often) == 0);
      if (std::count(ref.begin(), ref.end(), often) == 0) {
        // The suppressed id's mass stays in the log-softmax: same scores.
        CHECK(got.first.tokens[i] == ref);
        CHECK(got.first.scores[i] == reference.first.scores[i]);
        ++unchanged;
      }
    }
    CHECK(unchanged < int(sources.size()));  // the suppressed id was in some output
    for (const auto& t : got.second.tokens) CHECK(std::count(t.begin(), t.end(), often) == 0);

    suppressing.suppressed_ids = {suppressing.eos_id};
    CHECK_THAT(suppressing.validate().message(), Catch::Contains("must not hold eos_id"));
    suppressing.suppressed_ids = {5, 4};
    CHECK_THAT(suppressing.validate().message(), Catch::Contains("sorted and unique"));
  }
}

TEST_CASE("forced logits follow the greedy path the search took", "[decoder]") {
  const ModelConfig config = tiny_config();
  Session session = make_session(random_model(config, 43), 8, 4);
  const auto sources = make_sources({7, 11}, config.source_vocab_size, 8);
  const Output greedy = run(session, sources, {});
  const size_t V = size_t(config.target_vocab_size);
  for (size_t i = 0; i < sources.size(); ++i) {
    std::vector<int32_t> target = greedy.tokens[i];
    if (target.size() < 24) target.push_back(config.eos_id);  // else it stopped at max_target_length
    std::vector<float> logits(target.size() * V);
    const Status status = session.forced_logits(sources[i], target, logits);
    INFO(status.message());
    REQUIRE(status.ok());
    double log_prob = 0.0;
    for (size_t t = 0; t < target.size(); ++t) {
      const float* row = logits.data() + t * V;
      CHECK(std::max_element(row, row + V) - row == target[t]);  // greedy took each row's best
      const float top = *std::max_element(row, row + V);
      double sum = 0.0;
      for (size_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - top);
      log_prob += double(row[target[t]]) - top - std::log(sum);
    }
    CHECK(log_prob / double(target.size()) == Approx(greedy.scores[i]).epsilon(1e-4));
  }
  std::vector<float> small(3);
  CHECK_THAT(session.forced_logits(sources[0], greedy.tokens[0], small).message(), Catch::Contains("needs"));
  std::vector<int32_t> too_long(40, 5);
  std::vector<float> room(too_long.size() * V);
  CHECK_THAT(session.forced_logits(sources[0], too_long, room).message(), Catch::Contains("max_target_length"));
}

TEST_CASE("source and target prefixes put ids before every source and force the first target tokens", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 47);
  const auto sources = make_sources({7, 3, 12, 0, 5}, config.source_vocab_size, 10);
  const std::vector<int32_t> source_prefix = {11, 12}, target_prefix = {21, 22};
  const size_t V = size_t(config.target_vocab_size);

  SECTION("a source prefix is the same as writing it before each source") {
    Session session = make_session(model, 8, 4);
    TranslateOptions options;
    options.source_prefix = source_prefix;
    std::vector<std::vector<int32_t>> written = sources;
    for (auto& s : written) {
      if (!s.empty()) s.insert(s.begin(), source_prefix.begin(), source_prefix.end());
    }
    CHECK(run(session, sources, options).tokens == run(session, written, {}).tokens);
    options.beam_size = 4;
    TranslateOptions beam;
    beam.beam_size = 4;
    CHECK(run(session, sources, options).tokens == run(session, written, beam).tokens);
  }
  SECTION("a target prefix is forced, scored 0, and the search goes on from it") {
    Session session = make_session(model, 8, 4);
    for (const int beam : {1, 4}) {
      TranslateOptions options;
      options.beam_size = beam;
      options.target_prefix = target_prefix;
      const Output got = run(session, sources, options);
      for (size_t i = 0; i < sources.size(); ++i) {
        const std::vector<int32_t>& tokens = got.tokens[i];
        if (sources[i].empty()) {
          CHECK(tokens.empty());
          continue;
        }
        REQUIRE(tokens.size() >= 2);
        CHECK(std::vector<int32_t>(tokens.begin(), tokens.begin() + 2) == target_prefix);
        if (beam > 1) continue;
        // Greedy: every later token is the best of its row, and the score
        // counts them (not the prefix) over the whole length.
        std::vector<int32_t> target = tokens;
        if (target.size() < 24) target.push_back(config.eos_id);
        std::vector<float> logits(target.size() * V);
        REQUIRE(session.forced_logits(sources[i], target, logits).ok());
        double log_prob = 0.0;
        for (size_t t = 2; t < target.size(); ++t) {
          const float* row = logits.data() + t * V;
          CHECK(std::max_element(row, row + V) - row == target[t]);
          const float top = *std::max_element(row, row + V);
          double sum = 0.0;
          for (size_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - top);
          log_prob += double(row[target[t]]) - top - std::log(sum);
        }
        CHECK(log_prob / double(target.size()) == Approx(got.scores[i]).epsilon(1e-4));
      }
    }
  }
  SECTION("bad prefixes are refused by name") {
    Session session = make_session(model, 8, 4);
    Translations results;
    TranslateOptions options;
    const std::vector<int32_t> with_eos = {config.eos_id}, out_of_range = {config.source_vocab_size};
    options.target_prefix = with_eos;
    CHECK_THAT(session.translate(spans(sources), options, &results).message(), Catch::Contains("target_prefix has id"));
    options.target_prefix = {};
    options.source_prefix = out_of_range;
    CHECK_THAT(session.translate(spans(sources), options, &results).message(), Catch::Contains("source_prefix has id"));
    const std::vector<int32_t> long_prefix(40, 5);
    options.source_prefix = long_prefix;
    CHECK_THAT(session.translate(spans(sources), options, &results).message(), Catch::Contains("source_prefix"));
  }
}

TEST_CASE("sessions split by sentences give prefixed sources and forced targets the same results", "[decoder]") {
  if (!kHasThreads) MT_SKIP("this build has no threads (see the num_threads test)");
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 47);
  const auto sources = make_sources({7, 3, 12, 0, 5}, config.source_vocab_size, 10);
  const std::vector<int32_t> source_prefix = {11, 12}, target_prefix = {21, 22};
  Session one = make_session(model, 8, 4);
  Session lanes = make_session(model, 8, 4, 2, ThreadSplit::sentences);
  TranslateOptions options;
  options.source_prefix = source_prefix;
  options.target_prefix = target_prefix;
  for (const int beam : {1, 4}) {
    options.beam_size = beam;
    const Output a = run(one, sources, options), b = run(lanes, sources, options);
    CHECK(a.tokens == b.tokens);
    CHECK(a.scores == b.scores);
  }
}

TEST_CASE("beam search with beam 1 gives the greedy result", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 21);
  Session session = make_session(model);
  const auto sources = make_sources({1, 5, 12, 30, 7, 2}, config.source_vocab_size, 9);
  TranslateOptions options;
  options.max_decoding_length = 20;
  const Output greedy = run(session, sources, options);

  // Drive the beam-search routine itself with K = 1.
  Translations results;
  REQUIRE(session.translate(spans(sources), options, &results).ok());
  Session::Impl& s = *detail::impl_of(session);
  s.beam_search(int(sources.size()), detail::search_limits(options, s.length_offset));  // options: beam 1
  for (size_t i = 0; i < sources.size(); ++i) {
    REQUIRE(results[i].size() == 1);
    const Hypothesis& h = results[i][0];
    CHECK(std::vector<int32_t>(h.tokens.begin(), h.tokens.end()) == greedy.tokens[i]);
    CHECK(h.score == Approx(greedy.scores[i]).epsilon(1e-6));
  }
}

TEST_CASE("a batch of mixed lengths translates as each sentence alone", "[decoder]") {
  const int variant = GENERATE(0, 1);
  const ModelConfig config = config_variant(variant);
  auto model = random_model(config, 31 + variant);
  Session session = make_session(model);
  const auto sources = make_sources({3, 17, 1, 39, 8, 0, 25, 11}, config.source_vocab_size, 4);
  for (int beam : {1, 4}) {
    TranslateOptions options;
    options.beam_size = beam;
    options.num_hypotheses = beam == 4 ? 3 : 1;
    const Output batched = run(session, sources, options);
    Output alone;
    for (const auto& s : sources) {
      const Output one = run(session, {s}, options);
      alone.tokens.insert(alone.tokens.end(), one.tokens.begin(), one.tokens.end());
      alone.scores.insert(alone.scores.end(), one.scores.begin(), one.scores.end());
    }
    INFO("variant " << variant << " beam " << beam);
    CHECK(batched.tokens == alone.tokens);
    // Every element is computed in the same order whatever the batch: exact.
    CHECK(batched.scores == alone.scores);
  }
}

// Rows of every call of the output layer: one call per decoding step.
class OutputRows : public detail::LinearObserver {
 public:
  explicit OutputRows(const detail::ModelWeights& w) : output_(w.output.index) {}
  void observe(const detail::Linear& layer, const float*, int M, int) override {
    if (layer.index == output_) rows.push_back(M);
  }
  std::vector<int> rows;

 private:
  int output_;
};

TEST_CASE("each step decodes only the live beams of unfinished sentences", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 71);
  Session session = make_session(model);
  OutputRows observer(detail::weights_of(*model));
  REQUIRE(detail::set_linear_observer(session, &observer).ok());
  // Length limits 2, 5 and 8 (ratio 1 of the source length) with EOS
  // forbidden: the sentences finish after exactly 2, 5 and 8 steps.
  const auto sources = make_sources({2, 5, 8}, config.source_vocab_size, 8);
  TranslateOptions options;
  options.max_length_ratio = 1.0f;
  options.min_decoding_length = 8;
  run(session, sources, options);
  CHECK(observer.rows == std::vector<int>{3, 3, 2, 2, 2, 1, 1, 1});

  // Beam 4: the first step has one live beam per sentence.
  observer.rows.clear();
  options.beam_size = 4;
  run(session, sources, options);
  CHECK(observer.rows == std::vector<int>{3, 12, 8, 8, 8, 4, 4, 4});
  REQUIRE(detail::set_linear_observer(session, nullptr).ok());
}

TEST_CASE("results do not depend on the number of threads or how they split the work", "[decoder]") {
  if (!kHasThreads) MT_SKIP("this build has no threads (see the num_threads test)");
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 41);
  const ThreadSplit split = GENERATE(ThreadSplit::layers, ThreadSplit::sentences);
  INFO("split " << int(split));
  Session one = make_session(model, 8, 4, 1);
  Session two = make_session(model, 8, 4, 2, split);
  Session three = make_session(model, 8, 4, 3, split);
  CHECK(detail::impl_of(two)->lanes.size() == (split == ThreadSplit::sentences ? 2u : 0u));
  CHECK(detail::impl_of(three)->lanes.size() == (split == ThreadSplit::sentences ? 3u : 0u));
  // Five sentences on three lanes (2, 2, 1), then two (a lane left idle) and one.
  for (const std::vector<int>& lengths : {std::vector<int>{5, 9, 13, 2, 20}, {7, 3}, {11}}) {
    const auto sources = make_sources(lengths, config.source_vocab_size, 5);
    for (int beam : {1, 3}) {
      TranslateOptions options;
      options.beam_size = beam;
      options.num_hypotheses = beam == 3 ? 2 : 1;
      const Output a = run(one, sources, options), b = run(two, sources, options), c = run(three, sources, options);
      CHECK(a.tokens == b.tokens);
      CHECK(a.scores == b.scores);
      CHECK(a.tokens == c.tokens);
      CHECK(a.scores == c.scores);
    }
  }
}

TEST_CASE("automatic thread split: sentences and for large models a wide lane for small batches", "[decoder]") {
  if (!kHasThreads) MT_SKIP("this build has no threads (see the num_threads test)");
  ModelConfig small = tiny_config();
  ModelConfig large = tiny_config();
  large.d_ff = 16384;  // the FFNs of 4 layers: 4 x 2 x 16384 x 64 fp32 weights, 34 MB
  for (const auto& [config, has_wide] : {std::pair{small, false}, std::pair{large, true}}) {
    auto model = random_model(config, 43);
    INFO(model->file_size() << " bytes");
    Session one = make_session(model, 8, 2, 1);
    Session three = make_session(model, 8, 2, 3, ThreadSplit::automatic);
    CHECK(detail::impl_of(three)->lanes.size() == 3);
    CHECK((detail::impl_of(three)->wide != nullptr) == has_wide);
    CHECK(detail::impl_of(make_session(model, 8, 1, 1, ThreadSplit::automatic))->lanes.empty());
    // Batches of 2 (the wide lane, when there is one) and 5 (the lanes).
    for (const std::vector<int>& lengths : {std::vector<int>{6, 3}, {4, 8, 1, 9, 5}}) {
      const auto sources = make_sources(lengths, config.source_vocab_size, 9);
      for (int beam : {1, 2}) {
        TranslateOptions options;
        options.beam_size = beam;
        const Output a = run(one, sources, options), b = run(three, sources, options);
        CHECK(a.tokens == b.tokens);
        CHECK(a.scores == b.scores);
      }
    }
  }
}

TEST_CASE("beam search returns sorted n-best lists that beat greedy", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 51);
  Session session = make_session(model);
  const auto sources = make_sources({6, 14, 3}, config.source_vocab_size, 6);
  TranslateOptions greedy_options;
  const Output greedy = run(session, sources, greedy_options);
  TranslateOptions options;
  options.beam_size = 4;
  options.num_hypotheses = 4;
  Translations results;
  REQUIRE(session.translate(spans(sources), options, &results).ok());
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto hyps = results[i];
    REQUIRE(hyps.size() == 4);
    for (size_t k = 1; k < hyps.size(); ++k) CHECK(hyps[k - 1].score >= hyps[k].score);
    for (size_t k = 0; k < hyps.size(); ++k) {
      CHECK(hyps[k].tokens.size() <= 24);
      const float length = float(hyps[k].tokens.size()) + (hyps[k].tokens.size() < 24 ? 1.0f : 0.0f);
      CHECK(hyps[k].score == Approx(hyps[k].log_prob / length).epsilon(1e-5));
      for (size_t j = 0; j < k; ++j) {
        CHECK(std::vector<int32_t>(hyps[k].tokens.begin(), hyps[k].tokens.end()) !=
              std::vector<int32_t>(hyps[j].tokens.begin(), hyps[j].tokens.end()));
      }
    }
    // A search of four beams never ends below the single greedy path.
    CHECK(hyps[0].score >= greedy.scores[i] - 1e-5f);
  }
}

TEST_CASE("a model's length offset counts in every score, greedy and beam, lanes included", "[decoder]") {
  // OpenNMT-py divides by the length plus its start token: converters write
  // metadata decoding.length_offset = 1 for its models.
  const ModelConfig config = tiny_config();
  auto with_offset = [&](const std::string& value) {
    auto writer = random_model_writer(config, 52);
    REQUIRE(writer.ok());
    ModelMetadata metadata;
    if (!value.empty()) metadata.extra = {{"decoding.length_offset", value}};
    writer->set_metadata(metadata);
    const std::string path = test::scratch_path("length-offset-" + value + ".mtm");
    REQUIRE(writer->write(path).ok());
    auto model = Model::load(path);
    REQUIRE(model.ok());
    return std::shared_ptr<const Model>(std::move(model.value()));
  };
  const auto sources = make_sources({6, 14, 3, 9}, config.source_vocab_size, 7);
  for (const int beam : {1, 4}) {
    for (const ThreadSplit split : {ThreadSplit::layers, ThreadSplit::sentences}) {
      TranslateOptions options;
      options.beam_size = beam;
      options.num_hypotheses = beam;
      // Two threads split by sentences are lanes; a build without threads (WebAssembly) has one.
      const int threads = kHasThreads ? 2 : 1;
      Session plain = make_session(with_offset(""), 8, 4, threads, split);
      Session offset = make_session(with_offset("1"), 8, 4, threads, split);
      Translations a, b;
      REQUIRE(plain.translate(spans(sources), options, &a).ok());
      REQUIRE(offset.translate(spans(sources), options, &b).ok());
      for (size_t i = 0; i < sources.size(); ++i) {
        for (const Hypothesis& h : b[i]) {
          const float length = float(h.tokens.size()) + (h.tokens.size() < 24 ? 1.0f : 0.0f);
          CHECK(h.score == Approx(h.log_prob / (length + 1.0f)).epsilon(1e-5));
        }
        if (beam == 1) CHECK(a[i][0].log_prob == b[i][0].log_prob);  // the same path, scored otherwise
      }
    }
  }
  SessionOptions o;
  CHECK_THAT(Session::create(with_offset("2"), o).status().message(),
             Catch::Contains("model metadata decoding.length_offset = '2': must be 0 or 1"));
}

TEST_CASE("decoding lengths follow the options", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 61);
  Session session = make_session(model);
  const auto sources = make_sources({4, 10}, config.source_vocab_size, 7);
  for (int beam : {1, 2}) {
    TranslateOptions options;
    options.beam_size = beam;
    options.max_decoding_length = 5;
    for (const auto& t : run(session, sources, options).tokens) CHECK(t.size() <= 5);
    options.max_decoding_length = 0;
    options.max_length_ratio = 0.5f;
    options.max_length_offset = 1;
    const Output ratio = run(session, sources, options);
    CHECK(ratio.tokens[0].size() <= 3);
    CHECK(ratio.tokens[1].size() <= 6);
    // With EOS forbidden until the limit, every output has exactly that length.
    options.max_length_ratio = 0.0f;
    options.max_decoding_length = 7;
    options.min_decoding_length = 7;
    for (const auto& t : run(session, sources, options).tokens) CHECK(t.size() == 7);
  }
}

TEST_CASE("bad options and inputs are refused with clear errors", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 71);
  Session session = make_session(model, 2, 4);
  Translations out;
  auto fails = [&](const std::vector<std::vector<int32_t>>& sources, TranslateOptions o, const char* words) {
    const Status s = session.translate(spans(sources), o, &out);
    INFO(s.message());
    CHECK_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains(words));
  };
  const std::vector<std::vector<int32_t>> ok = {{5, 6}};
  TranslateOptions o;
  o.beam_size = 0;
  fails(ok, o, "beam_size = 0");
  o.beam_size = 5;
  fails(ok, o, "beam_size = 5");
  o = {};
  o.beam_size = 2;
  o.num_hypotheses = 3;
  fails(ok, o, "num_hypotheses = 3");
  o = {};
  o.max_decoding_length = 1000;
  fails(ok, o, "max_decoding_length = 1000");
  o = {};
  o.length_penalty = std::nanf("");
  fails(ok, o, "length_penalty");
  fails({{5}, {6}, {7}}, {}, "max_batch_size 2");
  fails({std::vector<int32_t>(40, 5)}, {}, "sentence 0 has 40 tokens");
  fails({{5, 301}}, {}, "id 301");
  fails({{5, -1}}, {}, "id -1");
  CHECK(session.translate(spans(ok), {}, nullptr).code() == Errc::invalid_argument);
  // The session still works after refusing.
  REQUIRE(session.translate(spans(ok), {}, &out).ok());
  CHECK(out.size() == 1);
  REQUIRE(session.translate({}, {}, &out).ok());
  CHECK(out.size() == 0);

  SessionOptions so;
  so.num_threads = 0;
  CHECK_THAT(Session::create(model, so).status().message(), Catch::Contains("num_threads = 0"));
  // Two threads: a session, or in a build without threads a clear refusal.
  so.num_threads = 2;
  auto two = Session::create(model, so);
  CHECK(two.ok() == kHasThreads);
  if (!kHasThreads) CHECK_THAT(two.status().message(), Catch::Contains("num_threads = 2: must be 1"));
  so = {};
  so.max_target_length = 129;
  CHECK_THAT(Session::create(model, so).status().message(), Catch::Contains("max_target_length = 129"));
  so = {};
  so.max_batch_size = 0;
  CHECK_FALSE(Session::create(model, so).ok());
  // B x S past what int indexes: refused, not planned with a wrapped size.
  ModelConfig long_config = config;
  long_config.max_positions = 65536;
  auto long_model = random_model(long_config, 72);
  so = {};
  so.max_batch_size = 65536;
  so.max_source_length = 65536;
  so.max_target_length = 1;
  so.max_beam_size = 1;
  CHECK_THAT(Session::create(long_model, so).status().message(),
             Catch::Contains("max_batch_size x max_source_length = 4294967296 tokens"));
  CHECK_FALSE(Session::required_memory(*long_model, so).ok());
  CHECK_FALSE(Session::create(nullptr, {}).ok());
}

TEST_CASE("a CUDA session is created or refused with a reason, never a crash", "[decoder]") {
  auto model = random_model(tiny_config(), 73);
  SessionOptions so;
  so.device = Device::cuda;
  auto session = Session::create(model, so);
  if (session.ok()) {  // a CUDA build on a machine with a GPU: tests/cuda/ covers it
    CHECK(session->device_memory_size() > 0);
    return;
  }
  // Without CUDA in the build, or without a usable GPU.
  INFO(session.status().message());
  CHECK(session.status().code() == Errc::unsupported);
  CHECK_THAT(session.status().message(), Catch::Contains("CUDA"));
  so.device = static_cast<Device>(2);
  CHECK_THAT(Session::create(model, so).status().message(), Catch::Contains("device = 2"));
}

TEST_CASE("a session can work in memory the caller supplies", "[decoder]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 81);
  SessionOptions o;
  o.max_batch_size = 3;
  o.max_source_length = 16;
  o.max_target_length = 10;
  auto need = Session::required_memory(*model, o);
  REQUIRE(need.ok());
  std::vector<std::byte> small(need.value() - 64);
  CHECK_FALSE(Session::create(model, o, small).ok());

  auto* buffer = static_cast<std::byte*>(::operator new(need.value(), std::align_val_t(64)));
  {
    auto external = Session::create(model, o, {buffer, need.value()});
    REQUIRE(external.ok());
    auto owned = Session::create(model, o);
    REQUIRE(owned.ok());
    CHECK(owned->memory_size() == need.value());
    const auto sources = make_sources({3, 9, 15}, config.source_vocab_size, 8);
    TranslateOptions t;
    t.beam_size = 2;
    CHECK(run(external.value(), sources, t).tokens == run(owned.value(), sources, t).tokens);
  }
  ::operator delete(buffer, std::align_val_t(64));
}

TEST_CASE("memory plans that do not fit in size_t are reported instead of wrapping", "[decoder]") {
  detail::ArenaPlanner fits;
  CHECK(fits.reserve<float>(10) == 0);
  CHECK(fits.reserve<char>(1) == 64);
  CHECK(fits.size() == 128);
  detail::ArenaPlanner huge;
  huge.reserve<float>(10);
  huge.reserve<int32_t>(detail::ArenaPlanner::product(3, SIZE_MAX / 2));
  huge.reserve<char>(1);
  CHECK(huge.size() == SIZE_MAX);
  detail::ArenaPlanner wraps;
  wraps.reserve<std::byte>(SIZE_MAX - 10);
  wraps.reserve<std::byte>(100);
  CHECK(wraps.size() == SIZE_MAX);
}
