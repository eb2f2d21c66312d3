#!/usr/bin/env python3
"""Builds a CTranslate2 model from the arrays mt_export_arrays wrote.

    convert.py ARRAYS_DIR OUT_DIR [--quantization float32|int8]

The libmt model file and the CTranslate2 model then hold the same fp32 weights
(CTranslate2 quantizes them itself for int8), the same sinusoidal position
table and the same vocabulary, so the two engines compute the same function.

libmt's tensors map one to one onto CTranslate2's TransformerSpec: a fused
self-attention qkv [3C, C] is its linear[0], the cross-attention q, kv and out
are linear[0], [1], [2]; post-norm puts each sublayer's LayerNorm after the
residual sum in both.
"""
import argparse
import json
import os
import sys

import numpy as np
import ctranslate2
from ctranslate2.specs import common_spec, transformer_spec


def tokens_for(config, arrays_dir):
    """One distinct string per token id; the special ids get CTranslate2's names."""
    path = os.path.join(arrays_dir, "vocabulary.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            tokens = json.load(f)
    else:  # a model that translates ids only
        tokens = ["t%d" % i for i in range(config["target_vocab_size"])]
    names = {config["bos_id"]: "<s>", config["eos_id"]: "</s>", config["unk_id"]: "<unk>"}
    if config["pad_id"] not in names:
        names[config["pad_id"]] = "<pad>"
    taken = set(names.values())
    out = []
    for i, t in enumerate(tokens):
        if i in names:
            out.append(names[i])
        elif t in taken:  # a piece spelled like one of the names above
            out.append("%s#%d" % (t, i))
        else:
            out.append(t)
    assert len(set(out)) == len(out), "token strings must be unique"
    return out


def build_spec(arrays_dir):
    with open(os.path.join(arrays_dir, "config.json")) as f:
        config = json.load(f)

    def array(name):
        return np.load(os.path.join(arrays_dir, name.replace("/", ".") + ".npy"))

    def linear(spec, scope):
        spec.weight = array(scope + "/weight")
        spec.bias = array(scope + "/bias")

    def norm(spec, scope):
        spec.gamma = array(scope + "/gamma")
        spec.beta = array(scope + "/beta")

    activation = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}[config["activation"]]
    spec = transformer_spec.TransformerSpec.from_config(
        (config["encoder_layers"], config["decoder_layers"]),
        config["heads"],
        pre_norm=config["pre_norm"],
        activation=activation,
    )
    positions = array("positions")
    target_embedding = array("target_embedding")
    source_embedding = target_embedding if config["shared_embeddings"] else array("source_embedding")

    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = source_embedding
    encoder.position_encodings.encodings = positions
    decoder.embeddings.weight = target_embedding
    decoder.position_encodings.encodings = positions
    decoder.projection.weight = target_embedding if config["tied_output"] else array("output/weight")
    decoder.projection.bias = array("output/bias")
    if config["pre_norm"]:
        norm(encoder.layer_norm, "encoder/norm")
        norm(decoder.layer_norm, "decoder/norm")

    def self_attention_and_ffn(layer, scope):
        linear(layer.self_attention.linear[0], scope + "self_attention/qkv")
        linear(layer.self_attention.linear[1], scope + "self_attention/out")
        norm(layer.self_attention.layer_norm, scope + "self_attention/norm")
        linear(layer.ffn.linear_0, scope + "ffn/linear_0")
        linear(layer.ffn.linear_1, scope + "ffn/linear_1")
        norm(layer.ffn.layer_norm, scope + "ffn/norm")

    for i, layer in enumerate(encoder.layer):
        self_attention_and_ffn(layer, "encoder/layer_%d/" % i)
    for i, layer in enumerate(decoder.layer):
        scope = "decoder/layer_%d/" % i
        self_attention_and_ffn(layer, scope)
        linear(layer.attention.linear[0], scope + "cross_attention/q")
        linear(layer.attention.linear[1], scope + "cross_attention/kv")
        linear(layer.attention.linear[2], scope + "cross_attention/out")
        norm(layer.attention.layer_norm, scope + "cross_attention/norm")

    tokens = tokens_for(config, arrays_dir)
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = "<unk>", "<s>", "</s>"
    spec.config.decoder_start_token = "<s>"
    spec.config.layer_norm_epsilon = config["layer_norm_epsilon"]
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    return spec


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arrays_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--quantization", default="float32", choices=["float32", "int8"])
    args = parser.parse_args()
    spec = build_spec(args.arrays_dir)
    spec.validate()
    spec.optimize(quantization=args.quantization)
    os.makedirs(args.out_dir, exist_ok=True)
    spec.save(args.out_dir)
    print("%s: CTranslate2 %s model (%s) written to %s" %
          (args.arrays_dir, ctranslate2.__version__, args.quantization, args.out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
