"""CTranslate2 model directories (model.bin, config.json, vocabularies) and Argos Translate
packages (.argosmodel: a zip of model/, sentencepiece.model, metadata.json) -> libmt.

model.bin (CTranslate2's binary version 5 or 6): uint32 version, the spec's name, uint32 revision,
then each variable as name, rank, dims, dtype, byte count and bytes, then aliases (name -> the
variable it repeats). CTranslate2's TransformerSpec names are nearly libmt's own; int8/int16 weights
are dequantized with their weight_scale (CTranslate2 stores q = w * scale), fp16/bf16 widened.
What libmt cannot run (relative or rotary positions, ALiBi, multi-query attention, gated or RMS
layers, embedding LayerNorm, factored sources, tanh or sigmoid GELU) is refused by name.

Tokens are SentencePiece pieces: the package's sentencepiece.model, or source.spm/target.spm
beside the model (or given). A piece the vocabulary lacks becomes <unk>, as when a CTranslate2
user passes it. CTranslate2 does not record whether the caller appends </s> to the source (its
Transformers converter leaves that to the tokenizer): config.json's add_source_eos is the default,
source_eos= overrides it.
"""

import json
import math
import pathlib
import re
import shutil
import struct
import tempfile
import zipfile
from typing import Dict, List, Optional

import numpy as np

from ._conversion import Conversion, ConversionError
from ._marian_hf import language_codes as marian_language_codes

DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}  # 5: bfloat16
ACTIVATIONS = {0: "relu", 2: "swish", 3: "gelu"}
UNSUPPORTED_ACTIVATIONS = {1: "tanh-approximated GELU", 4: "sigmoid-approximated GELU", 5: "tanh", 6: "sigmoid"}
# M2M-100's __xx__ and NLLB's xxx_Xxxx language tokens: first in the source and in the output.
LANGUAGE_TOKEN = re.compile(r"^(__[a-z]{2,3}(_[A-Za-z]+)?__|[a-z]{3}_[A-Z][a-z]{3})$")
SPM_NAMES = ("sentencepiece.model", "spm.model", "sentencepiece.bpe.model")


def read_model_bin(path: pathlib.Path):
    """(spec name, revision, {name: array}) with aliases resolved; raises ConversionError when the
    file is not a model.bin CTranslate2 2.x-4.x writes, or is cut short."""
    data = path.read_bytes()
    offset = 0

    def take(fmt: str):
        nonlocal offset
        size = struct.calcsize("<" + fmt)
        if offset + size > len(data):
            raise ConversionError(f"{path}: cut short at byte {offset} (of {len(data)})")
        value = struct.unpack_from("<" + fmt, data, offset)[0]
        offset += size
        return value

    def string() -> str:
        nonlocal offset
        length = take("H")
        if length == 0 or offset + length > len(data) or data[offset + length - 1] != 0:
            raise ConversionError(f"{path}: a damaged name at byte {offset}")
        text = data[offset:offset + length - 1].decode("utf-8", "replace")
        offset += length
        return text

    version = take("I")
    if version not in (5, 6):
        raise ConversionError(f"{path}: CTranslate2 binary version {version}; libmt reads versions 5 and 6 "
                              "(CTranslate2 2.x to 4.x): convert the model again with a recent ctranslate2")
    name, revision = string(), take("I")
    variables: Dict[str, np.ndarray] = {}
    for _ in range(take("I")):
        variable = string()
        dims = [take("I") for _ in range(take("B"))]
        dtype_id, size = take("B"), take("I")
        if offset + size > len(data):
            raise ConversionError(f"{path}: variable '{variable}' runs past the end of the file")
        raw = data[offset:offset + size]
        offset += size
        if dtype_id == 5:  # bfloat16: the high half of a float32
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif dtype_id in DTYPES:
            values = np.frombuffer(raw, dtype=np.dtype(DTYPES[dtype_id]).newbyteorder("<"))
        else:
            raise ConversionError(f"{path}: variable '{variable}' has unknown dtype {dtype_id}")
        if values.size != int(np.prod(dims, dtype=np.int64)):
            raise ConversionError(f"{path}: variable '{variable}' holds {values.size} values for shape {dims}")
        variables[variable] = values.reshape(dims)
    for _ in range(take("I")):
        alias, target = string(), string()
        if target not in variables:
            raise ConversionError(f"{path}: alias '{alias}' names '{target}', which the file does not hold")
        variables[alias] = variables[target]
        if target + "_scale" in variables:  # a quantized weight's alias shares its scales
            variables.setdefault(alias + "_scale", variables[target + "_scale"])
    return name, revision, variables


def read_vocabulary(directory: pathlib.Path, side: str) -> Optional[List[str]]:
    for name in (f"{side}_vocabulary.json", f"{side}_vocabulary.txt"):
        path = directory / name
        if not path.exists():
            continue
        if path.suffix == ".json":
            try:
                tokens = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                raise ConversionError(f"{path}: not valid JSON ({e})") from None
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise ConversionError(f"{path}: not a list of tokens")
            return tokens
        return path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    return None


class _Source:
    """Where the model directory and SentencePiece models are (an Argos package is unpacked)."""

    def __init__(self, path: pathlib.Path, source_spm=None, target_spm=None):
        self._temporary = None
        if path.is_file() and zipfile.is_zipfile(path):
            self._temporary = tempfile.mkdtemp(prefix="libmt-argos-")
            path = self._unpack(path, pathlib.Path(self._temporary))
        if not path.exists():
            raise ConversionError(f"{path}: no such file or directory")
        if (path / "model" / "model.bin").exists():  # an Argos package (unpacked)
            self.package, self.model = path, path / "model"
        elif (path / "model.bin").exists():
            self.package, self.model = path.parent, path
        else:
            raise ConversionError(f"{path}: no model.bin (a CTranslate2 model directory, an Argos Translate package "
                                  "directory with model/, or an .argosmodel file)")
        self.source_spm = pathlib.Path(source_spm) if source_spm else self._find(["source.spm"])
        self.target_spm = pathlib.Path(target_spm) if target_spm else self._find(["target.spm"])
        if self.source_spm is None or self.target_spm is None:
            shared = self._find(list(SPM_NAMES))
            self.source_spm = self.source_spm or shared
            self.target_spm = self.target_spm or shared
        if self.source_spm is None:
            found = [p.name for p in (self.model, self.package) for p in p.iterdir() if p.suffix in (".model", ".bpe")]
            hint = f" (found {', '.join(found)}: libmt tokenizes with SentencePiece only)" if found else ""
            raise ConversionError(f"{path}: no SentencePiece model beside the model ({' or '.join(SPM_NAMES)}, or "
                                  f"source.spm and target.spm){hint}; give it with --source-spm/--target-spm")

    def _find(self, names):
        for directory in (self.model, self.package):
            for name in names:
                if (directory / name).exists():
                    return directory / name
        return None

    @staticmethod
    def _unpack(archive: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
        with zipfile.ZipFile(archive) as z:
            roots = set()
            for member in z.namelist():
                parts = pathlib.PurePosixPath(member).parts
                if member.startswith("/") or ".." in parts:
                    raise ConversionError(f"{archive}: member '{member}' points outside the package")
                if parts:
                    roots.add(parts[0])
            z.extractall(into)
        if len(roots) == 1 and (into / next(iter(roots))).is_dir():
            return into / next(iter(roots))
        return into

    def close(self):
        if self._temporary:
            shutil.rmtree(self._temporary, ignore_errors=True)


def ct2_sinusoid(positions: int, dim: int) -> np.ndarray:
    """CTranslate2's computed encodings (SinusoidalPositionEncoder): sin then cos halves, timescale
    10000^(k/(dim/2-1)), the first position numbered 1 (OpenNMT-tf's convention; measured against
    CTranslate2 4.8 by the ct2-computed-positions fixture: from 0, log-probs are off by 0.18)."""
    half = dim // 2
    increment = np.float32(math.log(10000.0) / (half - 1))
    inv = np.exp(np.arange(half, dtype=np.float32) * -increment).astype(np.float32)
    scaled = np.arange(1, positions + 1, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1).astype(np.float32)


def convert(path, conversion: Conversion, source_lang=None, target_lang=None, source_spm=None, target_spm=None,
            source_eos=None) -> None:
    source = _Source(pathlib.Path(path), source_spm, target_spm)
    try:
        _convert(source, conversion, source_lang, target_lang, source_eos)
    finally:
        source.close()


def _convert(source: _Source, conversion: Conversion, source_lang, target_lang, source_eos) -> None:
    from . import _libmt

    directory = source.model
    config = {}
    if (directory / "config.json").exists():
        try:
            config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        except ValueError as e:
            raise ConversionError(f"{directory}/config.json: not valid JSON ({e})") from None
    spec, revision, v = read_model_bin(directory / "model.bin")
    if spec != "TransformerSpec":
        raise ConversionError(f"{directory}/model.bin holds a {spec}; libmt converts CTranslate2's encoder-decoder "
                              "TransformerSpec (translation models)")
    conversion.note(f"CTranslate2 TransformerSpec revision {revision}")

    def scalar(name, default=None):
        value = v.get(name)
        return default if value is None else value.reshape(-1)[0].item()

    def need(name):
        if name not in v:
            raise ConversionError(f"{directory}/model.bin has no variable '{name}'")
        return v[name]

    # What libmt cannot run, by name.
    refusals = {
        "relative_position_keys": "relative position representations (max_relative_positions > 0)",
        "relative_attention_bias": "T5-style relative attention bias", "rotary": "rotary position embeddings",
        "layernorm_embedding": "a LayerNorm on the embeddings", "linear_0_noact": "gated feed-forward units (GLU)",
        "embeddings_1": "more than one source embedding (source factors)", "scale_outputs": "scaled decoder outputs",
        "multiply_by_sqrt_depth": "embeddings multiplied inside the embedding layer",
        "project_in": "projected decoder embeddings"}
    for name in v:
        for key, what in refusals.items():
            if key in name.split("/")[-1] or f"/{key}/" in name or name.endswith("/" + key):
                raise ConversionError(f"the model uses {what} ('{name}'); libmt cannot run it")
    for side in ("encoder", "decoder"):
        if scalar(f"{side}/alibi", 0):
            raise ConversionError("the model uses ALiBi positions; libmt cannot run them")
        if scalar(f"{side}/multi_query_attention", 0) or f"{side}/num_heads_kv" in v:
            raise ConversionError("the model uses multi-query / grouped key-value attention; libmt cannot run it")
    if config.get("add_source_bos"):
        raise ConversionError("config.json's add_source_bos: a <s> before each source; libmt does not add one")

    heads = int(scalar("encoder/num_heads", 0))
    if heads == 0 or heads != int(scalar("decoder/num_heads", 0)):
        raise ConversionError("encoder and decoder head counts differ (or are missing); libmt's layers share one")
    pre_norm = bool(scalar("encoder/pre_norm", 1))
    if pre_norm != bool(scalar("decoder/pre_norm", 1)):
        raise ConversionError("the encoder and decoder differ in pre/post-norm; libmt's layers share one")
    activation_id = int(scalar("encoder/activation", 0))
    if activation_id != int(scalar("decoder/activation", 0)):
        raise ConversionError("the encoder and decoder activations differ; libmt's layers share one")
    if activation_id not in ACTIVATIONS:
        raise ConversionError(f"activation {UNSUPPORTED_ACTIVATIONS.get(activation_id, activation_id)}: libmt has "
                              "relu, gelu (erf) and swish")
    activation = ACTIVATIONS[activation_id]
    if pre_norm and ("encoder/layer_norm/gamma" not in v or "decoder/layer_norm/gamma" not in v):
        raise ConversionError("a pre-norm model without final LayerNorms; libmt's pre-norm stacks end with one")
    for name in v:
        if name.endswith("layer_norm/gamma") and name[:-5] + "beta" not in v:
            raise ConversionError(f"'{name[:-6]}' is an RMS norm (no beta); libmt's LayerNorms are standard")

    source_embedding = _embedding(v, "encoder/embeddings_0") if "encoder/embeddings_0/weight" in v else \
        _embedding(v, "encoder/embeddings")
    target_embedding = _embedding(v, "decoder/embeddings")
    d = target_embedding.shape[1]
    encoder_layers = _count_layers(v, "encoder")
    decoder_layers = _count_layers(v, "decoder")
    ffn = need("encoder/layer_0/ffn/linear_0/weight").shape[0]
    def embedding_scale(side):
        value = v.get(f"{side}/scale_embeddings")
        if value is None or value.dtype == np.int8:  # absent or a flag: sqrt(d_model) when set
            return math.sqrt(d) if value is None or value.reshape(-1)[0] else 1.0
        return float(value.reshape(-1)[0])

    scale = embedding_scale("encoder")
    if scale != embedding_scale("decoder"):
        raise ConversionError("the encoder and decoder scale their embeddings differently; libmt has one scale")

    source_tokens = read_vocabulary(directory, "shared") or read_vocabulary(directory, "source")
    target_tokens = read_vocabulary(directory, "shared") or read_vocabulary(directory, "target")
    if source_tokens is None or target_tokens is None:
        raise ConversionError(f"{directory}: no shared_vocabulary.json (or source_/target_vocabulary.json, .txt)")
    if read_vocabulary(directory, "source_1") is not None:
        raise ConversionError("several source vocabularies (source factors); libmt cannot run them")
    if len(source_tokens) != source_embedding.shape[0] or len(target_tokens) != target_embedding.shape[0]:
        raise ConversionError(f"vocabularies of {len(source_tokens)} and {len(target_tokens)} tokens, embeddings of "
                              f"{source_embedding.shape[0]} and {target_embedding.shape[0]} rows")

    def token_id(tokens, name, key, default):
        token = config.get(key, default)
        if token is None:
            return None
        if token not in tokens:
            raise ConversionError(f"the {name} token {token!r} (config.json '{key}') is not in the vocabulary")
        return tokens.index(token)

    unk = token_id(target_tokens, "unknown", "unk_token", "<unk>")
    eos = token_id(target_tokens, "end", "eos_token", "</s>")
    if unk is None or eos is None or token_id(source_tokens, "unknown", "unk_token", "<unk>") != unk:
        raise ConversionError("<unk> must have one id in both vocabularies")
    start_from_zero = bool(scalar("decoder/start_from_zero_embedding", 0))
    target_tokens = list(target_tokens)
    source_tokens = list(source_tokens)
    shared = source_tokens == target_tokens and np.array_equal(source_embedding, target_embedding)
    start_token = None
    if start_from_zero:
        # Decoding starts from a zero vector: a zero row appended to both tables, never emitted.
        start_token = "<start>"
        while start_token in target_tokens or start_token in source_tokens:
            start_token += "_"
        target_tokens.append(start_token)
        target_embedding = np.concatenate([target_embedding, np.zeros((1, d), np.float32)])
        source_tokens.append(start_token)
        source_embedding = target_embedding if shared else \
            np.concatenate([source_embedding, np.zeros((1, d), np.float32)])
        start = len(target_tokens) - 1
        conversion.note(f"decoding starts from a zero embedding (CTranslate2's start_from_zero_embedding): a zero "
                        f"row '{start_token}' (id {start}) added, never emitted")
    else:
        start = token_id(target_tokens, "decoder start", "decoder_start_token", "<s>")
        if start is None:
            raise ConversionError("config.json has no decoder_start_token")
    bos = target_tokens.index(config.get("bos_token") or "<s>") if (config.get("bos_token") or "<s>") in \
        target_tokens else None
    if bos is None or bos == eos:
        bos = start if start != eos else None
    if bos is None:
        raise ConversionError("no start token distinct from </s> (bos_token); libmt needs one")
    pad = next((target_tokens.index(t) for t in ("<pad>", "<blank>") if t in target_tokens), bos)
    for name, value in (("start", bos), ("pad", pad), ("end", eos), ("unknown", unk)):
        if value >= len(source_tokens):
            raise ConversionError(f"the {name} token's id {value} is beyond the source vocabulary "
                                  f"({len(source_tokens)}); libmt gives special tokens one id on both sides")

    # Positions: one table for both stacks (libmt has one), or CTranslate2's computed sinusoid.
    encoder_positions = v.get("encoder/position_encodings/encodings")
    decoder_positions = v.get("decoder/position_encodings/encodings")
    if (encoder_positions is None) != (decoder_positions is None) or (
            encoder_positions is not None and not np.array_equal(encoder_positions, decoder_positions)):
        raise ConversionError("the encoder and decoder have different position encodings; libmt has one table")
    if encoder_positions is None:
        max_positions = 1024
        positions = ct2_sinusoid(max_positions, d)
        conversion.note(f"positions: CTranslate2's computed sinusoid, stored for {max_positions} positions")
    else:
        positions = np.ascontiguousarray(encoder_positions, dtype=np.float32)
        max_positions = min(positions.shape[0], 65536)
        positions = positions[:max_positions]
    if d % heads:
        raise ConversionError(f"{heads} heads do not divide d_model {d}")

    tied = "decoder/projection/weight" not in v or np.shares_memory(v["decoder/projection/weight"],
                                                                      v["decoder/embeddings/weight"])
    if source_eos is None:
        source_eos = bool(config.get("add_source_eos", False))
        if not source_eos:
            conversion.note("sources get no </s> (config.json's add_source_eos); models converted from Transformers "
                            "(OPUS-MT, M2M-100) expect one: convert with --source-eos")
    epsilon = config.get("layer_norm_epsilon") or 1e-6
    suppressed = [start] if start_from_zero else []
    cfg = _libmt.ModelConfig(
        encoder_layers=encoder_layers, decoder_layers=decoder_layers, d_model=d, heads=heads, d_ff=ffn,
        source_vocab_size=len(source_tokens), target_vocab_size=len(target_tokens), max_positions=max_positions,
        activation=activation, pre_norm=pre_norm, layer_norm_epsilon=float(epsilon), shared_embeddings=shared,
        tied_output=tied and shared, pad_id=pad, bos_id=bos, eos_id=eos, unk_id=unk, embedding_scale=scale,
        decoder_start_id=start, source_eos=source_eos, stored_positions=True, suppressed_ids=suppressed)
    writer = conversion.writer(cfg)

    # Vocabularies: SentencePiece segments, the token lists give model ids.
    source_spm = source.source_spm.read_bytes()
    target_spm = source.target_spm.read_bytes()
    spm_pieces = _libmt._sentencepiece_pieces(source_spm)
    index = {t: i for i, t in enumerate(source_tokens)}
    model_ids = [index.get(text, unk) for text, _ in spm_pieces]
    spm_texts = {text for text, _ in spm_pieces}
    unknown_ids = {t: i for t, i in index.items() if t not in spm_texts and t != start_token}
    lacking = [text for text, kind in spm_pieces if text not in index and kind not in ("unknown", "control")]
    if lacking:
        conversion.note(f"{len(lacking)} SentencePiece pieces are not in the vocabulary and encode to <unk> "
                        f"(e.g. {', '.join(lacking[:3])})")
    codes = marian_language_codes(source_tokens)
    writer.set_vocabulary(source_spm, model_ids=model_ids, unknown_ids=unknown_ids, language_codes=bool(codes))
    control = [target_tokens[i] for i in {eos, bos, start, pad}] + [t for t in ("<s>", "</s>", "<pad>", "<blank>")
                                                                     if t in target_tokens]
    prefixed = [t for t in target_tokens if LANGUAGE_TOKEN.match(t)]
    writer.set_target_vocabulary(target_spm, target_tokens, control=sorted(set(control + prefixed)))
    if codes:
        conversion.metadata["language_tokens"] = " ".join(f"{t}={index[t]}" for t in codes)
        conversion.metadata["language_placement"] = "source_text"
        conversion.note(f"{len(codes)} target-language tokens ({', '.join(codes[:4])}): target_language= "
                        "(mt_translate --target-language) starts the source with one")
    elif prefixed:
        conversion.metadata["language_tokens"] = " ".join(f"{t}={target_tokens.index(t)}" for t in prefixed)
        conversion.metadata["language_placement"] = "prefix"
        conversion.note(f"{len(prefixed)} language tokens ({', '.join(prefixed[:4])}): source_language= and "
                        "target_language= put them first in the source and the output, as M2M-100 expects")

    writer.add_tensor("target_embedding", target_embedding)
    if not shared:
        writer.add_tensor("source_embedding", source_embedding)
    V = len(target_tokens)
    if not (tied and shared):
        projection = target_embedding
        if not tied:
            projection = _dense(v, "decoder/projection/weight")
            if start_from_zero:
                projection = np.concatenate([projection, np.zeros((1, d), np.float32)])
        writer.add_tensor("output/weight", projection)
    bias = v.get("decoder/projection/bias")
    bias = np.zeros(V, np.float32) if bias is None else np.asarray(bias, np.float32).reshape(-1)
    if start_from_zero:  # the added row takes no share of the softmax: CTranslate2 has no such id
        bias = np.concatenate([bias, np.full(1, -1e4, np.float32)])
    writer.add_tensor("output/bias", bias)
    writer.add_tensor("position_encoding", positions)
    _add_layers(writer, v, cfg)
    _add_vmap(writer, conversion, directory / "vmap.txt", source_tokens, target_tokens)

    metadata = {}
    metadata_path = source.package / "metadata.json"
    if metadata_path.exists():
        try:
            metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
        except ValueError:
            conversion.warn(f"{metadata_path}: not valid JSON; ignored")
    conversion.metadata.update({
        "source_language": source_lang or metadata.get("from_code", ""),
        "target_language": target_lang or metadata.get("to_code", ""),
        "converted_from": "Argos Translate package" if metadata else "CTranslate2 model directory",
    })
    conversion.note(f"architecture: {encoder_layers}+{decoder_layers} layers, d_model {d}, {heads} heads, d_ff {ffn}, "
                    f"{activation}, {'pre' if pre_norm else 'post'}-norm, LayerNorm eps {epsilon:g}")
    conversion.note(f"vocabularies: {len(spm_pieces)} SentencePiece pieces -> {len(source_tokens)} source ids, "
                    f"{V} target ids{' (shared)' if shared else ''}")


def _add_vmap(writer, conversion, path: pathlib.Path, source_tokens, target_tokens) -> None:
    """CTranslate2's vocabulary map (vmap.txt: "source n-gram<TAB>target tokens", an empty
    n-gram for tokens always allowed) as libmt's shortlist: an n-gram's targets go to the row of
    each of its tokens (libmt's rows are per token: a superset of what the n-gram allows), the
    empty n-gram's to the frequent ids. libmt applies it per sentence, CTranslate2 per batch."""
    if not path.exists():
        return
    source_index = {t: i for i, t in enumerate(source_tokens)}
    target_index = {t: i for i, t in enumerate(target_tokens)}
    rows = [set() for _ in source_tokens]
    frequent = set()
    unknown = set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if "\t" not in line:
                raise ConversionError(f"{path} line {number}: no tab between the source n-gram and its targets")
            key, values = line.split("\t", 1)
            targets = set()
            for token in values.split():
                if token in target_index:
                    targets.add(target_index[token])
                else:
                    unknown.add(token)
            if not key.strip():
                frequent |= targets
                continue
            for token in key.split():
                if token in source_index:
                    rows[source_index[token]] |= targets
                else:
                    unknown.add(token)
    writer.set_shortlist([sorted(r) for r in rows], sorted(frequent), method="CTranslate2 vmap.txt")
    conversion.note(f"vmap.txt: a vocabulary shortlist of {sum(len(r) for r in rows)} target ids over "
                    f"{sum(1 for r in rows if r)} source ids and {len(frequent)} always allowed (per sentence; "
                    "--no-shortlist to translate over the whole vocabulary)")
    if unknown:
        conversion.warn(f"vmap.txt: {len(unknown)} tokens not in the vocabularies left out "
                        f"(e.g. {', '.join(sorted(unknown)[:3])})")


def _dense(v, name) -> np.ndarray:
    """A weight in float32: int8 and int16 weights divided by their weight_scale."""
    value = v.get(name)
    if value is None:
        raise ConversionError(f"the model has no variable '{name}'")
    if value.dtype in (np.int8, np.int16):
        scale = v.get(name + "_scale")
        if scale is None:
            raise ConversionError(f"the quantized variable '{name}' has no {name.split('/')[-1]}_scale")
        scale = np.asarray(scale, np.float32).reshape(-1)
        if value.dtype == np.int8 and scale.size != value.shape[0]:
            raise ConversionError(f"'{name}_scale' has {scale.size} values for {value.shape[0]} rows")
        if value.ndim == 2 and scale.size == value.shape[0]:
            return value.astype(np.float32) / scale[:, None]
        return value.astype(np.float32) / scale[0]
    return np.asarray(value, np.float32)


def _embedding(v, scope) -> np.ndarray:
    return _dense(v, scope + "/weight")


def _count_layers(v, side) -> int:
    count = 0
    while f"{side}/layer_{count}/ffn/linear_0/weight" in v:
        count += 1
    if count == 0:
        raise ConversionError(f"the model has no {side} layers")
    return count


def _add_layers(writer, v, cfg) -> None:
    def linear(ours, theirs, rows):
        weight = _dense(v, theirs + "/weight")
        if weight.shape[0] != rows:
            raise ConversionError(f"'{theirs}/weight' has {weight.shape[0]} rows, expected {rows}")
        writer.add_tensor(ours + "/weight", weight)
        bias = v.get(theirs + "/bias")
        writer.add_tensor(ours + "/bias", np.zeros(rows, np.float32) if bias is None
                          else np.asarray(bias, np.float32).reshape(-1))

    def norm(ours, theirs):
        writer.add_tensor(ours + "/gamma", np.asarray(v[theirs + "/gamma"], np.float32))
        writer.add_tensor(ours + "/beta", np.asarray(v[theirs + "/beta"], np.float32))

    d, ffn = cfg.d_model, cfg.d_ff
    for side, count in (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers)):
        for i in range(count):
            ours = theirs = f"{side}/layer_{i}"
            linear(ours + "/self_attention/qkv", theirs + "/self_attention/linear_0", 3 * d)
            linear(ours + "/self_attention/out", theirs + "/self_attention/linear_1", d)
            norm(ours + "/self_attention/norm", theirs + "/self_attention/layer_norm")
            if side == "decoder":
                linear(ours + "/cross_attention/q", theirs + "/attention/linear_0", d)
                linear(ours + "/cross_attention/kv", theirs + "/attention/linear_1", 2 * d)
                linear(ours + "/cross_attention/out", theirs + "/attention/linear_2", d)
                norm(ours + "/cross_attention/norm", theirs + "/attention/layer_norm")
            linear(ours + "/ffn/linear_0", theirs + "/ffn/linear_0", ffn)
            linear(ours + "/ffn/linear_1", theirs + "/ffn/linear_1", d)
            norm(ours + "/ffn/norm", theirs + "/ffn/layer_norm")
    if cfg.pre_norm:
        norm("encoder/norm", "encoder/layer_norm")
        norm("decoder/norm", "decoder/layer_norm")
