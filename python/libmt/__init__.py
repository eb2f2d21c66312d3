"""libmt: offline machine translation from one mapped model file.

    import libmt
    translator = libmt.Translator("models/en-de-tiny.mtm")
    translator.translate(["A man is riding a bike."])   # -> ['Ein Mann fährt auf einem Fahrrad.']

Model loads a file once (any number of translators share it), Translator
translates lists, iterables and files, ModelWriter writes model files;
libmt.ray (imported on its own, needs Ray Data) translates corpora on Ray.
Errors are ValueError (bad options, naming the option), OSError /
FileNotFoundError (files), libmt.ModelError (not a valid model file).
"""

from . import _libmt
from ._libmt import CancelToken, TranslationCache, Model, ModelConfig, ModelError, ModelWriter, Vocabulary, __version__, language_tokens, tensor_specs
from ._results import FileStats, ParagraphTranslation, TokenEvent, TranslatedSentence, TranslationResult
from ._translator import Translator


def split_sentences(text, *, mode="lines", prefixes=None, prefix_language=None):
    """The sentences of a text as (begin, end) spans with their paragraph's
    index: [((begin, end), paragraph), ...], indices into the str (byte offsets
    for bytes). Modes and prefix lists as Translator.translate_paragraphs;
    with neither prefixes nor prefix_language, no prefix list."""
    return [((b, e), p) for (b, e), p in _libmt._split_sentences(text, mode, prefixes, prefix_language)]


def builtin_prefix_list(language):
    """libmt's own non-breaking prefix list for a language, as text ("" if it has none)."""
    return _libmt._builtin_prefix_list(language)


__all__ = [
    "CancelToken",
    "FileStats",
    "TokenEvent",
    "TranslationCache",
    "ParagraphTranslation",
    "TranslatedSentence",
    "builtin_prefix_list",
    "split_sentences",
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
