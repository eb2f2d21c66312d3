"""Converts translation models made elsewhere into one libmt model file.

    python -m libmt.convert --from transformers opus-mt-en-de/ -o en-de.mtm
    libmt-convert --from transformers opus-mt-en-de/ -o en-de.mtm   (the same, as a console script)

Sources: ``transformers`` (Hugging Face model directories: MarianMTModel, the OPUS-MT models, and
M2M100ForConditionalGeneration with M2M100Tokenizer or NllbTokenizer) and ``ctranslate2``
(CTranslate2 model directories; Argos Translate packages, .argosmodel files) ``opennmt-py``
(OpenNMT-py v3 checkpoints) and ``marian`` (native Marian .npz models, OPUS-MT releases) and ``fairseq`` (transformer checkpoints).
The file holds
everything needed to translate, both tokenizers included. A model libmt cannot run exactly is
refused with the reason; the output is written atomically (never a partial file).
"""

import argparse
import importlib.util
import pathlib
import sys
from typing import List, Optional

from ._conversion import Conversion, ConversionError, report, write_atomically

SOURCES = {"transformers": "Hugging Face model directory: MarianMTModel (OPUS-MT), M2M100ForConditionalGeneration",
           "ctranslate2": "CTranslate2 model directory, or an Argos Translate package (.argosmodel or unpacked)",
           "marian": "native Marian model: an OPUS-MT release directory (model .npz, decoder.yml, vocab.yml, .spm)",
           "fairseq": "fairseq transformer checkpoint (.pt) with dict.src.txt, dict.tgt.txt and its SentencePiece model",
           "opennmt-py": "OpenNMT-py v3 checkpoint (.pt), with the SentencePiece model it was trained with"}


def convert(source_format: str, source, output=None, *, quantize: Optional[str] = None, calibration=None,
            source_lang: Optional[str] = None, target_lang: Optional[str] = None, source_spm=None,
            target_spm=None, source_eos: Optional[bool] = None) -> Conversion:
    """Converts `source` (a path) from `source_format`; writes `output` when given. Returns the
    Conversion (notes, warnings, config). quantize="int8" writes int8 weights as they are read
    (dynamic activation scales); with `calibration` (a text file, one source sentence a line) the
    fp32 conversion is quantized as mt_quantize does, activations calibrated on it.
    source_spm/target_spm: SentencePiece models for sources that do not hold their own
    (ctranslate2); source_eos: whether sources end with </s> where the source does not record it
    (ctranslate2). Raises ConversionError for models libmt cannot run."""
    from . import __version__

    if source_format not in SOURCES:
        raise ConversionError(f"--from {source_format!r}: libmt converts from {', '.join(sorted(SOURCES))}")
    if importlib.util.find_spec("numpy") is None:
        raise ConversionError("libmt.convert reads checkpoints with numpy, which is not installed: "
                              "pip install 'libmt[convert]' (or numpy)")
    if quantize not in (None, "int8"):
        raise ConversionError(f"--quantize {quantize!r}: libmt quantizes to int8")
    if calibration is not None and quantize != "int8":
        raise ConversionError("--calibration calibrates an int8 conversion: add --quantize int8")
    sentences = _calibration_text(calibration) if calibration is not None else None
    conversion = Conversion(source_format, str(source), None if sentences else quantize)
    if source_format == "transformers":
        _convert_transformers(pathlib.Path(source), conversion, source_lang, target_lang)
    elif source_format == "marian":
        from . import _marian_npz

        _marian_npz.convert(source, conversion, source_lang=source_lang, target_lang=target_lang)
    elif source_format == "fairseq":
        from . import _fairseq

        if source_eos is False:
            raise ConversionError("--source-eos no: fairseq sources always end with </s>")
        _fairseq.convert(source, conversion, source_lang=source_lang, target_lang=target_lang,
                         source_spm=source_spm, target_spm=target_spm)
    elif source_format == "opennmt-py":
        from . import _opennmt_py

        if source_eos:
            raise ConversionError("--source-eos: OpenNMT-py sources never end with </s>")
        _opennmt_py.convert(source, conversion, source_lang=source_lang, target_lang=target_lang,
                            source_spm=source_spm, target_spm=target_spm)
    elif source_format == "ctranslate2":
        from . import _ctranslate2

        _ctranslate2.convert(source, conversion, source_lang=source_lang, target_lang=target_lang,
                             source_spm=source_spm, target_spm=target_spm, source_eos=source_eos)
    data = conversion.finish(__version__)
    if sentences:
        from . import _libmt

        data, agreement = _libmt._quantize_int8(data, sentences)
        conversion.quantize = "int8"
        conversion.note(f"int8: activations calibrated on {len(sentences)} sentences of {calibration} (as mt_quantize); "
                        f"greedy output identical to fp32 on {100 * agreement['identical_sentences']:.1f}% of them")
    conversion.size = len(data)
    if output is not None:
        write_atomically(pathlib.Path(output), data)
    conversion.data = data
    return conversion


def _calibration_text(path) -> List[str]:
    try:
        lines = [line for line in pathlib.Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]
    except UnicodeDecodeError as e:
        raise ConversionError(f"--calibration {path}: not UTF-8 ({e})") from None
    if not lines:
        raise ConversionError(f"--calibration {path}: the file has no sentences")
    return lines


def _convert_transformers(directory: pathlib.Path, conversion: Conversion, source_lang, target_lang) -> None:
    from ._hf_common import read_json

    if not directory.is_dir():
        raise ConversionError(f"{directory}: not a directory (a model directory from the Hugging Face hub)")
    model_type = read_json(directory / "config.json").get("model_type")
    if model_type == "marian":
        from . import _marian_hf as converter
    elif model_type == "m2m_100":
        from . import _m2m100_hf as converter
    else:
        raise ConversionError(f"{directory}/config.json: model_type {model_type!r}; --from transformers converts "
                              "'marian' (MarianMTModel: OPUS-MT) and 'm2m_100' (M2M-100)")
    converter.convert(directory, conversion, source_lang=source_lang, target_lang=target_lang)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="libmt-convert", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="sources:\n" + "\n".join(f"  {k:14} {v}" for k, v in SOURCES.items()))
    parser.add_argument("--from", dest="source_format", required=True, choices=sorted(SOURCES),
                        help="what the source is")
    parser.add_argument("source", help="the model to convert (a directory or file)")
    parser.add_argument("-o", "--output", required=True, help="the libmt model file to write")
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument("--quantize", choices=["int8"],
                        help="write int8 weights (per row, as mt_quantize) with activations quantized at run time; "
                             "(with --calibration, activations calibrated as mt_quantize does)")
    parser.add_argument("--calibration", metavar="FILE",
                        help="source sentences, one a line, to calibrate the int8 activations on (with --quantize "
                             "int8; the fp32 model is held in memory, so it must be under 2 GiB)")
    parser.add_argument("--source-lang", help="source language code to record (default: the model's own)")
    parser.add_argument("--target-lang", help="target language code to record (default: the model's own)")
    parser.add_argument("--source-spm", help="SentencePiece model of the source side (ctranslate2, opennmt-py: "
                                             "default the one beside the model: sentencepiece.model, source.spm)")
    parser.add_argument("--target-spm", help="SentencePiece model of the target side (default: as --source-spm)")
    parser.add_argument("--source-eos", choices=["yes", "no"],
                        help="whether sources end with </s> (ctranslate2: default config.json's add_source_eos; "
                             "models converted from Transformers, such as OPUS-MT and M2M-100, need yes)")
    args = parser.parse_args(argv)
    output = pathlib.Path(args.output)
    if output.is_dir():
        print(f"libmt-convert: error: cannot write '{output}': it is a directory", file=sys.stderr)
        return 1
    if output.exists() and not args.force:  # as mt_quantize and mt_model: never replaced by accident
        print(f"libmt-convert: error: '{output}' exists; add --force to replace it", file=sys.stderr)
        return 1
    try:
        conversion = convert(args.source_format, args.source, args.output, quantize=args.quantize,
                             calibration=args.calibration,
                             source_lang=args.source_lang, target_lang=args.target_lang,
                             source_spm=args.source_spm, target_spm=args.target_spm,
                             source_eos=None if args.source_eos is None else args.source_eos == "yes")
    except (ConversionError, OSError, ValueError) as e:
        print(f"libmt-convert: error: {e}", file=sys.stderr)
        return 1
    report(conversion, args.output, conversion.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
