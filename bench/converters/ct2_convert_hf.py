"""CTranslate2's own Hugging Face converter on a model directory, as `ct2-transformers-converter`
would run it, with transformers 4.45 (the newest that runs Marian on Debian's torch 1.13):
CTranslate2 4.8 passes from_pretrained(dtype=...), the name transformers uses since 4.56, so the
keyword is handed over as torch_dtype. Nothing else of the conversion changes.

    python3 bench/converters/ct2_convert_hf.py HF_DIR OUT_DIR float32|int8
"""

import sys

import ctranslate2


class Converter(ctranslate2.converters.TransformersConverter):
    def load_model(self, model_class, model_name_or_path, **kwargs):
        if "dtype" in kwargs:
            kwargs["torch_dtype"] = kwargs.pop("dtype")
        return super().load_model(model_class, model_name_or_path, **kwargs)


if __name__ == "__main__":
    source, output, quantization = sys.argv[1:4]
    Converter(source).convert(output, quantization=quantization, force=True)
