// Model files: write -> load round trips, in-place weights, and every kind of
// bad file rejected with a message naming what is wrong.
#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include "mt/kernels.h"
#include "test_util.hpp"

using namespace mt;
using mt::test::scratch_path;
using mt::test::tiny_config;

namespace {

// Sums of powers of two: exact, so no fused multiply-add (aarch64 GCC
// contracts by default) can make two evaluations differ.
float value_of(size_t tensor, size_t i) { return float(tensor + 1) / 1024.0f + float(i % 97) / 128.0f; }

// Writes a model whose values are a known function of (tensor, element);
// `edit` may change a spec (or return false to leave the tensor out).
Status write_model(const ModelConfig& config, const std::string& path,
                   const std::function<bool(TensorSpec&, std::vector<float>&)>& edit = nullptr,
                   std::optional<uint32_t> version = kModelFormatVersion) {
  ModelWriter writer(config);
  if (version) writer.set_format_version(*version);
  ModelMetadata meta;
  meta.source_language = "en";
  meta.target_language = "de";
  meta.tool = "test";
  meta.extra = {{"zeta", "last"}, {"alpha", "first"}};
  writer.set_metadata(meta);
  const auto specs = model_tensor_specs(config);
  for (size_t t = 0; t < specs.size(); ++t) {
    TensorSpec spec = specs[t];
    std::vector<float> values(spec.element_count());
    for (size_t i = 0; i < values.size(); ++i) values[i] = value_of(t, i);
    if (edit && !edit(spec, values)) continue;
    MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
  }
  return writer.write(path);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::string load_error(const std::string& path, const LoadOptions& options = {}) {
  auto model = Model::load(path, options);
  return model.ok() ? std::string("loaded") : std::string(model.status().message());
}

}  // namespace

TEST_CASE("write -> load round trip keeps config, metadata and every value", "[model_file]") {
  ModelConfig config = tiny_config();
  config.pre_norm = true;
  config.activation = Activation::gelu;
  config.shared_embeddings = config.tied_output = false;
  config.source_vocab_size = 290;
  const std::string path = scratch_path("roundtrip.mtm");
  REQUIRE(write_model(config, path).ok());

  auto loaded = Model::load(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  const Model& model = *loaded.value();
  const ModelConfig& c = model.config();
  CHECK(c.encoder_layers == config.encoder_layers);
  CHECK(c.d_ff == config.d_ff);
  CHECK(c.source_vocab_size == 290);
  CHECK(c.pre_norm);
  CHECK(c.activation == Activation::gelu);
  CHECK_FALSE(c.tied_output);
  CHECK(model.format_version() == kModelFormatVersion);
  CHECK(model.metadata().source_language == "en");
  REQUIRE(model.metadata().extra.size() == 2);
  CHECK(model.metadata().extra[0].key == "alpha");

  const auto specs = model_tensor_specs(config);
  REQUIRE(model.tensors().size() == specs.size());
  for (size_t t = 0; t < specs.size(); ++t) {
    const TensorView* view = model.find_tensor(specs[t].name);
    REQUIRE(view != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(view->data.data()) % 64 == 0);
    // The weights are used in place: they point into the mapped file.
    CHECK(view->data.data() >= model.bytes().data());
    CHECK(view->data.data() + view->data.size() <= model.bytes().data() + model.bytes().size());
    if (specs[t].layout == Layout::packed_n16) {
      const int N = int(specs[t].shape[0]), K = int(specs[t].shape[1]);
      for (int n : {0, 1, N / 2, N - 1}) {
        for (int k : {0, K / 3, K - 1}) {
          REQUIRE(packed_at(view->f32(), K, n, k) == value_of(t, size_t(n) * K + k));
        }
      }
    } else {
      for (size_t i = 0; i < specs[t].element_count(); ++i) REQUIRE(view->f32()[i] == value_of(t, i));
    }
  }
  CHECK(model.find_tensor("no/such/tensor") == nullptr);
}

TEST_CASE("a swish model is written as format version 3, never as an older one", "[model_file]") {
  ModelConfig config = tiny_config();
  config.activation = Activation::swish;
  const std::string path = scratch_path("swish.mtm");
  REQUIRE(write_model(config, path, nullptr, std::nullopt).ok());  // the oldest version that holds it
  auto loaded = Model::load(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(loaded.value()->format_version() == 3);
  CHECK(loaded.value()->config().activation == Activation::swish);
  // Without swish the same writer keeps version 2, which older readers take.
  REQUIRE(write_model(tiny_config(), path, nullptr, std::nullopt).ok());
  CHECK(Model::load(path).value()->format_version() == 2);
  // A version 2 file cannot say swish: refused, and no file is left behind.
  const std::string v2 = scratch_path("swish-v2.mtm");
  const Status refused = write_model(config, v2, nullptr, 2);
  CHECK(refused.code() == Errc::invalid_argument);
  CHECK(std::string(refused.message()).find("swish") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(v2));
}

TEST_CASE("version 3 config fields round trip, and a file that says version 2 cannot hold them", "[model_file]") {
  ModelConfig config = tiny_config();
  config.embedding_scale = 1.0f;
  config.decoder_start_id = 5;
  config.source_eos = false;
  const std::string path = scratch_path("v3-fields.mtm");
  REQUIRE(write_model(config, path, nullptr, std::nullopt).ok());
  auto loaded = Model::load(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  const ModelConfig& c = loaded.value()->config();
  CHECK(loaded.value()->format_version() == 3);
  CHECK(c.embedding_scale == 1.0f);
  CHECK(c.decoder_start_id == 5);
  CHECK_FALSE(c.source_eos);
  CHECK(c.start_id() == 5);
  // The same bytes with the root table's format_version (field 0) set to 2.
  std::vector<uint8_t> bytes = read_file(path);
  uint32_t root = 0;
  std::memcpy(&root, bytes.data(), 4);
  int32_t vtable_back = 0;
  std::memcpy(&vtable_back, bytes.data() + root, 4);
  uint16_t field0 = 0;
  std::memcpy(&field0, bytes.data() + root - vtable_back + 4, 2);
  REQUIRE(field0 != 0);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + root + field0, 4);
  REQUIRE(version == 3);
  version = 2;
  std::memcpy(bytes.data() + root + field0, &version, 4);
  const std::string patched = scratch_path("v3-fields-as-v2.mtm");
  std::ofstream(patched, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  auto refused = Model::load(patched);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Errc::invalid_model);
  CHECK_THAT(refused.status().message(), Catch::Contains("needs format version 3"));
  // Values out of range are refused by name.
  ModelConfig bad = tiny_config();
  bad.decoder_start_id = bad.target_vocab_size;
  CHECK_THAT(bad.validate().message(), Catch::Contains("decoder_start_id"));
  bad = tiny_config();
  bad.embedding_scale = -1.0f;
  CHECK_THAT(bad.validate().message(), Catch::Contains("embedding_scale"));
}

TEST_CASE("random models are reproducible from their seed", "[model_file]") {
  auto a = random_model_bytes(tiny_config(), 7);
  auto b = random_model_bytes(tiny_config(), 7);
  auto c = random_model_bytes(tiny_config(), 8);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  CHECK(a.value() == b.value());
  CHECK(a.value() != c.value());
}

TEST_CASE("loading a 35 MB model reads no weight byte", "[model_file]") {
#ifdef __EMSCRIPTEN__
  MT_SKIP("WebAssembly memory has no page protection to catch a read");
#endif
  auto config = ModelConfig::preset("small");
  REQUIRE(config.ok());
  auto bytes = random_model_bytes(config.value(), 3);
  REQUIRE(bytes.ok());
  const size_t n = bytes->size();
  REQUIRE(n > 30u * 1024 * 1024);

  // The file in pages of its own; every page that holds only weight bytes is
  // then made unreadable, so any read of a weight during loading would crash.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto* base = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(base != MAP_FAILED);
  std::memcpy(base, bytes->data(), n);
  size_t protected_bytes = 0;
  {
    auto probe = Model::from_buffer({base, n});
    REQUIRE(probe.ok());
    for (const TensorView& t : (*probe)->tensors()) {
      const size_t begin = size_t(t.data.data() - base), end = begin + t.data.size();
      const size_t first = (begin + page - 1) / page * page, last = end / page * page;
      if (last > first) {
        REQUIRE(mprotect(base + first, last - first, PROT_NONE) == 0);
        protected_bytes += last - first;
      }
    }
  }
  INFO(protected_bytes << " of " << n << " bytes unreadable");
  CHECK(protected_bytes > n * 95 / 100);
  auto model = Model::from_buffer({base, n});
  REQUIRE(model.ok());
  CHECK((*model)->config().d_model == 256);
  model = Status();
  munmap(base, n);

  // From a file, the weights are the mapping itself: no copy.
  const std::string path = scratch_path("small.mtm");
  REQUIRE(write_random_model(config.value(), 3, path).ok());
  auto loaded = Model::load(path);
  REQUIRE(loaded.ok());
  const auto file = (*loaded)->bytes();
  CHECK(file.size() == n);
  for (const TensorView& t : (*loaded)->tensors()) {
    REQUIRE(t.data.data() >= file.data());
    REQUIRE(t.data.data() + t.data.size() <= file.data() + file.size());
  }
}

TEST_CASE("from_buffer loads caller memory in place and insists on alignment", "[model_file]") {
  auto bytes = random_model_bytes(tiny_config(), 5);
  REQUIRE(bytes.ok());
  const size_t n = bytes->size();
  auto* raw = static_cast<uint8_t*>(::operator new(n + 64, std::align_val_t(64)));
  std::memcpy(raw, bytes->data(), n);
  {
    auto model = Model::from_buffer({raw, n});
    INFO(model.status().message());
    REQUIRE(model.ok());
    CHECK((*model)->find_tensor("target_embedding")->data.data() > raw);
    std::memmove(raw + 1, raw, n);
    auto misaligned = Model::from_buffer({raw + 1, n});
    REQUIRE_FALSE(misaligned.ok());
    CHECK(std::string(misaligned.status().message()).find("aligned") != std::string::npos);
  }
  ::operator delete(raw, std::align_val_t(64));
}

TEST_CASE("missing, empty and foreign files are rejected clearly", "[model_file]") {
  CHECK_THAT(load_error(scratch_path("does-not-exist.mtm")), Catch::Contains("cannot open"));
  write_file(scratch_path("empty.mtm"), {});
  CHECK_THAT(load_error(scratch_path("empty.mtm")), Catch::Contains("empty"));
  write_file(scratch_path("text.mtm"), std::vector<uint8_t>(1000, 'x'));
  CHECK_THAT(load_error(scratch_path("text.mtm")), Catch::Contains("not a libmt model file"));
  write_file(scratch_path("short.mtm"), {1, 2, 3});
  CHECK_THAT(load_error(scratch_path("short.mtm")), Catch::Contains("too short"));
}

TEST_CASE("wrong format versions are rejected with the version named", "[model_file]") {
  for (uint32_t version : {0u, kModelFormatVersion + 1, 1000u}) {
    const std::string path = scratch_path("version.mtm");
    REQUIRE(write_model(tiny_config(), path, nullptr, version).ok());
    auto model = Model::load(path);
    REQUIRE_FALSE(model.ok());
    CHECK(model.status().code() == Errc::unsupported_version);
    CHECK_THAT(model.status().message(), Catch::Contains("version " + std::to_string(version)));
  }
}

TEST_CASE("truncated files are rejected without crashing", "[model_file]") {
  const std::string path = scratch_path("full.mtm");
  REQUIRE(write_model(tiny_config(), path).ok());
  const std::vector<uint8_t> bytes = read_file(path);
  const std::string cut = scratch_path("cut.mtm");
  int rejected = 0;
  for (size_t len : {size_t(8), size_t(9), size_t(64), size_t(1000), bytes.size() / 3, bytes.size() / 2,
                     bytes.size() - 64, bytes.size() - 1}) {
    write_file(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(len)));
    const std::string error = load_error(cut);
    INFO("truncated to " << len << ": " << error);
    CHECK(error != "loaded");
    rejected += error != "loaded";
  }
  CHECK(rejected == 8);
}

TEST_CASE("flipped bytes are rejected or loaded, never crash", "[model_file]") {
  const std::string path = scratch_path("flip-src.mtm");
  REQUIRE(write_model(tiny_config(), path).ok());
  const std::vector<uint8_t> bytes = read_file(path);
  const std::string flipped = scratch_path("flipped.mtm");
  int rejected = 0, loaded = 0;
  // The tables live in the first few KiB; flip there densely, then sparsely everywhere.
  for (size_t pos = 0; pos < bytes.size(); pos += pos < 8192 ? 37 : 4099) {
    std::vector<uint8_t> copy = bytes;
    copy[pos] ^= 0x5A;
    write_file(flipped, copy);
    auto model = Model::load(flipped);
    if (model.ok()) {
      ++loaded;
      // A file that loads must also translate.
      SessionOptions so;
      so.max_batch_size = 1;
      so.max_source_length = 8;
      so.max_target_length = 4;
      auto session = Session::create(model.value(), so);
      REQUIRE(session.ok());
      std::vector<int32_t> src = {5, 6, 7};
      std::span<const int32_t> one[] = {src};
      Translations out;
      REQUIRE(session->translate(one, {}, &out).ok());
    } else {
      ++rejected;
      CHECK(std::strlen(model.status().message()) > 10);
    }
  }
  INFO(rejected << " rejected, " << loaded << " loaded");
  CHECK(rejected > 50);
}

TEST_CASE("content errors name the tensor or field at fault", "[model_file]") {
  const std::string path = scratch_path("bad.mtm");
  const ModelConfig config = tiny_config();

  SECTION("a missing tensor") {
    REQUIRE(write_model(config, path, [](TensorSpec& s, auto&) {
              return s.name != "decoder/layer_1/ffn/linear_0/bias";
            }).ok());
    CHECK_THAT(load_error(path), Catch::Contains("required tensor 'decoder/layer_1/ffn/linear_0/bias' is missing"));
  }
  SECTION("a wrong shape") {
    REQUIRE(write_model(config, path, [](TensorSpec& s, std::vector<float>& v) {
              if (s.name == "encoder/layer_0/self_attention/out/weight") {
                s.shape = {64, 32};
                v.resize(64 * 32);
              }
              return true;
            }).ok());
    CHECK_THAT(load_error(path),
               Catch::Contains(
                   "tensor 'encoder/layer_0/self_attention/out/weight' has shape [64, 32], the config needs [64, 64]"));
  }
  SECTION("a wrong layout") {
    REQUIRE(write_model(config, path, [](TensorSpec& s, auto&) {
              if (s.name == "decoder/layer_0/cross_attention/kv/weight") s.layout = Layout::row_major;
              return true;
            }).ok());
    CHECK_THAT(load_error(path), Catch::Contains("'decoder/layer_0/cross_attention/kv/weight' has layout row_major"));
  }
  SECTION("an unexpected tensor") {
    ModelConfig untied = config;
    untied.tied_output = false;
    // A tied model carrying an output projection it does not use.
    ModelWriter writer(config);
    for (const TensorSpec& s : model_tensor_specs(untied)) {
      REQUIRE(writer.add_tensor(s.name, s.shape, s.layout, std::vector<float>(s.element_count(), 0.5f)).ok());
    }
    REQUIRE(writer.write(path).ok());
    CHECK_THAT(load_error(path), Catch::Contains("unexpected tensor 'output/weight'"));
  }
  SECTION("an inconsistent config") {
    ModelConfig bad = config;
    bad.heads = 5;
    ModelWriter writer(bad);
    REQUIRE(writer.write(path).ok());
    CHECK_THAT(load_error(path), Catch::Contains("'heads' = 5: must divide d_model"));
  }
  SECTION("special ids out of range") {
    ModelConfig bad = config;
    bad.eos_id = 5000;
    ModelWriter writer(bad);
    REQUIRE(writer.write(path).ok());
    CHECK_THAT(load_error(path), Catch::Contains("'eos_id' = 5000"));
  }
  SECTION("NaN or Inf weights, when asked to check") {
    REQUIRE(write_model(config, path, [](TensorSpec& s, std::vector<float>& v) {
              if (s.name == "encoder/layer_1/ffn/linear_1/weight") v[17] = std::numeric_limits<float>::quiet_NaN();
              if (s.name == "output/bias") v[3] = std::numeric_limits<float>::infinity();
              return true;
            }).ok());
    CHECK(load_error(path) == "loaded");  // not read unless asked: loading stays zero-copy
    LoadOptions check;
    check.check_weights_finite = true;
    const std::string error = load_error(path, check);
    CHECK_THAT(error, Catch::Contains("NaN") || Catch::Contains("Inf"));
    CHECK_THAT(error, Catch::Contains("encoder/layer_1/ffn/linear_1/weight") || Catch::Contains("output/bias"));
  }
}

TEST_CASE("the writer refuses malformed tensors and leaves no partial file", "[model_file]") {
  ModelWriter writer(tiny_config());
  CHECK_FALSE(writer.add_tensor("x", {2, 3}, Layout::row_major, std::vector<float>(5)).ok());
  CHECK_FALSE(writer.add_tensor("", {2}, Layout::row_major, std::vector<float>(2)).ok());
  CHECK_FALSE(writer.add_tensor("p", {6}, Layout::packed_n16, std::vector<float>(6)).ok());
  REQUIRE(writer.add_tensor("y", {2}, Layout::row_major, std::vector<float>(2)).ok());
  CHECK_FALSE(writer.add_tensor("y", {2}, Layout::row_major, std::vector<float>(2)).ok());
  const Status s = writer.write(scratch_path("no-such-dir/model.mtm"));
  CHECK(s.code() == Errc::io_error);
  CHECK_FALSE(std::filesystem::exists(scratch_path("no-such-dir")));
}

TEST_CASE("presets match the documented sizes", "[model_file]") {
  CHECK(ModelConfig::preset("base")->parameter_count() == 60'522'496 + 32'000);  // + output bias
  CHECK(ModelConfig::preset("small")->parameter_count() == 8'901'440);
  CHECK(ModelConfig::preset("tiny")->parameter_count() > 2'000'000);
  CHECK_FALSE(ModelConfig::preset("huge").ok());
}

TEST_CASE("fuzzer findings stay fixed: committed model_file inputs load or are refused by name", "[model_file]") {
  // fuzz/corpus/model_file: the seeds, and every input that once crashed
  // fuzz_model_file (regression_*), which must be refused. Run under the
  // ASan + UBSan build in CI.
  int loaded = 0, refused = 0, regressions = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MT_FUZZ_CORPUS_DIR "/model_file")) {
    const std::vector<uint8_t> bytes = read_file(entry.path().string());
    auto* copy = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64 + 64));
    std::memcpy(copy, bytes.data(), bytes.size());
    auto model = Model::from_buffer({copy, bytes.size()});
    const std::string name = entry.path().filename().string();
    INFO(name << ": " << (model.ok() ? "loaded" : model.status().message()));
    if (name.rfind("regression_", 0) == 0) {
      ++regressions;
      CHECK_FALSE(model.ok());
    }
    (model.ok() ? loaded : refused)++;
    model = Status::error(Errc::internal, "released");  // before the bytes go
    std::free(copy);
  }
  CHECK(loaded >= 5);  // the seeds
  CHECK(regressions >= 1);
  // An int8 tensor of shape [16, 2^31 - 1]: padding K to 4 overflowed int.
  const std::vector<uint8_t> bytes = read_file(MT_FUZZ_CORPUS_DIR "/model_file/regression_int8_dim_int_max.mtm");
  auto* copy = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64 + 64));
  std::memcpy(copy, bytes.data(), bytes.size());
  CHECK_THAT(Model::from_buffer({copy, bytes.size()}).status().message(), Catch::Contains("dimension above 2^30"));
  std::free(copy);
}
