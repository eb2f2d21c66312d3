// libmt._libmt._quantize_int8: an fp32 model file's bytes to an int8 model's,
// activations calibrated on sentences exactly as mt_quantize does (MSE ranges,
// weights per output channel), so that libmt.convert --quantize int8
// --calibration FILE gives mt_quantize's file without a second tool.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "errors.hpp"
#include "quantizer.hpp"

namespace py = pybind11;

namespace mt::python {

void bind_quantize(py::module_& m) {
  m.def(
      "_quantize_int8",
      [](py::bytes fp32, const std::vector<std::string>& sentences, int threads) {
        if (sentences.empty()) throw py::value_error("the calibration text is empty");
        if (threads < 1 || threads > 256) throw py::value_error("threads must be in [1, 256]");
        // Read in place: the aligned copy load_model_bytes makes is the only one.
        const std::string_view view = fp32;
        const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(view.data()), view.size());
        quantize::QuantizeOptions options;
        options.threads = threads;
        options.method = *quantize::MethodChoice::parse("mse");  // mt_quantize's default
        Status status;
        std::vector<uint8_t> out;
        quantize::Agreement agree;
        {
          py::gil_scoped_release release;
          auto model = quantize::load_model_bytes(bytes);
          if (!model) {
            status = model.status();
          } else if ((*model)->quantization().int8) {
            status = Status::error(Errc::invalid_argument, "the model is already int8");
          } else if (auto calibration = quantize::calibrate(*model, sentences, options); !calibration) {
            status = calibration.status();
          } else if (auto int8 = quantize::build_int8_model(**model, *calibration, options); !int8) {
            status = int8.status();
          } else if (auto loaded = quantize::load_model_bytes(*int8); !loaded) {
            status = loaded.status();
          } else if (auto translations = quantize::translate_all(*loaded, sentences, options); !translations) {
            status = translations.status();
          } else {
            agree = quantize::agreement(calibration->fp32_translations, *translations);
            out = std::move(*int8);
          }
        }
        check(status, "int8 quantization");
        py::dict report;
        report["sentences"] = agree.sentences;
        report["identical_sentences"] = agree.sentence_rate();
        report["identical_tokens"] = agree.token_rate();
        return py::make_tuple(py::bytes(reinterpret_cast<const char*>(out.data()), out.size()), report);
      },
      py::arg("fp32"), py::arg("sentences"), py::arg("threads") = 1,
      "(int8 model bytes, agreement report): mt_quantize's calibrated int8 model of an fp32 model file");
}

}  // namespace mt::python
