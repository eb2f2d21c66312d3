"""fairseq transformer checkpoints (checkpoint_best.pt + dict.src.txt, dict.tgt.txt, and the
SentencePiece model the data was segmented with) -> libmt.

What fairseq 0.12 computes (fairseq/models/transformer), mapped onto libmt: post-norm layers, or
pre-norm with a final LayerNorm per stack (encoder/decoder_normalize_before), LayerNorm eps 1e-5,
q/k/v/out projections with biases (the layer names M2M-100's port kept), embeddings times sqrt(d)
unless no_scale_embedding, the tensor2tensor sinusoid numbered from padding_idx + 1, an output
projection without bias. Dictionaries: <s> 0, <pad> 1, </s> 2, <unk> 3, then dict.txt's order
(a piece missing becomes <unk>, as Dictionary.encode_line does); sources end with </s>, decoding
starts from </s>, <pad> is never emitted (SequenceGenerator's rule). The checkpoint is read without
torch or fairseq (tensors, dicts, lists and argparse.Namespace only).
"""

import math
import pathlib

import numpy as np

from . import _checkpoints
from ._conversion import Conversion, ConversionError
from ._hf_common import add_layers, tensor_reader
from ._m2m100_hf import fairseq_sinusoid

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "swish"}
SPM_NAMES = ("sentencepiece.bpe.model", "sentencepiece.model", "spm.model")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def read_dictionary(path: pathlib.Path, rows: int, conversion: Conversion) -> list:
    """fairseq's Dictionary: the four specials, then each line's token (`token count [flags]`),
    then madeupwordNNNN fillers up to the embedding's rows (pad_to_multiple_)."""
    tokens = list(SPECIALS)
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        fields = line.rstrip().split(" ")
        if len(fields) < 2 or not fields[1].lstrip("-").isdigit():
            raise ConversionError(f"{path}: line {number} is not 'token count' ({line[:60]!r})")
        token = " ".join(fields[:-2] if fields[-1].startswith("#fairseq:") else fields[:-1])
        tokens.append(token)
    if len(tokens) > rows:
        raise ConversionError(f"{path}: {len(tokens)} tokens with the specials, the embedding has {rows} rows")
    fillers = rows - len(tokens)
    tokens += [f"madeupword{i:04d}" for i in range(fillers)]
    if fillers:
        conversion.note(f"{path.name}: {fillers} padding entries (madeupword) after its {rows - fillers} tokens")
    return tokens


def convert(path, conversion: Conversion, source_lang=None, target_lang=None, source_spm=None,
            target_spm=None) -> None:
    from . import _libmt

    path = pathlib.Path(path)
    if not path.is_file():
        raise ConversionError(f"{path}: not a file (a fairseq checkpoint, e.g. checkpoint_best.pt)")
    try:
        checkpoint = _checkpoints.load_torch_zip(path, namespaces=True)
    except _checkpoints.CheckpointError as e:
        raise ConversionError(str(e)) from None
    if not isinstance(checkpoint, dict) or "model" not in checkpoint:
        raise ConversionError(f"{path}: not a fairseq checkpoint (a dict with model and cfg or args)")
    options = checkpoint.get("args")
    if options is None and isinstance(checkpoint.get("cfg"), dict):
        options = checkpoint["cfg"].get("model")
    if options is None:
        raise ConversionError(f"{path}: the checkpoint has neither args nor cfg.model")
    options = dict(vars(options)) if not isinstance(options, dict) else options

    def option(name, default=None):
        value = options.get(name, default)
        return default if value is None else value

    arch = str(option("arch", option("_name", "")))
    if not arch.startswith("transformer") or arch.startswith("transformer_lm"):
        raise ConversionError(f"arch {arch!r}: libmt converts fairseq's encoder-decoder transformers")
    checks = [(option("layernorm_embedding", False), "a LayerNorm on the embeddings (layernorm_embedding)"),
              (option("no_token_positional_embeddings", False), "no position embeddings"),
              (option("encoder_learned_pos", False) or option("decoder_learned_pos", False),
               "learned positions (encoder and decoder tables differ; libmt has one)"),
              (option("adaptive_softmax_cutoff"), "an adaptive softmax"),
              (option("cross_self_attention", False), "cross+self attention"),
              (option("encoder_normalize_before", False) != option("decoder_normalize_before", False),
               "pre-norm on one side only"),
              (option("no_decoder_final_norm", False) and option("decoder_normalize_before", False),
               "a pre-norm decoder without its final LayerNorm")]
    for bad, what in checks:
        if bad:
            raise ConversionError(f"the model uses {what}; libmt cannot run it")
    activation = ACTIVATIONS.get(option("activation_fn", "relu"))
    if activation is None:
        raise ConversionError(f"activation_fn {option('activation_fn')!r}: libmt has relu, gelu (erf) and swish "
                              "(fairseq's gelu_fast/gelu_accurate are the tanh approximation)")
    d = option("encoder_embed_dim")
    heads, ffn = option("encoder_attention_heads"), option("encoder_ffn_embed_dim")
    if (option("decoder_embed_dim", d), option("decoder_attention_heads", heads), option("decoder_ffn_embed_dim", ffn)) \
            != (d, heads, ffn) or option("decoder_output_dim", d) != d or option("decoder_input_dim", d) != d:
        raise ConversionError("the encoder and decoder differ in width, heads or feed-forward size; libmt's layers "
                              "share them")
    pre_norm = bool(option("encoder_normalize_before", False))

    weights = {k: v for k, v in checkpoint["model"].items() if hasattr(v, "shape")}
    tensor = tensor_reader(weights)
    source_embedding = np.asarray(tensor("encoder.embed_tokens.weight"), np.float32)
    target_embedding = np.asarray(tensor("decoder.embed_tokens.weight"), np.float32)
    if source_embedding.shape[1] != d:
        raise ConversionError(f"encoder.embed_tokens.weight has {source_embedding.shape[1]} columns, d_model {d}")
    source_tokens = read_dictionary(_beside(path, "dict.src.txt", "the source dictionary"),
                                    source_embedding.shape[0], conversion)
    target_tokens = read_dictionary(_beside(path, "dict.tgt.txt", "the target dictionary"),
                                    target_embedding.shape[0], conversion)
    shared = source_tokens == target_tokens and np.array_equal(source_embedding, target_embedding)
    projection = np.asarray(tensor("decoder.output_projection.weight", target_embedding.shape), np.float32)
    tied = np.array_equal(projection, target_embedding)
    bos, pad, eos, unk = 0, 1, 2, 3

    positions = min(max(option("max_source_positions", 1024), option("max_target_positions", 1024)), 1024)
    cfg = _libmt.ModelConfig(
        encoder_layers=option("encoder_layers"), decoder_layers=option("decoder_layers"), d_model=d, heads=heads,
        d_ff=ffn, source_vocab_size=len(source_tokens), target_vocab_size=len(target_tokens), max_positions=positions,
        activation=activation, pre_norm=pre_norm, layer_norm_epsilon=1e-5, shared_embeddings=shared,
        tied_output=tied and shared, pad_id=pad, bos_id=bos, eos_id=eos, unk_id=unk,
        embedding_scale=1.0 if option("no_scale_embedding", False) else math.sqrt(d), decoder_start_id=eos,
        source_eos=True, stored_positions=True, suppressed_ids=[pad])
    writer = conversion.writer(cfg)

    source_spm = pathlib.Path(source_spm) if source_spm else _find_spm(path)
    target_spm = pathlib.Path(target_spm) if target_spm else source_spm
    source_spm_bytes, target_spm_bytes = source_spm.read_bytes(), target_spm.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(source_spm_bytes)
    index = {t: i for i, t in enumerate(source_tokens)}
    model_ids = [index.get(text, unk) for text, _ in spm_pieces]
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {t: i for t, i in index.items() if t not in spm_texts and i >= len(SPECIALS)}
    lacking = [text for text, kind in spm_pieces if text not in index and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} SentencePiece pieces are not in the dictionary and encode to <unk>, as in "
                        f"fairseq (e.g. {', '.join(lacking[:3])})")
    writer.set_vocabulary(source_spm_bytes, model_ids=model_ids, unknown_ids=unknown_ids)
    writer.set_target_vocabulary(target_spm_bytes, target_tokens, control=["<s>", "</s>", "<pad>"] +
                                 [t for t in target_tokens if t.startswith("madeupword")])

    writer.add_tensor("target_embedding", target_embedding)
    if not shared:
        writer.add_tensor("source_embedding", source_embedding)
    if not (tied and shared):
        writer.add_tensor("output/weight", projection)
    writer.add_tensor("output/bias", np.zeros(len(target_tokens), np.float32))
    # Positions are numbered from padding_idx + 1: row p of libmt's table is fairseq's row p + pad + 1.
    writer.add_tensor("position_encoding", fairseq_sinusoid(positions + pad + 1, d, pad)[pad + 1:].copy())
    add_layers(writer, lambda name, shape=None: np.asarray(tensor(name, shape), np.float32), cfg, prefix="")

    conversion.metadata.update({
        "source_language": source_lang or "", "target_language": target_lang or "",
        "converted_from": f"fairseq {arch} checkpoint ({path.name})",
    })
    conversion.note(f"architecture: {cfg.encoder_layers}+{cfg.decoder_layers} layers, d_model {d}, {heads} heads, "
                    f"d_ff {ffn}, {activation}, {'pre' if pre_norm else 'post'}-norm")
    conversion.note(f"vocabularies: {len(spm_pieces)} SentencePiece pieces -> {len(source_tokens)} source ids, "
                    f"{len(target_tokens)} target ids{' (shared)' if shared else ''}")
    conversion.note("adapted: fairseq's sinusoid from position 2 stored as a table; q/k/v rows fused; sources end "
                    "with </s>, decoding starts from </s>, <pad> is never emitted")


def _beside(checkpoint: pathlib.Path, name: str, what: str) -> pathlib.Path:
    path = checkpoint.parent / name
    if not path.exists():
        raise ConversionError(f"{checkpoint.parent}: no {name} ({what}, as fairseq-preprocess wrote it)")
    return path


def _find_spm(checkpoint: pathlib.Path) -> pathlib.Path:
    for name in SPM_NAMES:
        if (checkpoint.parent / name).exists():
            return checkpoint.parent / name
    raise ConversionError(f"{checkpoint.parent}: no SentencePiece model beside the checkpoint "
                          f"({', '.join(SPM_NAMES)}); give the one the data was segmented with by --source-spm. "
                          "Models segmented with Moses and BPE (subword-nmt, fastBPE) cannot be tokenized by libmt")
