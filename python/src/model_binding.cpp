// libmt.Model and libmt.Vocabulary: a mapped model file and its tokenizer.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bindings.hpp"
#include "errors.hpp"
#include "mt/languages.hpp"
#include "text.hpp"

namespace py = pybind11;

namespace mt::python {
namespace {

// Model::from_buffer needs 64-byte aligned bytes that outlive the model: a
// copy of the caller's bytes, owned with the model.
struct BufferModel {
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
  std::shared_ptr<const Model> model;  // destroyed before the bytes
};

std::shared_ptr<const Model> model_from_bytes(py::buffer source, const LoadOptions& options) {
  py::buffer_info info = source.request();
  if (info.ndim != 1 || info.itemsize != 1) throw py::type_error("Model(): a bytes-like model must be 1-D bytes");
  const size_t size = size_t(info.size);
  auto owner = std::make_shared<BufferModel>();
  owner->bytes.reset(static_cast<uint8_t*>(std::aligned_alloc(
      mt::kBufferAlignment,
      (size + mt::kBufferAlignment - 1) / mt::kBufferAlignment * mt::kBufferAlignment + mt::kBufferAlignment)));
  if (!owner->bytes) throw std::bad_alloc();
  // A strided view (memoryview(data)[::2]) is gathered, never read as if contiguous.
  if (PyBuffer_ToContiguous(owner->bytes.get(), info.view(), Py_ssize_t(size), 'C') != 0) throw py::error_already_set();
  Expected<std::shared_ptr<const Model>> model = [&] {
    py::gil_scoped_release release;
    return Model::from_buffer({owner->bytes.get(), size}, options);
  }();
  check(model.status(), "Model(bytes)");
  owner->model = std::move(model.value());
  return std::shared_ptr<const Model>(owner, owner->model.get());
}

std::shared_ptr<const Model> model_from_path(const std::string& path, const LoadOptions& options) {
  Expected<std::shared_ptr<const Model>> model = [&] {
    py::gil_scoped_release release;
    return Model::load(path, options);
  }();
  check(model.status());
  return std::move(model.value());
}

py::dict metadata_dict(const ModelMetadata& m) {
  py::dict d;
  d["source_language"] = m.source_language;
  d["target_language"] = m.target_language;
  d["training_corpus"] = m.training_corpus;
  d["tool"] = m.tool;
  d["tool_version"] = m.tool_version;
  d["created"] = m.created;
  for (const KeyValue& kv : m.extra) d[py::str(kv.key)] = kv.value;
  return d;
}

const char* dtype_name(DType d) { return d == DType::i8 ? "int8" : "float32"; }
const char* layout_name(Layout l) {
  return l == Layout::packed_n16 ? "packed_n16" : l == Layout::packed_k4n16 ? "packed_k4n16" : "row_major";
}

bool is_int8(const Model& model) { return model.quantization().int8; }

const Model& model_of(const PyVocabulary& v) { return *v.model; }

// Token ids are what encode() gives: a converted model's own ids
// (VocabularyData::model_ids: OPUS-MT's vocab.json, a fairseq dictionary),
// else the piece indices.
int id_of_piece(const VocabularyData& data, size_t index) {
  return data.model_ids.empty() ? int(index) : int(data.model_ids[index]);
}

size_t id_count(const PyVocabulary& v) {
  const VocabularyData& data = *model_of(v).vocabulary();
  return data.model_ids.empty() ? data.pieces.size() : size_t(model_of(v).config().source_vocab_size);
}

// The text of the piece that encodes to `id` (the first such; a converted
// model's id may also come from a text its SentencePiece model lacks,
// VocabularyData::unknown_ids), or null. `id` in [0, id_count).
const std::string* piece_text(const PyVocabulary& v, int id) {
  const VocabularyData& data = *model_of(v).vocabulary();
  if (v.text_of_id.empty()) {
    v.text_of_id.assign(id_count(v), nullptr);
    const auto take = [&](int own, const std::string& text) {
      if (own >= 0 && size_t(own) < v.text_of_id.size() && v.text_of_id[size_t(own)] == nullptr)
        v.text_of_id[size_t(own)] = &text;
    };
    for (size_t i = 0; i < data.pieces.size(); ++i) take(id_of_piece(data, i), data.pieces[i].text);
    for (const VocabularyData::UnknownText& u : data.unknown_ids) take(u.model_id, u.text);
  }
  return v.text_of_id[size_t(id)];
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "language_tokens",
      [](const PyModel& p) {
        py::dict tokens;
        for (const LanguageToken& t : mt::language_tokens(*p.model)) tokens[py::str(t.token)] = t.id;
        return tokens;
      },
      py::arg("model"),
      "A multilingual model's language tokens, {token: id} (e.g. {'>>fra<<': 93}); empty for a model of one "
      "language pair.");
  m.def(
      "_language_prefixes",
      [](const PyModel& p, const std::string& source, const std::string& target) {
        Expected<LanguagePrefixes> prefixes = mt::language_prefixes(*p.model, source, target);
        check(prefixes.status());
        return py::make_tuple(prefixes->source_prefix, prefixes->target_prefix);
      },
      py::arg("model"), py::arg("source_language"), py::arg("target_language"));

  py::class_<PyModel>(m, "Model", R"(A libmt model file, loaded once and shared by any number of translators.

Model(source, check_weights_finite=False, read_into_memory=False, load_vocabulary=True)

source: a path (str or os.PathLike) to map read-only, or the file's bytes
  (bytes, bytearray, memoryview), copied.
check_weights_finite: also read every float32 weight and refuse NaN or Inf
  (reads the whole file once; off by default).
read_into_memory: read the file instead of mapping it, for a file that may be
  rewritten in place while loaded (replace model files by renaming instead).
load_vocabulary: build the tokenizer; off, the model translates token ids only.

Raises FileNotFoundError / OSError for files that cannot be read and
libmt.ModelError (a ValueError) for bytes that are not a valid model.)")
      .def(py::init([](py::object source, bool check_weights_finite, bool read_into_memory, bool load_vocabulary) {
             LoadOptions options;
             options.check_weights_finite = check_weights_finite;
             options.read_into_memory = read_into_memory;
             options.load_vocabulary = load_vocabulary;
             if (PyBytes_Check(source.ptr()) || PyByteArray_Check(source.ptr()) || PyMemoryView_Check(source.ptr())) {
               return PyModel{model_from_bytes(py::reinterpret_borrow<py::buffer>(source), options)};
             }
             return PyModel{model_from_path(path_of(source), options)};
           }),
           py::arg("source"), py::kw_only(), py::arg("check_weights_finite") = false,
           py::arg("read_into_memory") = false, py::arg("load_vocabulary") = true)
      .def_property_readonly(
          "config", [](const PyModel& p) { return p.model->config(); },
          "The architecture (a copy: changing it changes nothing here).")
      .def_property_readonly(
          "metadata", [](const PyModel& p) { return metadata_dict(p.model->metadata()); },
          "The file's metadata: source_language, target_language, training_corpus, tool, "
          "tool_version, created, and any extra keys, as a dict of str.")
      .def_property_readonly(
          "languages",
          [](const PyModel& p) {
            return py::make_tuple(p.model->metadata().source_language, p.model->metadata().target_language);
          },
          "(source_language, target_language) from the metadata; '' where not given.")
      .def_property_readonly(
          "vocabulary",
          [](const PyModel& p) -> py::object {
            if (!p.model->has_vocabulary()) return py::none();
            return py::cast(PyVocabulary{p.model, {}});
          },
          "The model's tokenizer (libmt.Vocabulary), or None for a model that translates ids only.")
      .def_property_readonly(
          "quantization",
          [](const PyModel& p) {
            const ModelQuantization& q = p.model->quantization();
            py::dict d;
            d["int8"] = q.int8;
            d["activations"] = !q.int8                                         ? "none"
                               : q.activations == ActivationScales::calibrated ? "calibrated"
                                                                               : "dynamic";
            d["method"] = q.method;
            return d;
          },
          "{'int8': bool, 'activations': 'none' | 'dynamic' | 'calibrated', 'method': str}")
      .def_property_readonly(
          "shortlist",
          [](const PyModel& p) -> py::object {
            const ShortlistView* s = p.model->shortlist();
            if (s == nullptr) return py::none();
            py::dict d;
            d["targets"] = s->targets.size();
            d["longest_row"] = s->longest_row;
            d["frequent"] = s->frequent.size();
            d["method"] = std::string(s->method);
            return d;
          },
          "The vocabulary shortlist (mt_shortlist build): {'targets': ids in all rows, 'longest_row': int, "
          "'frequent': int, 'method': str}, or None.")
      .def_property_readonly("format_version", [](const PyModel& p) { return p.model->format_version(); })
      .def_property_readonly(
          "file_size", [](const PyModel& p) { return p.model->file_size(); }, "Bytes.")
      .def_property_readonly(
          "tensors",
          [](const PyModel& p) {
            py::list out;
            for (const TensorView& t : p.model->tensors()) {
              py::tuple shape(t.shape.size());
              for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = t.shape[i];
              py::dict d;
              d["name"] = std::string(t.name);
              d["shape"] = shape;
              d["dtype"] = dtype_name(t.dtype);
              d["layout"] = layout_name(t.layout);
              out.append(d);
            }
            return out;
          },
          "Each tensor's name, shape, dtype and storage layout, in file order.")
      .def(
          "save",
          [](const PyModel& p, py::object path) {
            const std::string target = path_of(path);
            Status status;
            {
              py::gil_scoped_release release;
              status = p.model->save(target);
            }
            check(status);
          },
          py::arg("path"), "Writes the model file to `path` (a temporary file renamed over it).")
      .def("__repr__", [](const PyModel& p) {
        const ModelConfig& c = p.model->config();
        const ModelMetadata& md = p.model->metadata();
        char text[256];
        std::snprintf(text, sizeof(text),
                      "<libmt.Model %s->%s, %d+%d layers, d_model %d, %.1fM parameters, %s, %.2f MB>",
                      md.source_language.empty() ? "?" : md.source_language.c_str(),
                      md.target_language.empty() ? "?" : md.target_language.c_str(), c.encoder_layers, c.decoder_layers,
                      c.d_model, double(c.parameter_count()) / 1e6, is_int8(*p.model) ? "int8" : "float32",
                      double(p.model->file_size()) / 1e6);
        return std::string(text);
      });

  py::class_<PyVocabulary>(m, "Vocabulary",
                           "A model's SentencePiece-compatible tokenizer: text <-> token ids, "
                           "exactly as the model's translators tokenize.")
      .def(
          "encode",
          [](const PyVocabulary& v, py::handle text) {
            const std::string utf8 = utf8_of(text, "encode(text)");
            std::vector<int32_t> ids;
            Status status;
            {
              py::gil_scoped_release release;
              status = model_of(v).encode(utf8, &ids);
            }
            check(status);
            return ids;
          },
          py::arg("text"), "Text (str or UTF-8 bytes) -> source token ids, without BOS or EOS.")
      .def(
          "decode",
          [](const PyVocabulary& v, const std::vector<int32_t>& ids) {
            std::string text;
            check(model_of(v).decode(ids, &text));
            return str_of(text);
          },
          py::arg("ids"), "Target token ids -> text (control ids decode to nothing; line breaks are kept).")
      .def("__len__", id_count, "The number of token ids (a converted model's: its source vocabulary size).")
      .def_property_readonly("type",
                             [](const PyVocabulary& v) {
                               return model_of(v).vocabulary()->type == VocabularyType::bpe ? "bpe" : "unigram";
                             })
      .def_property_readonly(
          "pieces",
          [](const PyVocabulary& v) {
            py::list out;
            for (size_t id = 0; id < id_count(v); ++id) {
              const std::string* text = piece_text(v, int(id));
              out.append(text == nullptr ? py::object(py::none()) : py::object(str_of(*text)));
            }
            return out;
          },
          "Every token id's piece text, index = token id ('\u2581' stands for a space; None for an id\n"
          "no piece encodes to, in a converted model whose vocabulary lacks it).")
      .def(
          "id_to_piece",
          [](const PyVocabulary& v, int id) -> py::object {
            if (id < 0 || size_t(id) >= id_count(v))
              throw py::index_error("id_to_piece(" + std::to_string(id) + "): ids are in [0, " +
                                    std::to_string(id_count(v)) + ")");
            const std::string* text = piece_text(v, id);
            if (text == nullptr) return py::none();
            return str_of(*text);
          },
          py::arg("id"), "The piece a token id (as encode() gives it) stands for, or None.")
      .def(
          "piece_to_id",
          [](const PyVocabulary& v, const std::string& piece) -> py::object {
            if (v.ids.empty()) {
              const VocabularyData& data = *model_of(v).vocabulary();
              for (size_t i = 0; i < data.pieces.size(); ++i) v.ids.emplace(data.pieces[i].text, id_of_piece(data, i));
              for (const VocabularyData::UnknownText& u : data.unknown_ids) v.ids.emplace(u.text, u.model_id);
            }
            auto it = v.ids.find(piece);
            if (it == v.ids.end()) return py::none();
            return py::int_(it->second);
          },
          py::arg("piece"), "The token id a piece encodes to (as encode() gives it), or None.")
      .def("__repr__", [](const PyVocabulary& v) {
        const VocabularyData* data = model_of(v).vocabulary();
        return "<libmt.Vocabulary " + std::string(data->type == VocabularyType::bpe ? "bpe" : "unigram") + ", " +
               std::to_string(data->pieces.size()) + " pieces>";
      });
}

}  // namespace mt::python
