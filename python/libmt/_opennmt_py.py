"""OpenNMT-py v3 checkpoints (the ``.pt`` files onmt_train saves and onmt_release_model strips) ->
libmt.

What OpenNMT-py computes (onmt 3.x, transformer encoder and decoder), mapped onto libmt: pre-norm
layers with a final LayerNorm per stack (eps 1e-6 unless ``norm_eps``), q/k/v and output
projections with biases only when ``add_qkvbias`` (feed-forward: ``add_ffnbias``; missing biases
are zeros), embeddings times sqrt(d_model) plus the checkpoint's own position table (interleaved
or concatenated sinusoid, positions from 0), a generator with bias. The source gets no </s>;
decoding starts from ``decoder_start_token`` (``<s>``); nothing is masked (OpenNMT-py may emit
``<blank>``). Text is segmented by the SentencePiece model the model was trained with (OpenNMT-py
keeps it outside the checkpoint): pieces the vocabulary lacks become <unk>, as in onmt's vocab
lookup. The checkpoint is read without torch or onmt: tensors, dicts, lists and the options'
argparse.Namespace only.
"""

import math
import pathlib

import numpy as np

from . import _checkpoints
from ._conversion import Conversion, ConversionError

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "silu": "swish"}
SPM_NAMES = ("sentencepiece.model", "spm.model", "source.spm")


def _find_spm(checkpoint: pathlib.Path, given, names):
    if given:
        return pathlib.Path(given)
    for name in names:
        if (checkpoint.parent / name).exists():
            return checkpoint.parent / name
    return None


def convert(path, conversion: Conversion, source_lang=None, target_lang=None, source_spm=None,
            target_spm=None) -> None:
    from . import _libmt

    path = pathlib.Path(path)
    if not path.is_file():
        raise ConversionError(f"{path}: not a file (an OpenNMT-py checkpoint, e.g. model_step_10000.pt)")
    try:
        checkpoint = _checkpoints.load_torch_zip(path, namespaces=True)
    except _checkpoints.CheckpointError as e:
        if "torchtext" in str(e):
            raise ConversionError(f"{path}: an OpenNMT-py v2 checkpoint (its vocabulary is pickled torchtext "
                                  "Fields); convert it to v3 first with OpenNMT-py 3's tools/convertv2_v3.py") from None
        raise ConversionError(str(e)) from None
    if not isinstance(checkpoint, dict) or not {"model", "generator", "vocab", "opt"} <= set(checkpoint):
        raise ConversionError(f"{path}: not an OpenNMT-py checkpoint (a dict with model, generator, vocab and opt)")
    opt, vocab = checkpoint["opt"], checkpoint["vocab"]
    model = {k: v for k, v in checkpoint["model"].items() if isinstance(v, np.ndarray)}
    generator = checkpoint["generator"] or {}

    def option(name, default=None):
        return getattr(opt, name, default)

    # What libmt cannot run, by name.
    if option("encoder_type", "transformer") != "transformer" or option("decoder_type", "transformer") != "transformer":
        raise ConversionError(f"encoder {option('encoder_type')!r} / decoder {option('decoder_type')!r}: libmt runs "
                              "transformer encoders and decoders only (no RNN, CNN or mean encoders)")
    relative = option("max_relative_positions", 0) or 0
    if relative:
        kind = {-1: "rotary position embeddings", -2: "ALiBi"}.get(relative, "relative position representations")
        raise ConversionError(f"max_relative_positions {relative}: {kind}; libmt has absolute positions only")
    if not option("position_encoding", False):
        raise ConversionError("the model has no position encoding (position_encoding false); libmt needs one")
    checks = [(option("layer_norm", "standard") != "standard", f"layer_norm {option('layer_norm')!r} (RMS norm)"),
              (option("self_attn_type", "scaled-dot") not in ("scaled-dot", "scaled-dot-flash"),
               f"self_attn_type {option('self_attn_type')!r}"),
              ((option("num_kv", 0) or 0) > 0 or option("multiquery", False), "grouped or multi-query attention"),
              (option("parallel_residual", False), "parallel residual layers"),
              (option("shared_layer_norm", False), "a shared LayerNorm"),
              (option("copy_attn", False), "a copy-attention generator"),
              (bool(option("src_feats")), "source features"),
              (option("lora_layers") not in (None, []), "unmerged LoRA layers (merge them first)")]
    for bad, what in checks:
        if bad:
            raise ConversionError(f"the model uses {what}; libmt cannot run it")
    activation = ACTIVATIONS.get(option("pos_ffn_activation_fn", "relu"))
    if activation is None:
        raise ConversionError(f"pos_ffn_activation_fn {option('pos_ffn_activation_fn')!r}: libmt has relu, gelu (erf) "
                              "and silu (swish)")

    source_tokens, target_tokens = list(vocab.get("src") or []), list(vocab.get("tgt") or [])
    if not source_tokens or not all(isinstance(t, str) for t in source_tokens + target_tokens):
        raise ConversionError(f"{path}: the checkpoint's vocab is not two lists of tokens (OpenNMT-py v3)")
    start_token = vocab.get("decoder_start_token") or "<s>"
    specials = {}
    for name, token in (("unk", "<unk>"), ("pad", "<blank>"), ("bos", start_token), ("eos", "</s>")):
        if token not in target_tokens or token not in source_tokens:
            raise ConversionError(f"the {name} token {token!r} is not in both vocabularies")
        if source_tokens.index(token) != target_tokens.index(token):
            raise ConversionError(f"{token!r} has different ids in the source and target vocabularies; libmt gives "
                                  "special tokens one id")
        specials[name] = target_tokens.index(token)

    def tensor(name, shape=None, required=True):
        value = model.get(name)
        if value is None:
            if required:
                raise ConversionError(f"the checkpoint has no tensor '{name}'")
            return None
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ConversionError(f"tensor '{name}' has shape {list(value.shape)}, expected {list(shape)}")
        return np.asarray(value, np.float32)

    source_embedding = tensor("encoder.embeddings.make_embedding.emb_luts.0.weight")
    target_embedding = tensor("decoder.embeddings.make_embedding.emb_luts.0.weight")
    d = source_embedding.shape[1]
    if source_embedding.shape != (len(source_tokens), d) or target_embedding.shape != (len(target_tokens), d):
        raise ConversionError(f"embeddings of {list(source_embedding.shape)} and {list(target_embedding.shape)} for "
                              f"vocabularies of {len(source_tokens)} and {len(target_tokens)} tokens")
    heads = option("heads")
    ffn = option("transformer_ff")
    encoder_layers, decoder_layers = option("enc_layers"), option("dec_layers")
    if not all(isinstance(x, int) and x > 0 for x in (heads, ffn, encoder_layers, decoder_layers)):
        raise ConversionError("the checkpoint's options lack heads, transformer_ff, enc_layers or dec_layers")
    positions = tensor("encoder.embeddings.make_embedding.pe.pe")
    positions = positions.reshape(positions.shape[0], -1)
    decoder_positions = tensor("decoder.embeddings.make_embedding.pe.pe").reshape(positions.shape[0], -1)
    if not np.array_equal(positions, decoder_positions) or positions.shape[1] != d:
        raise ConversionError("the encoder and decoder position tables differ; libmt has one")
    max_positions = min(positions.shape[0], 1024)
    if positions.shape[0] > max_positions:
        conversion.note(f"positions: the first {max_positions} of the checkpoint's {positions.shape[0]} rows "
                        "(longer sentences are refused with a clear error)")

    shared = source_tokens == target_tokens and np.array_equal(source_embedding, target_embedding)
    generator_weight = generator.get("weight")
    if generator_weight is None:
        raise ConversionError("the checkpoint has no generator weight")
    generator_weight = np.asarray(generator_weight, np.float32)
    if generator_weight.shape != (len(target_tokens), d):
        raise ConversionError(f"generator weight of shape {list(generator_weight.shape)} for {len(target_tokens)} "
                              "target tokens")
    tied = np.array_equal(generator_weight, target_embedding)
    epsilon = option("norm_eps") or 1e-6
    cfg = _libmt.ModelConfig(
        encoder_layers=encoder_layers, decoder_layers=decoder_layers, d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=len(source_tokens), target_vocab_size=len(target_tokens), max_positions=max_positions,
        activation=activation, pre_norm=True, layer_norm_epsilon=float(epsilon), shared_embeddings=shared,
        tied_output=tied and shared, pad_id=specials["pad"], bos_id=specials["bos"], eos_id=specials["eos"],
        unk_id=specials["unk"], embedding_scale=math.sqrt(d), decoder_start_id=specials["bos"], source_eos=False,
        stored_positions=True, suppressed_ids=[])
    writer = conversion.writer(cfg)

    source_spm_path = _find_spm(path, source_spm, SPM_NAMES)
    target_spm_path = _find_spm(path, target_spm, ("target.spm",) + SPM_NAMES) if not target_spm else \
        pathlib.Path(target_spm)
    if source_spm_path is None or target_spm_path is None:
        raise ConversionError(f"{path.parent}: no SentencePiece model beside the checkpoint (sentencepiece.model, "
                              "source.spm/target.spm): give the one it was trained with by --source-spm "
                              "(and --target-spm); OpenNMT-py keeps it outside the checkpoint")
    source_spm_bytes, target_spm_bytes = source_spm_path.read_bytes(), target_spm_path.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(source_spm_bytes)
    index = {t: i for i, t in enumerate(source_tokens)}
    model_ids = [index.get(text, specials["unk"]) for text, _ in spm_pieces]
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {t: i for t, i in index.items() if t not in spm_texts}
    lacking = [text for text, kind in spm_pieces if text not in index and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} SentencePiece pieces are not in the vocabulary and encode to <unk>, as "
                        f"in OpenNMT-py (e.g. {', '.join(lacking[:3])})")
    writer.set_vocabulary(source_spm_bytes, model_ids=model_ids, unknown_ids=unknown_ids)
    writer.set_target_vocabulary(target_spm_bytes, target_tokens, control=["<s>", "</s>", "<blank>", start_token])

    writer.add_tensor("target_embedding", target_embedding)
    if not shared:
        writer.add_tensor("source_embedding", source_embedding)
    if not (tied and shared):
        writer.add_tensor("output/weight", generator_weight)
    bias = generator.get("bias")
    writer.add_tensor("output/bias", np.zeros(len(target_tokens), np.float32) if bias is None
                      else np.asarray(bias, np.float32).reshape(-1))
    writer.add_tensor("position_encoding", np.ascontiguousarray(positions[:max_positions]))
    _add_layers(writer, tensor, cfg)

    conversion.metadata.update({
        "source_language": source_lang or "", "target_language": target_lang or "",
        "converted_from": f"OpenNMT-py checkpoint ({path.name})",
        # onmt_translate's default length_penalty "avg" divides a hypothesis' log-probability by
        # its length counting <s>: libmt's beam search then ranks as OpenNMT-py's.
        "decoding.length_offset": "1",
    })
    conversion.note(f"architecture: {encoder_layers}+{decoder_layers} layers, d_model {d}, {heads} heads, d_ff {ffn}, "
                    f"{activation}, pre-norm, LayerNorm eps {epsilon:g}, "
                    f"{option('position_encoding_type', 'SinusoidalInterleaved')} positions")
    conversion.note(f"vocabularies: {len(spm_pieces)} SentencePiece pieces -> {len(source_tokens)} source ids, "
                    f"{len(target_tokens)} target ids{' (shared)' if shared else ''}")
    conversion.note("adapted: q/k/v rows fused, absent biases written as zeros; sources get no </s>; decoding "
                    f"starts from {start_token}; scores divide by the length counting {start_token} (OpenNMT-py's "
                    "length_penalty avg)")


def _add_layers(writer, tensor, cfg) -> None:
    d, ffn = cfg.d_model, cfg.d_ff

    def linear(ours, theirs, rows, columns):
        writer.add_tensor(ours + "/weight", tensor(theirs + ".weight", (rows, columns)))
        bias = tensor(theirs + ".bias", (rows,), required=False)
        writer.add_tensor(ours + "/bias", np.zeros(rows, np.float32) if bias is None else bias)

    def fused(ours, parts):
        writer.add_tensor(ours + "/weight", np.concatenate([tensor(p + ".weight", (d, d)) for p in parts]))
        biases = [tensor(p + ".bias", (d,), required=False) for p in parts]
        writer.add_tensor(ours + "/bias", np.concatenate([np.zeros(d, np.float32) if b is None else b
                                                          for b in biases]))

    def norm(ours, theirs):
        writer.add_tensor(ours + "/gamma", tensor(theirs + ".weight", (d,)))
        writer.add_tensor(ours + "/beta", tensor(theirs + ".bias", (d,)))

    def attention(ours, theirs):
        fused(ours + "/qkv", [theirs + ".linear_query", theirs + ".linear_keys", theirs + ".linear_values"])
        linear(ours + "/out", theirs + ".final_linear", d, d)

    def feed_forward(ours, theirs):
        linear(ours + "/ffn/linear_0", theirs + ".feed_forward.w_1", ffn, d)
        linear(ours + "/ffn/linear_1", theirs + ".feed_forward.w_2", d, ffn)
        norm(ours + "/ffn/norm", theirs + ".feed_forward.layer_norm")

    for i in range(cfg.encoder_layers):
        ours, theirs = f"encoder/layer_{i}", f"encoder.transformer.{i}"
        attention(ours + "/self_attention", theirs + ".self_attn")
        norm(ours + "/self_attention/norm", theirs + ".layer_norm")
        feed_forward(ours, theirs)
    for i in range(cfg.decoder_layers):
        ours, theirs = f"decoder/layer_{i}", f"decoder.transformer_layers.{i}"
        attention(ours + "/self_attention", theirs + ".self_attn")
        norm(ours + "/self_attention/norm", theirs + ".layer_norm_1")
        context = theirs + ".context_attn"
        linear(ours + "/cross_attention/q", context + ".linear_query", d, d)
        writer.add_tensor(ours + "/cross_attention/kv/weight", np.concatenate(
            [tensor(context + ".linear_keys.weight", (d, d)), tensor(context + ".linear_values.weight", (d, d))]))
        biases = [tensor(context + p, (d,), required=False) for p in (".linear_keys.bias", ".linear_values.bias")]
        writer.add_tensor(ours + "/cross_attention/kv/bias", np.concatenate(
            [np.zeros(d, np.float32) if b is None else b for b in biases]))
        linear(ours + "/cross_attention/out", context + ".final_linear", d, d)
        norm(ours + "/cross_attention/norm", theirs + ".layer_norm_2")
        feed_forward(ours, theirs)
    norm("encoder/norm", "encoder.layer_norm")
    norm("decoder/norm", "decoder.layer_norm")
