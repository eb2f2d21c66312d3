"""libmt: offline machine translation from one mapped model file.

    import libmt
    translator = libmt.Translator("models/en-de-tiny.mtm")
    translator.translate(["A man is riding a bike."])   # -> ['Ein Mann fährt Fahrrad.']

Model loads a file once (any number of translators share it), Translator
translates lists, iterables and files, ModelWriter writes model files.
Errors are ValueError (bad options, naming the option), OSError /
FileNotFoundError (files), libmt.ModelError (not a valid model file).
"""

from ._libmt import Model, ModelConfig, ModelError, ModelWriter, Vocabulary, __version__, language_tokens, tensor_specs
from ._results import FileStats, TranslationResult
from ._translator import Translator

__all__ = [
    "FileStats",
    "Model",
    "ModelConfig",
    "ModelError",
    "ModelWriter",
    "TranslationResult",
    "Translator",
    "Vocabulary",
    "__version__",
    "language_tokens",
    "tensor_specs",
]
