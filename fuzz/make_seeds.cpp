// Writes the committed seed corpora of the fuzz targets (fuzz/corpus/): our
// own small files, so fuzzing starts from valid inputs of every kind.
//   build-fuzz/fuzz/make_seeds fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <string>

#include "fuzz_util.hpp"
#include "quantizer.hpp"

namespace {

void write(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

void write(const std::filesystem::path& path, const std::string& text) {
  write(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// 24 pieces: the four specials and 20 short words, identity normalization.
mt::VocabularyData micro_vocabulary() {
  mt::VocabularyData v;
  v.type = mt::VocabularyType::unigram;
  v.pieces = {{"<pad>", 0, mt::PieceType::control},
              {"<s>", 0, mt::PieceType::control},
              {"</s>", 0, mt::PieceType::control},
              {"<unk>", 0, mt::PieceType::unknown}};
  const char* words[] = {"\xE2\x96\x81",
                         "a",
                         "b",
                         "c",
                         "\xE2\x96\x81"
                         "a",
                         "\xE2\x96\x81"
                         "b",
                         "ab",
                         "ba",
                         "e",
                         "\xE2\x96\x81"
                         "the",
                         "the",
                         "n",
                         "x",
                         "\xC3\xA9",
                         "\xE4\xB8\xAD",
                         "1",
                         "2",
                         ".",
                         ",",
                         "!"};
  float score = -1.0f;
  for (const char* w : words) v.pieces.push_back({w, score -= 0.5f, mt::PieceType::normal});
  return v;
}

std::vector<uint8_t> with_vocabulary(uint32_t version) {
  const mt::ModelConfig c = mt::fuzz::micro_config();
  auto writer = mt::random_model_writer(c, 5);
  if (!writer) std::abort();
  writer->set_vocabulary(micro_vocabulary());
  writer->set_format_version(version);
  return writer->serialize().value();
}

// Every format version 3 section, as converted models have them: ids the
// reverse of the piece order, an unknown text with an id of its own, a target
// vocabulary in model-id order, a stored position table, a suppressed id.
std::vector<uint8_t> converted_style() {
  mt::ModelConfig c = mt::fuzz::micro_config();
  const mt::VocabularyData v = micro_vocabulary();
  const int V = c.target_vocab_size;
  c.pad_id = V - 1, c.bos_id = V - 2, c.eos_id = V - 3, c.unk_id = V - 4;
  c.stored_positions = true;
  c.suppressed_ids = {c.pad_id};
  c.decoder_start_id = c.pad_id;
  mt::VocabularyData source = v, target = v;
  for (int i = 0; i < V; ++i) {
    source.model_ids.push_back(V - 1 - i);
    target.pieces[size_t(i)] = v.pieces[size_t(V - 1 - i)];
  }
  source.unknown_ids = {{"zz", 7}};
  auto writer = mt::random_model_writer(c, 6);
  if (!writer) std::abort();
  writer->set_vocabulary(source);
  writer->set_target_vocabulary(target);
  return writer->serialize().value();
}

// A vocabulary shortlist: two target ids a source id, three frequent ids.
std::vector<uint8_t> with_shortlist() {
  const mt::ModelConfig c = mt::fuzz::micro_config();
  auto writer = mt::random_model_writer(c, 7);
  if (!writer) std::abort();
  mt::ShortlistData s;
  for (int id = 0; id < c.source_vocab_size; ++id) {
    s.targets.push_back(id % c.target_vocab_size);
    if ((id + 5) % c.target_vocab_size > id % c.target_vocab_size) s.targets.push_back((id + 5) % c.target_vocab_size);
    s.row_ends.push_back(uint32_t(s.targets.size()));
  }
  s.frequent = {4, 5, 6};
  s.method = "seed";
  writer->set_shortlist(s);
  return writer->serialize().value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path root = argv[1];
  const std::filesystem::path models = root / "model_file", text = root / "tokenizer", translate = root / "translate";
  for (const auto& d : {models, text, translate}) std::filesystem::create_directories(d);

  const mt::ModelConfig c = mt::fuzz::micro_config();
  const std::vector<uint8_t> fp32 = mt::random_model_bytes(c, 3).value();
  write(models / "micro_fp32.mtm", fp32);
  write(models / "micro_vocab_v2.mtm", with_vocabulary(2));
  write(models / "micro_vocab_v1.mtm", with_vocabulary(1));
  write(models / "micro_v3_converted.mtm", converted_style());
  write(models / "micro_shortlist.mtm", with_shortlist());
  auto model = mt::quantize::load_model_bytes(fp32).value();
  mt::quantize::QuantizeOptions o;
  o.max_length = 12;
  const auto calibration = mt::quantize::calibrate(model, {"5 6 7 8", "9 10 11"}, o).value();
  write(models / "micro_int8_calibrated.mtm", mt::quantize::build_int8_model(*model, calibration, o).value());
  o.activations = mt::ActivationScales::dynamic_per_row;
  write(models / "micro_int8_dynamic.mtm", mt::quantize::build_int8_model(*model, calibration, o).value());

  // Tokenizer inputs: the first byte picks the vocabulary.
  write(text / "english", std::string("\x00", 1) + "A man in a blue shirt is riding a bicycle.");
  write(text / "chinese", std::string("\x01", 1) + "我喜欢茶, 谢谢。Ｆｕｌｌ-width ﬁ ligature");
  write(text / "invalid_utf8", std::string("\x01", 1) + "a\xff\xfe b\xc3 \xe2\x82 \xf0\x9f\x98");
  // The crafted all-unused BPE (first byte 2): "abab..." was quadratic to split back.
  std::string abab("\x02", 1);
  for (int i = 0; i < 2000; ++i) abab += "ab";
  write(text / "bpe_all_unused", abab);
  const char controls[] = "\x00x\0y\t\r\n \u200f\u202e end";  // NULs, controls, bidi marks
  write(text / "controls", std::string(controls, sizeof(controls) - 1));

  // translate inputs: session, options, then sentences of ids.
  write(translate / "greedy", std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 5, 6, 7});
  write(translate / "beam_int8", std::vector<uint8_t>{1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 0, 64, 0, 0, 0, 0, 6, 0, 0,
                                                      0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 4, 9, 8, 9, 10});
  write(translate / "too_long", std::vector<uint8_t>{2, 255, 3, 254, 1,  1, 0, 0, 0, 0, 255, 9, 1, 0, 0, 0, 0,
                                                     1, 255, 0, 1,   23, 5, 5, 5, 5, 5, 5,   5, 5, 5, 5, 5, 5});
  return 0;
}
