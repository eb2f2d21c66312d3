"""Native Marian models (an OPUS-MT release unzipped: model.npz, decoder.yml, *.vocab.yml,
source.spm, target.spm) -> libmt, computing as marian-decoder does.

What Marian's C++ computes (marian-dev src/models/transformer.h, src/layers/generic.h,
src/tensors/cpu/tensor_operators.cpp), mapped onto libmt: post-norm layers (postprocess "dan"),
weights stored [in, out] (transposed here) with [1, n] biases, LayerNorm eps 1e-6, token embeddings
times sqrt(d_model) plus Marian's sinusoid (sin and cos halves, timescale 10000^(k/(d/2-1)), from
position 0; or the learned Wpos table, unscaled), decoding from a zero vector (a zero row added,
never emitted, no share of the softmax), <unk> never emitted (marian-decoder's --allow-unk is off),
</s> after every source. This differs from transformers' port of the same models (its positions use
10000^(2(j//2)/d)): convert the Hugging Face copy with --from transformers to follow transformers.
Refused by name: pre-norm and embedding-LayerNorm variants, the sigmoid GELU, average-attention or
RNN decoders, tied layers, right-to-left models, factored vocabularies.
"""

import json
import math
import pathlib
import re
import zipfile

import numpy as np

from ._conversion import Conversion, ConversionError
from ._marian_hf import language_codes


def parse_yaml(text: str, what: str) -> dict:
    """The flat YAML Marian writes: `key: value` lines, values scalars, [a, b] or `- item` lists."""
    result, last = {}, None
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s*(.*)$", line)
        if item and last is not None:
            if not isinstance(result[last], list):
                result[last] = []
            result[last].append(_scalar(item.group(1)))
            continue
        match = re.match(r"^([A-Za-z0-9_.:-]+):\s*(.*)$", line)
        if not match:
            raise ConversionError(f"{what}: line {number} is not 'key: value' ({line[:60]!r})")
        last, value = match.group(1), match.group(2).strip()
        if value.startswith("[") and value.endswith("]"):
            result[last] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            result[last] = _scalar(value) if value else []
    return result


def _scalar(text: str):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return _unquote(text)
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _unquote(text: str) -> str:
    if text[0] == "'":
        return text[1:-1].replace("''", "'")
    body = re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: "\\u00" + m.group(1), text[1:-1])
    try:
        return json.loads('"' + body + '"')
    except ValueError:
        raise ConversionError(f"cannot read the quoted YAML string {text[:40]!r}") from None


def read_vocab_yml(path: pathlib.Path) -> list:
    """A Marian .vocab.yml (`piece: id` lines, pieces quoted when YAML needs it) as a list by id."""
    entries = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        key, sep, value = line.rpartition(":")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise ConversionError(f"{path}: line {number} is not 'piece: id' ({line[:60]!r})")
        key = key.strip()
        if len(key) >= 2 and key[0] == key[-1] and key[0] in "\"'":
            key = _unquote(key)
        index = int(value)
        if index in entries or index < 0:
            raise ConversionError(f"{path}: id {index} given twice or negative (line {number})")
        entries[index] = key
    if sorted(entries) != list(range(len(entries))):
        raise ConversionError(f"{path}: ids do not run 0..{len(entries) - 1} without gaps")
    return [entries[i] for i in range(len(entries))]


def _vocabulary(path: pathlib.Path) -> list:
    from . import _libmt

    if path.suffix in (".spm", ".model"):  # Marian reads a SentencePiece model as its vocabulary too
        return [text for text, _ in _libmt._sentencepiece_pieces(path.read_bytes())]
    return read_vocab_yml(path)


def marian_sinusoid(positions: int, dim: int) -> np.ndarray:
    """SinusoidalPositionEmbeddings (marian-dev tensor_operators.cpp), computed as it does in float."""
    half = dim // 2
    increment = np.float32(math.log(10000.0) / (half - 1))
    inv = np.exp((np.arange(half, dtype=np.float32) * -increment).astype(np.float32))
    scaled = np.arange(positions, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)


def _files(path: pathlib.Path):
    """(model.npz, source vocabulary, target vocabulary, decoder.yml settings, source.spm, target.spm)."""
    directory = path if path.is_dir() else path.parent
    settings = {}
    if (directory / "decoder.yml").exists():
        settings = parse_yaml((directory / "decoder.yml").read_text(encoding="utf-8"), str(directory / "decoder.yml"))
    if path.is_file():
        model = path
    elif settings.get("models"):
        models = settings["models"] if isinstance(settings["models"], list) else [settings["models"]]
        if len(models) != 1:
            raise ConversionError(f"decoder.yml names an ensemble of {len(models)} models; convert one .npz")
        model = directory / models[0]
    else:
        found = sorted(directory.glob("*.npz"))
        if len(found) != 1:
            raise ConversionError(f"{directory}: {len(found)} .npz files and no decoder.yml saying which is the model")
        model = found[0]
    vocabs = settings.get("vocabs") or sorted(p.name for p in directory.glob("*.vocab.yml"))
    if isinstance(vocabs, str) or len(vocabs) == 1:
        vocabs = [vocabs if isinstance(vocabs, str) else vocabs[0]] * 2
    if len(vocabs) != 2:
        raise ConversionError(f"{directory}: no source and target vocabularies (decoder.yml 'vocabs', *.vocab.yml)")
    spms = [directory / "source.spm", directory / "target.spm"]
    for i, name in enumerate(vocabs):
        if str(name).endswith(".spm"):
            spms[i] = directory / name
    for p in [model] + [directory / v for v in vocabs] + spms:
        if not p.exists():
            raise ConversionError(f"{p}: missing (an OPUS-MT release holds model .npz, decoder.yml, vocab.yml, "
                                  "source.spm and target.spm)")
    return model, directory / vocabs[0], directory / vocabs[1], settings, spms[0], spms[1]


def convert(path, conversion: Conversion, source_lang=None, target_lang=None) -> None:
    from . import _libmt

    path = pathlib.Path(path)
    model_path, source_vocab_path, target_vocab_path, settings, source_spm, target_spm = _files(path)
    try:
        with np.load(model_path, allow_pickle=False) as archive:
            weights = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ConversionError(f"{model_path}: not a readable .npz ({e})") from None
    if "special:model.yml" not in weights:
        raise ConversionError(f"{model_path}: no special:model.yml (not a Marian model)")
    raw = weights.pop("special:model.yml").astype(np.uint8).tobytes().split(b"\0")[0]
    options = parse_yaml(raw.decode("utf-8", "replace"), f"{model_path}[special:model.yml]")

    def option(name, default=None):
        return options.get(name, default)

    if option("type") not in ("transformer",):
        raise ConversionError(f"model type {option('type')!r}: libmt converts Marian's 'transformer' models "
                              "(s2s/RNN and multi-source types are not transformers)")
    checks = [
        (option("transformer-decoder-autoreg", "self-attention") != "self-attention",
         f"a {option('transformer-decoder-autoreg')} decoder (libmt's is self-attention)"),
        (option("transformer-preprocess", "") not in ("", "d"), "pre-norm layers (transformer-preprocess "
                                                                 f"{option('transformer-preprocess')!r})"),
        (option("transformer-postprocess", "dan") != "dan",
         f"transformer-postprocess {option('transformer-postprocess')!r} (libmt's post-norm is 'dan')"),
        ("n" in str(option("transformer-postprocess-emb", "d")) or "r" in str(option("transformer-postprocess-emb", "d")),
         "a LayerNorm on the embeddings (transformer-postprocess-emb)"),
        (str(option("transformer-postprocess-top", "")) not in ("", "d"), "a final LayerNorm (postprocess-top)"),
        (option("transformer-ffn-depth", 2) != 2 or option("transformer-decoder-ffn-depth", 0) not in (0, 2),
         "feed-forward blocks of other than two layers"),
        (bool(option("transformer-tied-layers")), "tied layers"),
        (bool(option("right-left", False)), "a right-to-left model"),
        (bool(option("factors-dim-emb")) or bool(option("lemma-dim-emb")), "factored vocabularies"),
    ]
    for bad, what in checks:
        if bad:
            raise ConversionError(f"the model uses {what}; libmt cannot run it")
    activation = {"swish": "swish", "relu": "relu"}.get(option("transformer-ffn-activation", "swish"))
    if activation is None:
        raise ConversionError(f"transformer-ffn-activation {option('transformer-ffn-activation')!r}: Marian's gelu is "
                              "the sigmoid approximation x*sigmoid(1.702x); libmt has relu, erf gelu and swish")

    source_tokens, target_tokens = _vocabulary(source_vocab_path), _vocabulary(target_vocab_path)

    def tensor(name, shape=None):
        value = weights.get(name)
        if value is None:
            raise ConversionError(f"{model_path.name} has no tensor '{name}'")
        value = np.asarray(value, np.float32)
        if shape is not None and value.size == int(np.prod(shape)) and value.shape != tuple(shape):
            value = value.reshape(shape)  # [1, n] biases and scales
        if shape is not None and value.shape != tuple(shape):
            raise ConversionError(f"tensor '{name}' has shape {list(value.shape)}, expected {list(shape)}")
        return value

    tied_all = bool(option("tied-embeddings-all", False)) or "Wemb" in weights
    if tied_all:
        source_embedding = target_embedding = tensor("Wemb")
    else:
        source_embedding, target_embedding = tensor("encoder_Wemb"), tensor("decoder_Wemb")
    d = source_embedding.shape[1]
    if source_embedding.shape[0] != len(source_tokens) or target_embedding.shape[0] != len(target_tokens):
        raise ConversionError(f"embeddings of {source_embedding.shape[0]} and {target_embedding.shape[0]} rows for "
                              f"vocabularies of {len(source_tokens)} and {len(target_tokens)}")
    heads = option("transformer-heads")
    ffn = option("transformer-dim-ffn")
    encoder_layers, decoder_layers = option("enc-depth"), option("dec-depth")
    if not all(isinstance(x, int) and x > 0 for x in (heads, ffn, encoder_layers, decoder_layers)):
        raise ConversionError("special:model.yml lacks transformer-heads, transformer-dim-ffn, enc-depth or dec-depth")
    for name, token in (("end", "</s>"), ("unknown", "<unk>")):
        if token not in target_tokens or token not in source_tokens or \
                target_tokens.index(token) != source_tokens.index(token):
            raise ConversionError(f"the {name} token {token} must have one id in both vocabularies")
    eos, unk = target_tokens.index("</s>"), target_tokens.index("<unk>")

    # Decoding starts from a zero vector: a zero row, appended to both tables, never emitted.
    start_token = "<start>"
    while start_token in target_tokens or start_token in source_tokens:
        start_token += "_"
    shared = tied_all and source_tokens == target_tokens
    target_tokens = target_tokens + [start_token]
    source_tokens = source_tokens + [start_token]
    zero = np.zeros((1, d), np.float32)
    target_embedding = np.concatenate([target_embedding, zero])
    source_embedding = target_embedding if shared else np.concatenate([source_embedding, zero])
    start = len(target_tokens) - 1

    learned = bool(option("transformer-train-position-embeddings", False))
    if learned:
        positions = tensor("Wpos")
        conversion.note(f"positions: the learned Wpos table ({positions.shape[0]} rows)")
        if positions.shape[1] != d:
            raise ConversionError(f"Wpos has {positions.shape[1]} columns for d_model {d}")
    else:
        positions = marian_sinusoid(1024, d)  # longer sentences are refused with a clear error
    tied_output = bool(option("tied-embeddings", False)) or tied_all
    cfg = _libmt.ModelConfig(
        encoder_layers=encoder_layers, decoder_layers=decoder_layers, d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=len(source_tokens), target_vocab_size=len(target_tokens), max_positions=positions.shape[0],
        activation=activation, pre_norm=False, layer_norm_epsilon=1e-6, shared_embeddings=shared,
        tied_output=tied_output and shared, pad_id=start, bos_id=start, eos_id=eos, unk_id=unk,
        embedding_scale=1.0 if learned else math.sqrt(d), decoder_start_id=start, source_eos=True,
        stored_positions=True, suppressed_ids=sorted({unk, start}))
    writer = conversion.writer(cfg)

    source_spm_bytes, target_spm_bytes = source_spm.read_bytes(), target_spm.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(source_spm_bytes)
    index = {t: i for i, t in enumerate(source_tokens[:-1])}
    model_ids = [index.get(text, unk) for text, _ in spm_pieces]
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {t: i for t, i in index.items() if t not in spm_texts}
    lacking = [text for text, kind in spm_pieces if text not in index and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} source.spm pieces are not in the vocabulary and encode to <unk>, as in "
                        f"Marian (e.g. {', '.join(lacking[:3])})")
    codes = language_codes(source_tokens)
    writer.set_vocabulary(source_spm_bytes, model_ids=model_ids, unknown_ids=unknown_ids, language_codes=bool(codes))
    writer.set_target_vocabulary(target_spm_bytes, target_tokens, control=["</s>", start_token])
    if codes:
        conversion.metadata["language_tokens"] = " ".join(f"{t}={index[t]}" for t in codes)
        conversion.metadata["language_placement"] = "source_text"
        conversion.note(f"{len(codes)} target-language tokens ({', '.join(codes[:4])}): target_language= "
                        "(mt_translate --target-language) starts the source with one")

    writer.add_tensor("target_embedding", target_embedding)
    if not shared:
        writer.add_tensor("source_embedding", source_embedding)
    V = len(target_tokens)
    if not (tied_output and shared):
        if tied_output:
            projection = target_embedding
        elif "decoder_ff_logit_out_Wt" in weights:
            projection = np.concatenate([tensor("decoder_ff_logit_out_Wt", (V - 1, d)), zero])
        else:
            projection = np.concatenate([tensor("decoder_ff_logit_out_W", (d, V - 1)).T, zero])
        writer.add_tensor("output/weight", np.ascontiguousarray(projection))
    bias = tensor("decoder_ff_logit_out_b", (V - 1,)) if "decoder_ff_logit_out_b" in weights else \
        np.zeros(V - 1, np.float32)
    writer.add_tensor("output/bias", np.concatenate([bias, np.full(1, -1e4, np.float32)]))
    writer.add_tensor("position_encoding", np.ascontiguousarray(positions))
    _add_layers(writer, tensor, cfg)

    conversion.metadata.update({
        "source_language": source_lang or "", "target_language": target_lang or "",
        "converted_from": f"Marian {model_path.name} ({option('version', 'version unknown')})",
        "generation.num_beams": str(settings.get("beam-size", 4)),
    })
    conversion.note(f"architecture: {encoder_layers}+{decoder_layers} layers, d_model {d}, {heads} heads, d_ff {ffn}, "
                    f"{activation}, post-norm, LayerNorm eps 1e-6")
    conversion.note(f"vocabularies: {len(spm_pieces)} SentencePiece pieces -> {len(source_tokens) - 1} source ids, "
                    f"{V - 1} target ids{' (shared)' if shared else ''}")
    conversion.note("adapted: Marian's sinusoid stored as a table; [in, out] weights transposed and q/k/v fused; "
                    f"decoding starts from a zero row '{start_token}' (id {start}); <unk> never emitted, as "
                    "marian-decoder without --allow-unk")


def _add_layers(writer, tensor, cfg) -> None:
    d, ffn = cfg.d_model, cfg.d_ff

    def linear(ours, w, b, rows, columns):
        writer.add_tensor(ours + "/weight", np.ascontiguousarray(tensor(w, (columns, rows)).T))
        writer.add_tensor(ours + "/bias", tensor(b, (rows,)))

    def fused(ours, prefix, parts):
        writer.add_tensor(ours + "/weight", np.ascontiguousarray(
            np.concatenate([tensor(f"{prefix}_W{p}", (d, d)).T for p in parts])))
        writer.add_tensor(ours + "/bias", np.concatenate([tensor(f"{prefix}_b{p}", (d,)) for p in parts]))

    def norm(ours, prefix):
        writer.add_tensor(ours + "/gamma", tensor(prefix + "_ln_scale", (d,)))
        writer.add_tensor(ours + "/beta", tensor(prefix + "_ln_bias", (d,)))

    for side, count in (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers)):
        for i in range(count):
            ours, m = f"{side}/layer_{i}", f"{side}_l{i + 1}"
            fused(ours + "/self_attention/qkv", m + "_self", "qkv")
            linear(ours + "/self_attention/out", m + "_self_Wo", m + "_self_bo", d, d)
            norm(ours + "/self_attention/norm", m + "_self_Wo")
            if side == "decoder":
                linear(ours + "/cross_attention/q", m + "_context_Wq", m + "_context_bq", d, d)
                fused(ours + "/cross_attention/kv", m + "_context", "kv")
                linear(ours + "/cross_attention/out", m + "_context_Wo", m + "_context_bo", d, d)
                norm(ours + "/cross_attention/norm", m + "_context_Wo")
            linear(ours + "/ffn/linear_0", m + "_ffn_W1", m + "_ffn_b1", ffn, d)
            linear(ours + "/ffn/linear_1", m + "_ffn_W2", m + "_ffn_b2", d, ffn)
            norm(ours + "/ffn/norm", m + "_ffn_ffn")
