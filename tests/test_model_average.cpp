// Checkpoint averaging (tools/model_average.hpp): each weight the mean of the
// models' in double, rounded once, packed layouts included; a model averaged
// with itself is itself; models that cannot be averaged (another shape,
// another vocabulary or tokenization, another language pair) are refused by name.
#include "model_average.hpp"

#include "test_util.hpp"

using namespace mt;

namespace {

std::shared_ptr<const Model> random_model(const ModelConfig& config, uint64_t seed) {
  const std::string path = test::scratch_path("average-" + std::to_string(seed) + ".mtm");
  REQUIRE(write_random_model(config, seed, path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  return model.value();
}

std::shared_ptr<const Model> written(const ModelWriter& writer, const char* name) {
  const std::string path = test::scratch_path(name);
  REQUIRE(writer.write(path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  return model.value();
}

}  // namespace

TEST_CASE("averaged weights are the mean of each weight, rounded once", "[average]") {
  const ModelConfig config = test::tiny_config();
  const std::vector<std::shared_ptr<const Model>> models = {random_model(config, 1), random_model(config, 2),
                                                           random_model(config, 3)};
  auto writer = cli::average_models(models);
  REQUIRE(writer.ok());
  const auto mean = written(*writer, "average-mean.mtm");
  int packed = 0;
  for (const TensorView& t : mean->tensors()) {
    INFO(t.name);
    packed += t.layout == Layout::packed_n16;
    const std::vector<float> got = t.f32_values(), a = models[0]->find_tensor(t.name)->f32_values(),
                             b = models[1]->find_tensor(t.name)->f32_values(),
                             c = models[2]->find_tensor(t.name)->f32_values();
    for (size_t i = 0; i < got.size(); ++i)
      REQUIRE(got[i] == float((double(a[i]) + double(b[i]) + double(c[i])) / 3.0));
  }
  CHECK(packed > 0);  // the packed linear weights were averaged too
  CHECK(mean->tensors().size() == models[0]->tensors().size());
}

TEST_CASE("a model averaged with itself keeps every weight's bits", "[average]") {
  const auto model = random_model(test::tiny_config(), 4);
  const std::vector<std::shared_ptr<const Model>> twice = {model, model};
  auto writer = cli::average_models(twice);
  REQUIRE(writer.ok());
  const auto same = written(*writer, "average-same.mtm");
  for (const TensorView& t : model->tensors()) {
    INFO(t.name);
    const TensorView* u = same->find_tensor(t.name);
    REQUIRE(u != nullptr);
    CHECK(std::equal(t.data.begin(), t.data.end(), u->data.begin(), u->data.end()));
  }
}

TEST_CASE("models that cannot be averaged are refused by name", "[average]") {
  const ModelConfig config = test::tiny_config();
  const auto model = random_model(config, 5);
  const std::vector<std::shared_ptr<const Model>> one = {model};
  CHECK_THAT(std::string(cli::average_models(one).status().message()), Catch::Contains("two models or more"));
  ModelConfig other = config;
  other.pre_norm = true;
  const std::vector<std::shared_ptr<const Model>> shapes = {model, random_model(other, 6)};
  CHECK_THAT(std::string(cli::average_models(shapes).status().message()), Catch::Contains("its pre_norm differs"));
}

TEST_CASE("models of another language pair or another tokenization are refused", "[average]") {
  auto shipped = Model::load(MT_MODELS_DIR "/en-de-tiny.mtm");
  REQUIRE(shipped.ok());
  REQUIRE((*shipped)->vocabulary() != nullptr);
  const std::vector<std::shared_ptr<const Model>> same = {*shipped, *shipped};
  REQUIRE(cli::average_models(same).ok());
  // The same weights said to translate de-en (a joint vocabulary serves both).
  auto writer = ModelWriter::from_model(**shipped);
  REQUIRE(writer.ok());
  ModelMetadata metadata = (*shipped)->metadata();
  REQUIRE(metadata.source_language == "en");
  std::swap(metadata.source_language, metadata.target_language);
  writer->set_metadata(metadata);
  const std::vector<std::shared_ptr<const Model>> directions = {*shipped, written(*writer, "average-de-en.mtm")};
  CHECK_THAT(std::string(cli::average_models(directions).status().message()),
             Catch::Contains("model 2 translates de-en, the first en-de"));
  // The same pieces scored otherwise: text cut into other ids.
  writer->set_metadata((*shipped)->metadata());
  VocabularyData rescored = *(*shipped)->vocabulary();
  rescored.pieces[100].score -= 1.0f;
  writer->set_vocabulary(rescored);
  const std::vector<std::shared_ptr<const Model>> scores = {*shipped, written(*writer, "average-rescored.mtm")};
  CHECK_THAT(std::string(cli::average_models(scores).status().message()), Catch::Contains("another vocabulary"));
}
