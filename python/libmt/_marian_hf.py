"""Hugging Face Transformers MarianMTModel directories (the OPUS-MT models on the hub) -> libmt.

What transformers computes (modeling_marian.py, tokenization_marian.py, 4.45), mapped onto libmt:
post-norm layers with biased q/k/v/out projections (fused into qkv and kv rows), token embeddings
times sqrt(d_model) when ``scale_embedding``, plus sinusoid positions in HF's *concatenated*
layout (sin in the first half, cos in the second, frequency 10000^(2(j//2)/d)) stored as a table,
``final_logits_bias`` as the output bias, decoding from ``decoder_start_token_id`` (``<pad>``)
which HF never emits (``bad_words_ids``). Text goes through source.spm, then vocab.json maps piece
strings to ids (pieces it lacks become ``<unk>``); ids decode through vocab.json's strings with
target.spm's rules.
"""

import math
import pathlib

import numpy as np

from ._conversion import Conversion, ConversionError
from ._hf_common import add_layers, read_json as _read_json, tensor_reader, vocab_ids as _vocab_ids, weights as _weights

ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}


def hf_sinusoid(positions: int, dim: int) -> np.ndarray:
    """MarianSinusoidalPositionalEmbedding._init_weight, computed the same way (float64, then float32)."""
    j = np.arange(dim)
    angles = np.arange(positions, dtype=np.float64)[:, None] / np.power(10000, 2 * (j // 2) / dim)[None, :]
    table = np.empty((positions, dim), dtype=np.float32)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    table[:, :half] = np.sin(angles[:, 0::2]).astype(np.float32)
    table[:, half:] = np.cos(angles[:, 1::2]).astype(np.float32)
    return table


def language_codes(tokens) -> list:
    """A multilingual-target model's >>xx<< tokens, which start the source."""
    return [t for t in tokens if t.startswith(">>") and t.endswith("<<")]


def convert(directory, conversion: Conversion, source_lang=None, target_lang=None) -> None:
    from . import _libmt

    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise ConversionError(f"{directory}: not a directory (a MarianMTModel directory from the Hugging Face hub)")
    config = _read_json(directory / "config.json")
    if config.get("model_type") != "marian":
        raise ConversionError(f"{directory}/config.json: model_type is {config.get('model_type')!r}, not 'marian'")
    tokenizer_config = {}
    if (directory / "tokenizer_config.json").exists():
        tokenizer_config = _read_json(directory / "tokenizer_config.json")
    generation = {}
    if (directory / "generation_config.json").exists():
        generation = _read_json(directory / "generation_config.json")

    def need(key, default=None):
        value = config.get(key, default)
        if value is None:
            raise ConversionError(f"{directory}/config.json has no {key}")
        return value

    d = need("d_model")
    heads = need("encoder_attention_heads")
    if need("decoder_attention_heads") != heads:
        raise ConversionError("encoder and decoder attention heads differ; libmt's layers share one head count")
    ffn = need("encoder_ffn_dim")
    if need("decoder_ffn_dim") != ffn:
        raise ConversionError("encoder and decoder feed-forward widths differ; libmt's layers share one d_ff")
    activation = ACTIVATIONS.get(config.get("activation_function", "gelu"))
    if activation is None:
        raise ConversionError(f"activation_function {config.get('activation_function')!r}: libmt has relu, gelu (erf) "
                              "and swish")
    if config.get("normalize_before") or config.get("normalize_embedding") or config.get("add_final_layer_norm"):
        raise ConversionError("pre-norm or embedding LayerNorm Marian variants are not converted yet")
    if config.get("static_position_embeddings") is False:
        raise ConversionError("learned position embeddings (static_position_embeddings false) are not converted yet")

    shared = config.get("share_encoder_decoder_embeddings", True)
    tied = config.get("tie_word_embeddings", True)
    vocab_size = need("vocab_size")
    target_size = vocab_size if shared else config.get("decoder_vocab_size") or vocab_size

    weights = _weights(directory, conversion)
    tensor = tensor_reader(weights)

    # Vocabularies: source.spm encodes, vocab.json gives model ids; target ids decode through
    # (target_)vocab.json's strings with target.spm's rules.
    separate = tokenizer_config.get("separate_vocabs", False) or not shared
    vocab_path = directory / "vocab.json"
    vocab = _read_json(vocab_path)
    target_vocab_path = directory / "target_vocab.json" if separate else vocab_path
    target_vocab = _read_json(target_vocab_path) if separate else vocab
    source_pieces = _vocab_ids(vocab, vocab_path)
    target_pieces = _vocab_ids(target_vocab, target_vocab_path)
    if len(source_pieces) != vocab_size or len(target_pieces) != target_size:
        raise ConversionError(f"vocabularies of {len(source_pieces)} and {len(target_pieces)} entries, the model's of "
                              f"{vocab_size} and {target_size}")
    def special(name, default):  # a string, or an AddedToken saved as a dict
        value = tokenizer_config.get(name + "_token", default)
        return value.get("content", default) if isinstance(value, dict) else value

    eos, unk, pad = special("eos", "</s>"), special("unk", "<unk>"), special("pad", "<pad>")
    for name, token in (("eos", eos), ("unk", unk), ("pad", pad)):
        if token not in vocab or token not in target_vocab:
            raise ConversionError(f"the {name} token {token!r} is not in the vocabularies")
    if target_vocab[pad] != need("pad_token_id") or target_vocab[eos] != need("eos_token_id"):
        raise ConversionError(f"config.json's pad/eos ids ({config['pad_token_id']}, {config['eos_token_id']}) are not "
                              f"the vocabulary's ({target_vocab[pad]}, {target_vocab[eos]})")
    start = config.get("decoder_start_token_id", target_vocab[pad])
    source_spm = (directory / "source.spm").read_bytes()
    target_spm = (directory / "target.spm").read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(source_spm)
    model_ids = [vocab.get(text, vocab[unk]) for text, _ in spm_pieces]
    # transformers looks every piece's text up in vocab.json, an unknown run's too: text that
    # SentencePiece cannot segment but vocab.json holds (a target-side piece) gets that id.
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {text: index for text, index in vocab.items() if text not in spm_texts}
    lacking = [text for text, kind in spm_pieces if text not in vocab and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} source.spm pieces are not in vocab.json and encode to <unk>, as in "
                        f"transformers (e.g. {', '.join(lacking[:3])})")
    # Multilingual-target models' >>xx<< tokens start the source: source ids.
    language_tokens = language_codes(source_pieces)
    if language_tokens:
        conversion.note(f"{len(language_tokens)} target-language tokens ({', '.join(language_tokens[:4])}"
                        f"{', ...' if len(language_tokens) > 4 else ''}): choose one with target_language= "
                        "(mt_translate --target-language), or start the text with it as with transformers")
        conversion.metadata["language_tokens"] = " ".join(f"{t}={vocab[t]}" for t in language_tokens)
        conversion.metadata["language_placement"] = "source_text"

    # HF ties lm_head to its input embeddings: the shared table, or (separate vocabularies) the
    # encoder's, which libmt stores as the output projection when it fits.
    tied_output = tied and shared
    if not tied and "lm_head.weight" not in weights:
        raise ConversionError("the checkpoint has no lm_head.weight and does not tie it to the embeddings")
    suppressed = sorted({target_vocab[pad]} | {ids[0] for ids in generation.get("bad_words_ids", config.get(
        "bad_words_ids") or []) if len(ids) == 1})
    cfg = _libmt.ModelConfig(
        encoder_layers=need("encoder_layers"), decoder_layers=need("decoder_layers"), d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=vocab_size, target_vocab_size=target_size, max_positions=need("max_position_embeddings"),
        activation=activation, pre_norm=False, layer_norm_epsilon=1e-5, shared_embeddings=shared,
        tied_output=tied_output, pad_id=target_vocab[pad], bos_id=target_vocab[pad], eos_id=target_vocab[eos],
        unk_id=target_vocab[unk], embedding_scale=math.sqrt(d) if config.get("scale_embedding", False) else 1.0,
        decoder_start_id=start, source_eos=True, stored_positions=True, suppressed_ids=suppressed)
    if vocab[unk] != target_vocab[unk]:
        raise ConversionError("<unk> has different ids in the source and target vocabularies; libmt has one unk_id")
    writer = conversion.writer(cfg)
    writer.set_vocabulary(source_spm, model_ids=model_ids, unknown_ids=unknown_ids, language_codes=True)
    writer.set_target_vocabulary(target_spm, target_pieces, control=[eos, pad])

    # Embeddings and the output projection.
    if shared:
        embedding = tensor("model.shared.weight", (vocab_size, d))
        writer.add_tensor("target_embedding", embedding)
    else:
        decoder_table = tensor("model.decoder.embed_tokens.weight")
        if decoder_table.shape[0] < target_size:
            raise ConversionError(f"the decoder embedding has {decoder_table.shape[0]} rows for {target_size} target ids")
        # HF's decoder table is a copy of the source-sized one: its first rows are the target ids'.
        embedding = np.ascontiguousarray(decoder_table[:target_size])
        writer.add_tensor("source_embedding", tensor("model.encoder.embed_tokens.weight", (vocab_size, d)))
        writer.add_tensor("target_embedding", embedding)
        del decoder_table
    if not tied:
        writer.add_tensor("output/weight", tensor("lm_head.weight", (target_size, d)))
    elif not shared:
        writer.add_tensor("output/weight", tensor("model.encoder.embed_tokens.weight", (target_size, d)))
    writer.add_tensor("output/bias", tensor("final_logits_bias").reshape(-1)[:target_size].copy())
    writer.add_tensor("position_encoding", hf_sinusoid(cfg.max_positions, d))

    add_layers(writer, tensor, cfg)

    names = config.get("_name_or_path", "") or directory.name
    conversion.metadata.update({
        "source_language": source_lang or tokenizer_config.get("source_lang", ""),
        "target_language": target_lang or tokenizer_config.get("target_lang", ""),
        "converted_from": f"transformers MarianMTModel ({names})",
        "generation.num_beams": str(generation.get("num_beams", config.get("num_beams", 1))),
        "generation.max_length": str(generation.get("max_length", config.get("max_length", 512))),
    })
    conversion.note(f"architecture: {cfg.encoder_layers}+{cfg.decoder_layers} layers, d_model {d}, {heads} heads, "
                    f"d_ff {ffn}, {activation}, post-norm")
    conversion.note(f"vocabularies: source {len(spm_pieces)} SentencePiece pieces -> {vocab_size} ids, target "
                    f"{target_size} ids{' (separate)' if separate else ' (shared)'}")
    conversion.note("adapted: HF's concatenated sinusoid stored as a table; q/k/v rows fused; decoding starts from "
                    f"{pad} (id {start}), which is never emitted")
