// The pieces of the libmt._libmt module, one function per file, and the
// objects they share.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mt/mt.hpp"

namespace mt::python {

// A loaded model as Python holds it. The shared_ptr also keeps alive the
// bytes of a model loaded from a bytes object; translators and vocabularies
// hold their own copy of it, so they outlive the Python Model object.
struct PyModel {
  std::shared_ptr<const Model> model;
};

// A model's tokenizer.
struct PyVocabulary {
  std::shared_ptr<const Model> model;
  mutable std::unordered_map<std::string, int> ids;  // piece -> id, built on first piece_to_id
  // id -> the text of the piece that encodes to it, null for an id none
  // does: built on first use (ids as encode() gives them).
  mutable std::vector<const std::string*> text_of_id;
};

// A libmt.Model or a model file's path (loaded).
std::shared_ptr<const Model> model_argument(pybind11::handle source);

void bind_config(pybind11::module_& m);
void bind_model(pybind11::module_& m);
void bind_quantize(pybind11::module_& m);
void bind_translator(pybind11::module_& m);
void bind_writer(pybind11::module_& m);
void bind_paragraphs(pybind11::module_& m);

// "relu" / "gelu" / "swish" and back; ValueError names `what` for anything else.
Activation activation_of(const std::string& name, const char* what);
const char* activation_name(Activation activation);

}  // namespace mt::python
