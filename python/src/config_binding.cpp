// libmt.ModelConfig: the architecture of a model, as read from a file or
// given to ModelWriter.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "errors.hpp"

namespace py = pybind11;

namespace mt::python {

Activation activation_of(const std::string& name, const char* what) {
  if (name == "relu") return Activation::relu;
  if (name == "gelu") return Activation::gelu;
  if (name == "swish") return Activation::swish;
  throw py::value_error(std::string(what) + " = '" + name + "': must be 'relu', 'gelu' or 'swish'");
}

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::relu:
      return "relu";
    case Activation::gelu:
      return "gelu";
    case Activation::swish:
      return "swish";
    case Activation::none:
      break;
  }
  return "none";
}

namespace {

py::dict config_dict(const ModelConfig& c) {
  py::dict d;
  d["encoder_layers"] = c.encoder_layers;
  d["decoder_layers"] = c.decoder_layers;
  d["d_model"] = c.d_model;
  d["heads"] = c.heads;
  d["d_ff"] = c.d_ff;
  d["source_vocab_size"] = c.source_vocab_size;
  d["target_vocab_size"] = c.target_vocab_size;
  d["max_positions"] = c.max_positions;
  d["activation"] = activation_name(c.activation);
  d["pre_norm"] = c.pre_norm;
  d["layer_norm_epsilon"] = c.layer_norm_epsilon;
  d["shared_embeddings"] = c.shared_embeddings;
  d["tied_output"] = c.tied_output;
  d["pad_id"] = c.pad_id;
  d["bos_id"] = c.bos_id;
  d["eos_id"] = c.eos_id;
  d["unk_id"] = c.unk_id;
  d["embedding_scale"] = c.embedding_scale;
  d["decoder_start_id"] = c.decoder_start_id;
  d["source_eos"] = c.source_eos;
  d["stored_positions"] = c.stored_positions;
  d["suppressed_ids"] = c.suppressed_ids;
  return d;
}

}  // namespace

void bind_config(py::module_& m) {
  py::class_<ModelConfig> c(
      m, "ModelConfig",
      "A Transformer's architecture. ModelConfig(**fields) starts from the 'base' values "
      "(6+6 layers, d_model 512, 8 heads, d_ff 2048, vocabularies of 32000) and sets the fields given; "
      "ModelConfig.preset(name) gives 'base', 'small' or 'tiny'.");
  c.def(py::init([](py::kwargs fields) {
     ModelConfig config;
     py::object self = py::cast(config);
     for (auto item : fields) {
       const std::string key = py::str(item.first);
       if (!py::hasattr(self, key.c_str()) || key.rfind("_", 0) == 0 || key == "preset" || key == "validate" ||
           key == "to_dict" || key == "parameter_count") {
         throw py::type_error("ModelConfig() got an unexpected field '" + key + "'");
       }
       self.attr(key.c_str()) = item.second;
     }
     return self.cast<ModelConfig>();
   }))
      .def_readwrite("encoder_layers", &ModelConfig::encoder_layers)
      .def_readwrite("decoder_layers", &ModelConfig::decoder_layers)
      .def_readwrite("d_model", &ModelConfig::d_model, "Width of every layer's input and output.")
      .def_readwrite("heads", &ModelConfig::heads, "Attention heads; must divide d_model.")
      .def_readwrite("d_ff", &ModelConfig::d_ff, "Width of the feed-forward layers' hidden units.")
      .def_readwrite("source_vocab_size", &ModelConfig::source_vocab_size)
      .def_readwrite("target_vocab_size", &ModelConfig::target_vocab_size)
      .def_readwrite("max_positions", &ModelConfig::max_positions,
                     "Longest sequence the position encodings cover, in tokens.")
      .def_property(
          "activation", [](const ModelConfig& c) { return activation_name(c.activation); },
          [](ModelConfig& c, const std::string& name) { c.activation = activation_of(name, "activation"); },
          "The feed-forward activation: 'relu', 'gelu' or 'swish'.")
      .def_readwrite("pre_norm", &ModelConfig::pre_norm,
                     "LayerNorm before each sub-layer (and a final one per stack); post-norm when False.")
      .def_readwrite("layer_norm_epsilon", &ModelConfig::layer_norm_epsilon)
      .def_readwrite("shared_embeddings", &ModelConfig::shared_embeddings, "Source and target share target_embedding.")
      .def_readwrite("tied_output", &ModelConfig::tied_output, "The output projection is target_embedding.")
      .def_readwrite("pad_id", &ModelConfig::pad_id)
      .def_readwrite("bos_id", &ModelConfig::bos_id)
      .def_readwrite("eos_id", &ModelConfig::eos_id)
      .def_readwrite("unk_id", &ModelConfig::unk_id)
      .def_readwrite("embedding_scale", &ModelConfig::embedding_scale,
                     "Token embeddings are multiplied by this; 0: sqrt(d_model).")
      .def_readwrite("decoder_start_id", &ModelConfig::decoder_start_id, "The decoder's first input; -1: bos_id.")
      .def_readwrite("source_eos", &ModelConfig::source_eos, "eos_id ends every source sentence.")
      .def_readwrite("stored_positions", &ModelConfig::stored_positions,
                     "Position encodings from the tensor position_encoding [max_positions, d_model] instead of the "
                     "computed interleaved sinusoid.")
      .def_readwrite("suppressed_ids", &ModelConfig::suppressed_ids,
                     "Target ids never emitted (sorted), masked after the log-softmax.")
      .def_static(
          "preset",
          [](const std::string& name) {
            Expected<ModelConfig> config = ModelConfig::preset(name);
            check(config.status());
            return config.value();
          },
          py::arg("name"), "The named configuration 'base', 'small' or 'tiny'.")
      .def(
          "validate", [](const ModelConfig& c) { check(c.validate()); },
          "Raises ValueError naming the first unusable field.")
      .def_property_readonly("parameter_count", [](const ModelConfig& c) { return c.parameter_count(); })
      .def("to_dict", &config_dict)
      // is_operator: another type gives NotImplemented (cfg == None is False), not a TypeError.
      .def(
          "__eq__", [](const ModelConfig& a, const ModelConfig& b) { return config_dict(a).equal(config_dict(b)); },
          py::is_operator())
      .def("__repr__", [](const ModelConfig& c) {
        std::string fields;
        for (auto item : config_dict(c)) {
          if (!fields.empty()) fields += ", ";
          fields += std::string(py::str(item.first)) + "=" + std::string(py::repr(item.second));
        }
        return "ModelConfig(" + fields + ")";
      });
}

}  // namespace mt::python
