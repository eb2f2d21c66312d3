"""Hugging Face M2M100ForConditionalGeneration directories (M2M-100 with M2M100Tokenizer, NLLB with
NllbTokenizer) -> libmt.

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
from ._hf_common import add_layers, read_json, tensor_reader, vocab_ids, weights

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


class Vocabularies:
    """What a tokenizer gives the model file: the SentencePiece model, each piece's model id, the ids
    of unknown texts, the target pieces in id order (control ones named), the language tokens."""

    def __init__(self, spm_bytes, model_ids, unknown_ids, target_pieces, control, languages, note):
        self.spm_bytes, self.model_ids, self.unknown_ids = spm_bytes, model_ids, unknown_ids
        self.target_pieces, self.control, self.languages, self.note = target_pieces, control, languages, note


def _added_tokens(tokenizer_config: dict) -> dict:
    """tokenizer_config.json's added_tokens_decoder: id -> content."""
    added = {}
    for index, token in tokenizer_config.get("added_tokens_decoder", {}).items():
        content = token.get("content") if isinstance(token, dict) else None
        if isinstance(content, str) and str(index).isdigit():
            added[int(index)] = content
    return added


def _fill(pieces: list, added: dict, vocab_size: int, conversion: Conversion) -> list:
    """Pieces up to vocab_size: the added tokens at their ids, fillers elsewhere (never emitted in
    practice; they decode to nothing, as HF's decode skips what it cannot name)."""
    out = list(pieces) + [None] * (vocab_size - len(pieces))
    for index, content in added.items():
        if index >= vocab_size:
            raise ConversionError(f"added token {content!r} has id {index}, beyond vocab_size {vocab_size}")
        if index >= len(pieces):
            out[index] = content
    taken = set(p for p in out if p is not None)
    fillers = 0
    for index, piece in enumerate(out):
        if piece is None:
            name = f"madeupword{index:06d}"
            while name in taken:
                name += "_"
            out[index] = name
            fillers += 1
    if fillers:
        conversion.note(f"{fillers} ids beyond the tokenizer's decode to nothing")
    return out


def _m2m100_vocabularies(directory, tokenizer_config, vocab_size, conversion) -> Vocabularies:
    from . import _libmt

    language_codes = tokenizer_config.get("language_codes", "m2m100")
    if language_codes != "m2m100":
        raise ConversionError(f"language_codes {language_codes!r}: only M2M100Tokenizer's 'm2m100' list is known")
    vocab_path = directory / "vocab.json"
    vocab = read_json(vocab_path)
    pieces = vocab_ids(vocab, vocab_path)
    spm_path = directory / tokenizer_config.get("spm_file", "sentencepiece.bpe.model")
    if not spm_path.exists():
        raise ConversionError(f"{directory}: no SentencePiece model {spm_path.name}")
    # M2M100Tokenizer numbers its language tokens after vocab.json, in FAIRSEQ_LANGUAGE_CODES' order.
    languages = {f"__{code}__": len(pieces) + i for i, code in enumerate(M2M100_LANGUAGES)}
    if len(pieces) + len(languages) > vocab_size:
        raise ConversionError(f"vocab_size {vocab_size} is smaller than vocab.json ({len(pieces)}) and the "
                              f"{len(languages)} language tokens")
    for index, content in _added_tokens(tokenizer_config).items():
        if content in languages and languages[content] != index:
            raise ConversionError(f"{content} has id {index} in tokenizer_config.json but {languages[content]} in "
                                  "M2M100Tokenizer's numbering")
    target = _fill(pieces + list(languages), {}, vocab_size, conversion)
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
    control = ["<s>", "</s>", "<pad>"] + list(languages) + target[len(pieces) + len(languages):]
    return Vocabularies(spm_bytes, model_ids, unknown_ids, target, control, languages,
                        f"{len(spm_pieces)} SentencePiece pieces through vocab.json")


def _nllb_vocabularies(directory, tokenizer_config, vocab_size, conversion) -> Vocabularies:
    from . import _libmt

    if tokenizer_config.get("legacy_behaviour"):
        raise ConversionError("legacy_behaviour: the source language's token after </s> is not supported; "
                              "libmt puts it first, as NllbTokenizer does by default")
    spm_path = directory / "sentencepiece.bpe.model"
    if not spm_path.exists():
        raise ConversionError(f"{directory}: no sentencepiece.bpe.model (NllbTokenizer's SentencePiece model)")
    spm_bytes = spm_path.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(spm_bytes)
    # NllbTokenizer: <s> <pad> </s> <unk> are 0-3, SentencePiece's piece i is i + 1 (fairseq's offset),
    # its unknown piece <unk> (3); language codes and <mask> are added tokens with their own ids.
    specials = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    model_ids = [3 if kind == "unknown" else specials.get(text, i + 1) for i, (text, kind) in enumerate(spm_pieces)]
    base = ["<s>", "<pad>", "</s>", "<unk>"] + [text for text, _ in spm_pieces[3:]]
    added = _added_tokens(tokenizer_config)
    codes = tokenizer_config.get("additional_special_tokens") or []
    by_content = {content: index for index, content in added.items()}
    languages = {code: by_content[code] for code in codes if code in by_content}
    if not languages:
        raise ConversionError("tokenizer_config.json lists no language codes with ids (additional_special_tokens "
                              "and added_tokens_decoder)")
    target = _fill(base, added, vocab_size, conversion)
    control = ["<s>", "</s>", "<pad>"] + [c for i, c in added.items() if i >= len(base)] + \
        [p for p in target[len(base):] if p.startswith("madeupword")]
    return Vocabularies(spm_bytes, model_ids, {}, target, control, languages,
                        f"{len(spm_pieces)} SentencePiece pieces, ids offset by 1")


def convert(directory, conversion: Conversion, source_lang=None, target_lang=None) -> None:
    from . import _libmt

    directory = pathlib.Path(directory)
    config = read_json(directory / "config.json")
    tokenizer_config = read_json(directory / "tokenizer_config.json") if (directory / "tokenizer_config.json").exists() else {}
    tokenizer_class = tokenizer_config.get("tokenizer_class", "M2M100Tokenizer")

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
    if (bos, pad, eos) != (0, 1, 2):
        raise ConversionError(f"bos/pad/eos ids {bos}/{pad}/{eos}: fairseq's are 0/1/2")
    start = config.get("decoder_start_token_id", eos)
    if tokenizer_class == "M2M100Tokenizer":
        vocabularies = _m2m100_vocabularies(directory, tokenizer_config, vocab_size, conversion)
        family = "M2M-100"
    elif tokenizer_class in ("NllbTokenizer", "NllbTokenizerFast"):
        vocabularies = _nllb_vocabularies(directory, tokenizer_config, vocab_size, conversion)
        family = "NLLB"
    else:
        raise ConversionError(f"tokenizer_class {tokenizer_class!r}: M2M-100 models convert with M2M100Tokenizer "
                              "or NllbTokenizer")
    unk = 3
    if vocabularies.target_pieces[unk] != "<unk>":
        raise ConversionError("id 3 is not <unk>")

    positions = need("max_position_embeddings")
    cfg = _libmt.ModelConfig(
        encoder_layers=need("encoder_layers"), decoder_layers=need("decoder_layers"), d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=vocab_size, target_vocab_size=vocab_size, max_positions=positions, activation="relu",
        pre_norm=True, layer_norm_epsilon=1e-5, shared_embeddings=True, tied_output=True, pad_id=pad, bos_id=bos,
        eos_id=eos, unk_id=unk, embedding_scale=math.sqrt(d) if config.get("scale_embedding", True) else 1.0,
        decoder_start_id=start, source_eos=True, stored_positions=True, suppressed_ids=[pad])
    writer = conversion.writer(cfg)
    writer.set_vocabulary(vocabularies.spm_bytes, model_ids=vocabularies.model_ids,
                          unknown_ids=vocabularies.unknown_ids)
    writer.set_target_vocabulary(vocabularies.spm_bytes, vocabularies.target_pieces, control=vocabularies.control)

    tensor = tensor_reader(weights(directory, conversion))

    writer.add_tensor("target_embedding", tensor("model.shared.weight", (vocab_size, d)))
    writer.add_tensor("output/bias", np.zeros(vocab_size, dtype=np.float32))
    # Position ids start at padding_idx + 1: row p of libmt's table is row p + pad + 1 of fairseq's.
    writer.add_tensor("position_encoding", fairseq_sinusoid(positions + pad + 1, d, pad)[pad + 1:])
    add_layers(writer, tensor, cfg)

    conversion.metadata.update({
        "source_language": source_lang or "", "target_language": target_lang or "",
        "converted_from": f"transformers {family} ({config.get('_name_or_path') or directory.name})",
        "language_tokens": " ".join(f"{t}={i}" for t, i in vocabularies.languages.items()),
        "language_placement": "prefix",
    })
    conversion.note(f"{family}: {cfg.encoder_layers}+{cfg.decoder_layers} layers, d_model {d}, {heads} heads, "
                    f"d_ff {ffn}, relu, pre-norm")
    conversion.note(f"vocabulary: {vocabularies.note} -> {vocab_size} ids, {len(vocabularies.languages)} languages")
    conversion.note("adapted: fairseq's sinusoid from position 2 stored as a table; q/k/v rows fused; sources take "
                    "the source language's token, outputs start with the target language's (source_language=, "
                    "target_language=); </s> starts decoding; <pad> is never emitted")
