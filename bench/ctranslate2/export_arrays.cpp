// mt_export_arrays: writes an fp32 libmt model as plain arrays, so another
// engine can be built from exactly the same weights (bench/ctranslate2/
// convert.py turns them into a CTranslate2 model).
//
//   mt_export_arrays MODEL.mtm OUT_DIR
//
// OUT_DIR gets config.json (the ModelConfig), vocabulary.json (one string per
// token id), positions.npy (libmt's own sinusoidal table, so both engines add
// the same floats) and one row-major float32 .npy per tensor of the model
// file, named like the tensor with '/' as '.'. int8 models are refused: the
// other engine quantizes the fp32 weights its own way.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "mt/mt.hpp"
#include "transformer/transformer.hpp"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "mt_export_arrays: %s\n", message.c_str());
  return 1;
}

// NumPy's .npy format, version 1.0: magic, header length, a Python dict
// literal padded with spaces so the data starts 64-byte aligned.
bool write_npy(const std::filesystem::path& path, const float* data, const std::vector<uint32_t>& shape) {
  std::string dims;
  for (uint32_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(4, 5)", but "(4,)" for one dimension
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  size_t count = 1;
  for (uint32_t d : shape) count *= d;

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t length = uint16_t(header.size());  // little-endian hosts only, like the model format
  bool ok = std::fwrite(preamble, 1, 8, f) == 8 && std::fwrite(&length, 2, 1, f) == 1 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, sizeof(float), count, f) == count;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

std::string config_json(const mt::ModelConfig& c) {
  const char* activation = c.activation == mt::Activation::gelu ? "gelu" : "relu";
  char json[1024];
  std::snprintf(json, sizeof json,
                "{\n  \"encoder_layers\": %d,\n  \"decoder_layers\": %d,\n  \"d_model\": %d,\n"
                "  \"heads\": %d,\n  \"d_ff\": %d,\n  \"source_vocab_size\": %d,\n"
                "  \"target_vocab_size\": %d,\n  \"max_positions\": %d,\n  \"activation\": \"%s\",\n"
                "  \"pre_norm\": %s,\n  \"layer_norm_epsilon\": %.9g,\n  \"shared_embeddings\": %s,\n"
                "  \"tied_output\": %s,\n  \"pad_id\": %d,\n  \"bos_id\": %d,\n  \"eos_id\": %d,\n"
                "  \"unk_id\": %d\n}\n",
                c.encoder_layers, c.decoder_layers, c.d_model, c.heads, c.d_ff, c.source_vocab_size,
                c.target_vocab_size, c.max_positions, activation, c.pre_norm ? "true" : "false",
                double(c.layer_norm_epsilon), c.shared_embeddings ? "true" : "false", c.tied_output ? "true" : "false",
                c.pad_id, c.bos_id, c.eos_id, c.unk_id);
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs("usage: mt_export_arrays MODEL.mtm OUT_DIR\n", stderr);
    return 2;
  }
  auto loaded = mt::Model::load(argv[1]);
  if (!loaded) return fail(std::string(argv[1]) + ": " + loaded.status().message());
  const mt::Model& model = *loaded.value();
  if (model.quantization().int8) {
    return fail(std::string(argv[1]) + " is an int8 model: export its fp32 original instead");
  }
  const std::filesystem::path dir = argv[2];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("cannot create " + dir.string() + ": " + ec.message());

  const mt::ModelConfig& config = model.config();
  if (!write_text(dir / "config.json", config_json(config))) return fail("cannot write config.json");

  if (const mt::VocabularyData* vocabulary = model.vocabulary()) {
    std::string json = "[\n";
    for (size_t i = 0; i < vocabulary->pieces.size(); ++i) {
      json += "  " + json_string(vocabulary->pieces[i].text);
      json += i + 1 < vocabulary->pieces.size() ? ",\n" : "\n";
    }
    if (!write_text(dir / "vocabulary.json", json + "]\n")) return fail("cannot write vocabulary.json");
  }

  std::vector<float> values(size_t(config.max_positions) * size_t(config.d_model));
  mt::detail::fill_positions(values.data(), config.max_positions, config.d_model);
  if (!write_npy(dir / "positions.npy", values.data(), {uint32_t(config.max_positions), uint32_t(config.d_model)})) {
    return fail("cannot write positions.npy");
  }

  for (const mt::TensorView& t : model.tensors()) {
    values = t.f32_values();
    std::string file(t.name);
    for (char& c : file) c = c == '/' ? '.' : c;
    const std::vector<uint32_t> shape(t.shape.begin(), t.shape.end());
    if (!write_npy(dir / (file + ".npy"), values.data(), shape)) return fail("cannot write " + file + ".npy");
  }
  std::printf("%s: %zu tensors written to %s\n", argv[1], model.tensors().size(), dir.c_str());
  return 0;
}
