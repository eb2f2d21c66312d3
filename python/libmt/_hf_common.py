"""What the Hugging Face converters share: reading a model directory's files, and the BART-style
layer names (q/k/v/out projections, fc1/fc2, their LayerNorms) that Marian, M2M-100 and NLLB use."""

import json
import pathlib
from typing import Dict, List

import numpy as np

from . import _checkpoints
from ._conversion import Conversion, ConversionError


def read_json(path: pathlib.Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversionError(f"{path.parent}: no {path.name} (a Hugging Face model directory has config.json, "
                              "model.safetensors or pytorch_model.bin, and its tokenizer's files)") from None
    except ValueError as e:
        raise ConversionError(f"{path}: not valid JSON ({e})") from None


def weights(directory: pathlib.Path, conversion: Conversion) -> Dict[str, np.ndarray]:
    safetensors = directory / "model.safetensors"
    if safetensors.exists():
        conversion.note(f"weights: {safetensors.name}")
        return _checkpoints.read_safetensors(safetensors)
    binary = directory / "pytorch_model.bin"
    if binary.exists():
        conversion.note(f"weights: {binary.name} (read without torch)")
        return _checkpoints.read_torch_zip(binary)
    if (directory / "model.safetensors.index.json").exists() or (directory / "pytorch_model.bin.index.json").exists():
        raise ConversionError(f"{directory}: sharded checkpoints are not read yet; merge the shards first")
    raise ConversionError(f"{directory}: no model.safetensors or pytorch_model.bin")


def tensor_reader(table: Dict[str, np.ndarray]):
    """tensor(name, shape=None): the checkpoint's tensor, or a ConversionError naming what is missing
    or of the wrong shape."""

    def tensor(name, shape=None):
        value = table.get(name)
        if value is None:
            raise ConversionError(f"the checkpoint has no tensor '{name}'")
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ConversionError(f"tensor '{name}' has shape {list(value.shape)}, expected {list(shape)}")
        return value

    return tensor


def vocab_ids(vocab: dict, path: pathlib.Path) -> List[str]:
    """vocab.json inverted: the piece of every id, which must run 0..V-1 without gaps."""
    pieces = [None] * len(vocab)
    for piece, index in vocab.items():
        if not isinstance(index, int) or not 0 <= index < len(vocab) or pieces[index] is not None:
            raise ConversionError(f"{path}: ids must be distinct integers 0..{len(vocab) - 1}; '{piece}' has {index!r}")
        pieces[index] = piece
    return pieces


def add_layers(writer, tensor, cfg, prefix: str = "model.") -> None:
    """Every encoder and decoder layer (and, pre-norm, each stack's final LayerNorm), q/k/v fused.
    fairseq's own checkpoints name them the same way without the "model." prefix."""

    def linear(scope, hf):
        writer.add_tensor(scope + "/weight", tensor(hf + ".weight"))
        writer.add_tensor(scope + "/bias", tensor(hf + ".bias"))

    def fused(scope, parts):
        writer.add_tensor(scope + "/weight", np.concatenate([tensor(p + ".weight") for p in parts], axis=0))
        writer.add_tensor(scope + "/bias", np.concatenate([tensor(p + ".bias") for p in parts], axis=0))

    def norm(scope, hf):
        writer.add_tensor(scope + "/gamma", tensor(hf + ".weight"))
        writer.add_tensor(scope + "/beta", tensor(hf + ".bias"))

    for side, count in (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers)):
        for i in range(count):
            ours, hf = f"{side}/layer_{i}", f"{prefix}{side}.layers.{i}"
            fused(ours + "/self_attention/qkv", [hf + ".self_attn.q_proj", hf + ".self_attn.k_proj",
                                                 hf + ".self_attn.v_proj"])
            linear(ours + "/self_attention/out", hf + ".self_attn.out_proj")
            norm(ours + "/self_attention/norm", hf + ".self_attn_layer_norm")
            if side == "decoder":
                linear(ours + "/cross_attention/q", hf + ".encoder_attn.q_proj")
                fused(ours + "/cross_attention/kv", [hf + ".encoder_attn.k_proj", hf + ".encoder_attn.v_proj"])
                linear(ours + "/cross_attention/out", hf + ".encoder_attn.out_proj")
                norm(ours + "/cross_attention/norm", hf + ".encoder_attn_layer_norm")
            linear(ours + "/ffn/linear_0", hf + ".fc1")
            linear(ours + "/ffn/linear_1", hf + ".fc2")
            norm(ours + "/ffn/norm", hf + ".final_layer_norm")
    if cfg.pre_norm:
        norm("encoder/norm", prefix + "encoder.layer_norm")
        norm("decoder/norm", prefix + "decoder.layer_norm")
