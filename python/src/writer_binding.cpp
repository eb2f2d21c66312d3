// libmt.ModelWriter and libmt.tensor_specs: what converters need to write a
// model file from arrays they computed (numpy or any buffer).
#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "text.hpp"

namespace py = pybind11;

namespace mt::python {
namespace {

const char* role_name(TensorRole r) {
  switch (r) {
    case TensorRole::embedding:
      return "embedding";
    case TensorRole::weight:
      return "weight";
    case TensorRole::bias:
      return "bias";
    case TensorRole::norm_gamma:
      return "norm_gamma";
    case TensorRole::norm_beta:
      return "norm_beta";
    case TensorRole::positions:
      return "positions";
  }
  return "weight";
}

Layout layout_of(const std::string& name) {
  if (name == "row_major") return Layout::row_major;
  if (name == "packed_n16") return Layout::packed_n16;
  throw py::value_error("layout = '" + name + "': must be 'row_major' or 'packed_n16' (int8 tensors: add_tensor_i8)");
}

// A C-contiguous buffer of `format` items (struct codes; '<' and '=' accepted
// on little-endian machines) and its shape.
struct Array {
  py::buffer_info info;
  std::vector<uint32_t> shape;
};

Array array_of(py::handle values, char format, const char* kind, const std::string& name) {
  if (!PyObject_CheckBuffer(values.ptr())) {
    throw py::type_error("tensor '" + name + "': expected a buffer of " + kind +
                         " (a numpy array, array.array, memoryview), got " +
                         std::string(py::str(py::type::handle_of(values).attr("__name__"))));
  }
  Array a{py::reinterpret_borrow<py::buffer>(values).request(), {}};
  std::string f = a.info.format;
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f = f.substr(1);
  if (f.size() != 1 || f[0] != format) {
    throw py::type_error("tensor '" + name + "': values must be " + kind + ", got buffer format '" + a.info.format +
                         "' (numpy: .astype(numpy." + kind + "))");
  }
  ssize_t stride = a.info.itemsize;
  for (ssize_t d = a.info.ndim - 1; d >= 0; --d) {
    if (a.info.shape[size_t(d)] > 1 && a.info.strides[size_t(d)] != stride) {
      throw py::value_error("tensor '" + name + "': values must be C-contiguous (numpy: numpy.ascontiguousarray)");
    }
    stride *= a.info.shape[size_t(d)];
  }
  for (ssize_t d : a.info.shape) {
    if (d < 0 || d > ssize_t(UINT32_MAX)) throw py::value_error("tensor '" + name + "': a dimension is out of range");
    a.shape.push_back(uint32_t(d));
  }
  return a;
}

std::vector<uint32_t> shape_of(py::object shape, const Array& a) {
  if (shape.is_none()) return a.shape;
  return shape.cast<std::vector<uint32_t>>();
}

// The writer and the tensors its config needs, so that a converter's
// mistake is named when it is made, not when the file is loaded.
struct PyWriter {
  ModelConfig config;
  ModelWriter writer;
  std::vector<TensorSpec> specs;
  std::vector<bool> added;       // per spec
  size_t vocabulary_pieces = 0;  // 0: none set

  explicit PyWriter(const ModelConfig& c) : config(c), writer(c), specs(model_tensor_specs(c)), added(specs.size()) {}

  void set_vocabulary(const VocabularyData& vocabulary) {
    const size_t pieces = vocabulary.pieces.size();
    if (!vocabulary.model_ids.empty()) {  // sizes checked by the writer against the target vocabulary
      if (vocabulary.model_ids.size() != pieces) {
        throw py::value_error("model_ids has " + std::to_string(vocabulary.model_ids.size()) +
                              " ids for a vocabulary of " + std::to_string(pieces) + " pieces");
      }
    } else if (pieces != size_t(config.source_vocab_size) || pieces != size_t(config.target_vocab_size)) {
      throw py::value_error("the vocabulary has " + std::to_string(pieces) +
                            " pieces; the config's vocabularies have " + std::to_string(config.source_vocab_size) +
                            " (source) and " + std::to_string(config.target_vocab_size) + " (target)");
    }
    writer.set_vocabulary(vocabulary);
    vocabulary_pieces = pieces;
  }

  std::string shape_text(const std::vector<uint32_t>& shape) const {
    std::string out = "(";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
  }

  // The spec of `name`, checked against the shape given.
  size_t expect(const std::string& name, const std::vector<uint32_t>& shape) const {
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].name != name) continue;
      if (added[i]) throw py::value_error("tensor '" + name + "' added twice");
      if (specs[i].shape != shape) {
        throw py::value_error("tensor '" + name + "' has shape " + shape_text(shape) + "; this config needs " +
                              shape_text(specs[i].shape));
      }
      return i;
    }
    throw py::value_error("tensor '" + name +
                          "' is not part of a model of this config (libmt.tensor_specs lists them)");
  }

  void check_complete() const {
    std::string missing;
    size_t count = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (added[i]) continue;
      if (count++ < 5) missing += (missing.empty() ? "" : ", ") + specs[i].name;
    }
    if (count > 0) {
      throw py::value_error(std::to_string(count) + " tensors missing: " + missing + (count > 5 ? ", ..." : ""));
    }
  }
};

VocabularyData vocabulary_of(py::object vocabulary, const char* method) {
  if (py::isinstance<PyVocabulary>(vocabulary)) return *vocabulary.cast<const PyVocabulary&>().model->vocabulary();
  if (!PyBytes_Check(vocabulary.ptr())) {
    throw py::type_error(std::string(method) +
                         ": expected the bytes of a SentencePiece .model file or a libmt.Vocabulary");
  }
  const std::string bytes = vocabulary.cast<std::string>();
  Expected<VocabularyData> data =
      VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  check(data.status(), "SentencePiece model");
  return std::move(data.value());
}

// A decoding vocabulary in model-id order: `spm`'s rules, its piece types
// where it has the piece; other pieces normal, or control when listed.
VocabularyData target_vocabulary(const VocabularyData& spm, const std::vector<std::string>& pieces,
                                 const std::vector<std::string>& control) {
  std::unordered_map<std::string_view, const VocabularyPiece*> known;
  for (const VocabularyPiece& p : spm.pieces) known.emplace(p.text, &p);
  VocabularyData out = spm;
  out.pieces.clear();
  out.pieces.reserve(pieces.size());
  for (const std::string& text : pieces) {
    const auto it = known.find(text);
    if (it != known.end()) {
      out.pieces.push_back({text, it->second->score, it->second->type});
    } else {
      const bool is_control = std::find(control.begin(), control.end(), text) != control.end();
      out.pieces.push_back({text, 0.0f, is_control ? PieceType::control : PieceType::normal});
    }
  }
  return out;
}

std::string str_or_empty(const py::dict& d, const char* key) {
  return d.contains(key) ? py::str(d[key]).cast<std::string>() : std::string();
}

}  // namespace

void bind_writer(py::module_& m) {
  m.def(
      "tensor_specs",
      [](const ModelConfig& config) {
        check(config.validate());
        py::list out;
        for (const TensorSpec& spec : model_tensor_specs(config)) {
          py::dict d;
          d["name"] = spec.name;
          d["shape"] = py::tuple(py::cast(spec.shape));
          d["layout"] = spec.layout == Layout::packed_n16 ? "packed_n16" : "row_major";
          d["role"] = role_name(spec.role);
          out.append(d);
        }
        return out;
      },
      py::arg("config"),
      "The tensors a model of `config` must hold: name, shape, layout (give it to add_tensor) and role.");

  m.def(
      "_sentencepiece_pieces",
      [](py::bytes model) {
        const std::string bytes = model;
        Expected<VocabularyData> v =
            VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
        check(v.status(), "SentencePiece model");
        static const char* kTypes[] = {"normal", "unknown", "control", "user_defined", "byte", "unused"};
        py::list pieces;
        for (const VocabularyPiece& p : v->pieces) pieces.append(py::make_tuple(p.text, kTypes[int(p.type)]));
        return pieces;
      },
      py::arg("model"), "The pieces of a SentencePiece .model file, in id order: (text, type) pairs.");

  py::class_<PyWriter>(m, "ModelWriter", R"(Builds a libmt model file.

w = ModelWriter(config)
w.set_vocabulary(sentencepiece_model_bytes)   # or a model's Vocabulary
w.set_metadata({"source_language": "en", "target_language": "de"})
for spec in tensor_specs(config):
    w.add_tensor(spec["name"], array, layout=spec["layout"])
w.write("model.mtm")

Arrays are any C-contiguous buffer (numpy arrays included) of float32, or
int8 for add_tensor_i8; weights are [out, in]. Errors name the tensor.)")
      .def(py::init([](const ModelConfig& config) {
             check(config.validate());
             return std::make_unique<PyWriter>(config);
           }),
           py::arg("config"))
      .def(
          "set_metadata",
          [](PyWriter& w, const py::dict& fields) {
            ModelMetadata md;
            static const char* known[] = {"source_language", "target_language", "training_corpus", "tool",
                                          "tool_version",    "created"};
            md.source_language = str_or_empty(fields, "source_language");
            md.target_language = str_or_empty(fields, "target_language");
            md.training_corpus = str_or_empty(fields, "training_corpus");
            md.tool = str_or_empty(fields, "tool");
            md.tool_version = str_or_empty(fields, "tool_version");
            md.created = str_or_empty(fields, "created");
            for (auto item : fields) {
              const std::string key = py::str(item.first);
              if (!py::isinstance<py::str>(item.second))
                throw py::type_error("metadata '" + key + "': values must be str");
              bool is_known = false;
              for (const char* k : known) is_known |= key == k;
              if (!is_known) md.extra.push_back({key, item.second.cast<std::string>()});
            }
            w.writer.set_metadata(md);
          },
          py::arg("metadata"),
          "A dict of str: source_language, target_language, training_corpus, tool, tool_version, "
          "created; other keys are kept as extra metadata.")
      .def(
          "set_vocabulary",
          [](PyWriter& w, py::object vocabulary, std::optional<std::vector<int32_t>> model_ids,
             std::optional<std::map<std::string, int32_t>> unknown_ids, bool language_codes) {
            VocabularyData data = vocabulary_of(vocabulary, "set_vocabulary");
            if (model_ids) data.model_ids = std::move(*model_ids);
            if (unknown_ids) {
              for (const auto& [text, id] : *unknown_ids) data.unknown_ids.push_back({text, id});  // std::map: sorted
            }
            data.language_codes = language_codes;
            w.set_vocabulary(data);
          },
          py::arg("vocabulary"), py::kw_only(), py::arg("model_ids") = py::none(), py::arg("unknown_ids") = py::none(),
          py::arg("language_codes") = false,
          "The tokenizer: the bytes of a SentencePiece .model file, or another model's Vocabulary. "
          "Its size must equal the config's vocabulary sizes, unless model_ids (one per piece: the "
          "model id piece i encodes to) is given; then set_target_vocabulary too. unknown_ids "
          "({text: model id}) gives the ids of texts that encode as the unknown piece (else unk_id); "
          "language_codes reads Marian's >>xx<< codes as transformers' MarianTokenizer does.")
      .def(
          "set_target_vocabulary",
          [](PyWriter& w, py::bytes sentencepiece, const std::vector<std::string>& pieces,
             const std::vector<std::string>& control) {
            const std::string bytes = sentencepiece;
            Expected<VocabularyData> spm =
                VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
            check(spm.status(), "target SentencePiece model");
            w.writer.set_target_vocabulary(target_vocabulary(spm.value(), pieces, control));
          },
          py::arg("sentencepiece"), py::arg("pieces"), py::kw_only(), py::arg("control") = std::vector<std::string>{},
          "The vocabulary target ids decode with: `pieces` in model id order (one per target id), "
          "decoded with the SentencePiece model's rules and piece types; a piece it lacks is an "
          "ordinary piece, or a control piece (decodes to nothing) when named in `control`.")
      .def(
          "set_quantization",
          [](PyWriter& w, const std::string& activations, const std::string& method,
             const std::vector<std::tuple<std::string, float, int32_t>>& inputs) {
            ModelQuantization q;
            if (activations == "dynamic")
              q.activations = ActivationScales::dynamic_per_row;
            else if (activations == "calibrated")
              q.activations = ActivationScales::calibrated;
            else
              throw py::value_error("activations = '" + activations + "': must be 'dynamic' or 'calibrated'");
            q.method = method;
            for (const auto& [layer, scale, zero_point] : inputs) q.inputs.push_back({layer, scale, zero_point});
            w.writer.set_quantization(q);
          },
          py::arg("activations") = "dynamic", py::arg("method") = "",
          py::arg("inputs") = std::vector<std::tuple<std::string, float, int32_t>>{},
          "Int8 models: how the int8 layers quantize their inputs; 'calibrated' takes one "
          "(layer, scale, zero_point) per int8 linear layer.")
      .def(
          "add_tensor",
          [](PyWriter& w, const std::string& name, py::handle values, py::object shape, py::object layout) {
            Array a = array_of(values, 'f', "float32", name);
            const std::vector<uint32_t> dims = shape_of(shape, a);
            const size_t spec = w.expect(name, dims);
            const Layout wanted = w.specs[spec].layout;
            if (!layout.is_none() && layout_of(layout.cast<std::string>()) != wanted) {
              throw py::value_error("tensor '" + name + "': layout = '" + layout.cast<std::string>() +
                                    "'; this tensor is " +
                                    (wanted == Layout::packed_n16 ? "'packed_n16'" : "'row_major'"));
            }
            std::span<const float> data{static_cast<const float*>(a.info.ptr), size_t(a.info.size)};
            check(w.writer.add_tensor(name, dims, wanted, data));
            w.added[spec] = true;
          },
          py::arg("name"), py::arg("values"), py::kw_only(), py::arg("shape") = py::none(),
          py::arg("layout") = py::none(),
          "A float32 tensor of tensor_specs(config), values row-major ([out, in] for weights); shape "
          "defaults to the buffer's; layout defaults to the spec's (2-D weights are packed for the kernels).")
      .def(
          "add_tensor_i8",
          [](PyWriter& w, const std::string& name, py::handle values, py::handle scales, py::object shape) {
            Array a = array_of(values, 'b', "int8", name);
            Array s = array_of(scales, 'f', "float32", name + " scales");
            const std::vector<uint32_t> dims = shape_of(shape, a);
            const size_t spec = w.expect(name, dims);
            if (w.specs[spec].layout != Layout::packed_n16) {
              throw py::value_error("tensor '" + name + "' cannot be int8: only 2-D weights and embeddings can");
            }
            check(w.writer.add_tensor_i8(name, dims, {static_cast<const int8_t*>(a.info.ptr), size_t(a.info.size)},
                                         {static_cast<const float*>(s.info.ptr), size_t(s.info.size)}));
            w.added[spec] = true;
          },
          py::arg("name"), py::arg("values"), py::arg("scales"), py::kw_only(), py::arg("shape") = py::none(),
          "An int8 tensor [N, K] (row-major) with one float32 scale per row: value = q * scale.")
      .def_static(
          "from_model",
          [](py::handle model) {
            const std::shared_ptr<const Model> m = model_argument(model);
            Expected<ModelWriter> copy = ModelWriter::from_model(*m);
            check(copy.status());
            auto w = std::make_unique<PyWriter>(m->config());
            w->writer = std::move(copy.value());
            std::fill(w->added.begin(), w->added.end(), true);
            if (const VocabularyData* v = m->vocabulary()) w->vocabulary_pieces = v->pieces.size();
            return w;
          },
          py::arg("model"),
          "A writer holding all of a model (a libmt.Model or a path): tensors, vocabularies, metadata, "
          "quantization and shortlist, to write it again with something changed.")
      .def(
          "set_shortlist",
          [](PyWriter& w, py::object rows, const std::vector<int32_t>& frequent, const std::string& method) {
            if (rows.is_none()) {
              w.writer.set_shortlist(std::nullopt);
              return;
            }
            std::vector<std::vector<int32_t>> lists;
            try {
              lists = rows.cast<std::vector<std::vector<int32_t>>>();
            } catch (const py::cast_error&) {
              throw py::type_error("set_shortlist rows: a list of lists of target ids (int), one per source id");
            }
            ShortlistData s;
            for (std::vector<int32_t> row : lists) {
              std::sort(row.begin(), row.end());
              row.erase(std::unique(row.begin(), row.end()), row.end());
              s.targets.insert(s.targets.end(), row.begin(), row.end());
              s.row_ends.push_back(uint32_t(s.targets.size()));
            }
            s.frequent = frequent;
            std::sort(s.frequent.begin(), s.frequent.end());
            s.frequent.erase(std::unique(s.frequent.begin(), s.frequent.end()), s.frequent.end());
            s.method = method;
            w.writer.set_shortlist(std::move(s));
          },
          py::arg("rows"), py::arg("frequent") = std::vector<int32_t>{}, py::arg("method") = "",
          "The vocabulary shortlist: rows[s] the target ids source id s may translate to (one row per "
          "source id), `frequent` the target ids every sentence may use; None removes it. Checked when "
          "written: ids must be in the target vocabulary.")
      .def(
          "serialize",
          [](const PyWriter& w) {
            w.check_complete();
            Expected<std::vector<uint8_t>> bytes = w.writer.serialize();
            check(bytes.status());
            return py::bytes(reinterpret_cast<const char*>(bytes->data()), bytes->size());
          },
          "The whole model file as bytes (libmt.Model(bytes) loads it).")
      .def(
          "write",
          [](const PyWriter& w, py::object path) {
            w.check_complete();
            const std::string p = path_of(path);
            Status status;
            {
              py::gil_scoped_release release;
              status = w.writer.write(p);
            }
            check(status);
          },
          py::arg("path"), "Writes the file atomically (a temporary file renamed over `path`).");
}

}  // namespace mt::python
