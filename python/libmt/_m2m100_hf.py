"""Hugging Face M2M100ForConditionalGeneration directories (M2M-100, with M2M100Tokenizer) -> libmt.

What transformers computes (modeling_m2m_100.py, tokenization_m2m_100.py, 4.45), mapped onto libmt:
pre-norm layers with final LayerNorms, ReLU, token embeddings times sqrt(d_model), plus fairseq's
sinusoid (sin | cos halves, frequency ln(10000)/(d/2-1), computed in float32) at position ids that
start at padding_idx + 1 = 2, stored as a table from that row on; the output projection tied to the
embeddings with no bias. Sources are ``__src__ X </s>`` and decoding starts from ``</s>`` with the
target language's token forced first: libmt's source and target prefixes (``source_language`` and
``target_language`` in Python resolve to them). Text goes through the SentencePiece (BPE) model,
then vocab.json maps piece strings to ids (pieces it lacks become ``<unk>``); the language tokens
follow vocab.json, then ``num_madeup_words`` fillers.
"""

import math
import pathlib

import numpy as np

from ._conversion import Conversion, ConversionError
from ._hf_common import add_layers, read_json, vocab_ids, weights

# M2M100Tokenizer's FAIRSEQ_LANGUAGE_CODES["m2m100"], in id order (facts of the released models).
M2M100_LANGUAGES = (
    "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi hr ht "
    "hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or pa pl ps "
    "pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu").split()


def fairseq_sinusoid(rows: int, dim: int, padding_idx: int) -> np.ndarray:
    """M2M100SinusoidalPositionalEmbedding.get_embedding: float32 throughout, as torch computes it."""
    half = dim // 2
    step = np.float32(math.log(10000) / (half - 1))
    frequencies = np.exp(np.arange(half, dtype=np.float32) * -step)
    angles = np.arange(rows, dtype=np.float32)[:, None] * frequencies[None, :]
    table = np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)
    if dim % 2 == 1:
        table = np.concatenate([table, np.zeros((rows, 1), dtype=np.float32)], axis=1)
    table[padding_idx, :] = 0
    return table


def convert(directory, conversion: Conversion, source_lang=None, target_lang=None) -> None:
    from . import _libmt

    directory = pathlib.Path(directory)
    config = read_json(directory / "config.json")
    tokenizer_config = read_json(directory / "tokenizer_config.json") if (directory / "tokenizer_config.json").exists() else {}
    tokenizer_class = tokenizer_config.get("tokenizer_class", "M2M100Tokenizer")
    if tokenizer_class not in ("M2M100Tokenizer",):
        raise ConversionError(f"tokenizer_class {tokenizer_class!r}: --from transformers reads M2M-100 models with "
                              "M2M100Tokenizer (NLLB's NllbTokenizer is not converted yet)")
    language_codes = tokenizer_config.get("language_codes", "m2m100")
    if language_codes != "m2m100":
        raise ConversionError(f"language_codes {language_codes!r}: only M2M100Tokenizer's 'm2m100' list is known")

    def need(key):
        if config.get(key) is None:
            raise ConversionError(f"{directory}/config.json has no {key}")
        return config[key]

    d, heads, ffn = need("d_model"), need("encoder_attention_heads"), need("encoder_ffn_dim")
    if need("decoder_attention_heads") != heads or need("decoder_ffn_dim") != ffn:
        raise ConversionError("encoder and decoder differ in heads or feed-forward width; libmt's layers share them")
    if config.get("activation_function", "relu") != "relu":
        raise ConversionError(f"activation_function {config.get('activation_function')!r}: M2M-100 models use relu")
    vocab_size = need("vocab_size")
    pad, eos, bos = need("pad_token_id"), need("eos_token_id"), need("bos_token_id")
    start = config.get("decoder_start_token_id", eos)

    vocab_path = directory / "vocab.json"
    vocab = read_json(vocab_path)
    pieces = vocab_ids(vocab, vocab_path)
    spm_path = directory / tokenizer_config.get("spm_file", "sentencepiece.bpe.model")
    if not spm_path.exists():
        raise ConversionError(f"{directory}: no SentencePiece model {spm_path.name}")
    language_tokens = [f"__{code}__" for code in M2M100_LANGUAGES]
    madeup = vocab_size - len(pieces) - len(language_tokens)
    if madeup < 0:
        raise ConversionError(f"vocab_size {vocab_size} is smaller than vocab.json ({len(pieces)}) and the "
                              f"{len(language_tokens)} language tokens")
    target_pieces = pieces + language_tokens + [f"madeupword{i:04d}" for i in range(madeup)]
    for name, token in (("unk", "<unk>"), ("eos", "</s>"), ("pad", "<pad>"), ("bos", "<s>")):
        if token not in vocab:
            raise ConversionError(f"vocab.json has no {token}")
    if (vocab["<pad>"], vocab["</s>"], vocab["<s>"]) != (pad, eos, bos):
        raise ConversionError("config.json's pad/eos/bos ids are not vocab.json's")

    spm_bytes = spm_path.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(spm_bytes)
    unk = vocab["<unk>"]
    model_ids = [vocab.get(text, unk) for text, _ in spm_pieces]
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {text: index for text, index in vocab.items() if text not in spm_texts}
    lacking = [text for text, kind in spm_pieces if text not in vocab and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} SentencePiece pieces are not in vocab.json and encode to <unk>, as in "
                        f"transformers (e.g. {', '.join(lacking[:3])})")

    positions = need("max_position_embeddings")
    cfg = _libmt.ModelConfig(
        encoder_layers=need("encoder_layers"), decoder_layers=need("decoder_layers"), d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=vocab_size, target_vocab_size=vocab_size, max_positions=positions, activation="relu",
        pre_norm=True, layer_norm_epsilon=1e-5, shared_embeddings=True, tied_output=True, pad_id=pad, bos_id=bos,
        eos_id=eos, unk_id=unk, embedding_scale=math.sqrt(d) if config.get("scale_embedding", True) else 1.0,
        decoder_start_id=start, source_eos=True, stored_positions=True, suppressed_ids=[pad])
    writer = conversion.writer(cfg)
    writer.set_vocabulary(spm_bytes, model_ids=model_ids, unknown_ids=unknown_ids)
    control = ["<s>", "</s>", "<pad>"] + language_tokens + target_pieces[len(pieces) + len(language_tokens):]
    writer.set_target_vocabulary(spm_bytes, target_pieces, control=control)

    table = weights(directory, conversion)

    def tensor(name, shape=None):
        value = table.get(name)
        if value is None:
            raise ConversionError(f"the checkpoint has no tensor '{name}'")
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ConversionError(f"tensor '{name}' has shape {list(value.shape)}, expected {list(shape)}")
        return value

    writer.add_tensor("target_embedding", tensor("model.shared.weight", (vocab_size, d)))
    writer.add_tensor("output/bias", np.zeros(vocab_size, dtype=np.float32))
    # Position ids start at padding_idx + 1: row p of libmt's table is row p + pad + 1 of fairseq's.
    writer.add_tensor("position_encoding", fairseq_sinusoid(positions + pad + 1, d, pad)[pad + 1:])
    add_layers(writer, tensor, cfg)

    conversion.metadata.update({
        "source_language": source_lang or "", "target_language": target_lang or "",
        "converted_from": f"transformers M2M100ForConditionalGeneration ({config.get('_name_or_path') or directory.name})",
        "language_tokens": " ".join(f"{t}={len(pieces) + i}" for i, t in enumerate(language_tokens)),
        "language_placement": "prefix",
    })
    conversion.note(f"architecture: {cfg.encoder_layers}+{cfg.decoder_layers} layers, d_model {d}, {heads} heads, "
                    f"d_ff {ffn}, relu, pre-norm")
    conversion.note(f"vocabulary: {len(spm_pieces)} SentencePiece pieces -> {vocab_size} ids "
                    f"({len(language_tokens)} language tokens, {madeup} fillers)")
    conversion.note("adapted: fairseq's sinusoid from position 2 stored as a table; q/k/v rows fused; sources take "
                    "the source language's token, outputs start with the target language's (source_language=, "
                    "target_language=); </s> starts decoding; <pad> is never emitted")
