"""Builds the native Marian fixture (an OPUS-MT release's layout: model.npz with its
special:model.yml, opus.vocab.yml, source.spm, target.spm, decoder.yml) the converter tests check
against, and what Marian computes on it.

No marian-decoder runs here, so the reference is transformers' MarianMTModel (the port OPUS-MT's
Hugging Face models use) made to compute as Marian's C++ does where the port differs
(marian-dev src/tensors/cpu/tensor_operators.cpp SinusoidalPositionEmbeddings, src/layers/generic.h
layerNorm, src/models/transformer.h): positions exp(-k ln(10000)/(d/2-1)) with sin and cos halves
from position 0, LayerNorm eps 1e-6, <unk> never emitted (marian-decoder's --allow-unk is off),
decoding from a zero vector. The weights are the marian-shared fixture's, written as Marian names
them (l1.. layers, [in, out] matrices, [1, n] biases; HF's <pad> row, which Marian lacks, left out).

    HF_HUB_OFFLINE=1 V/bin/python tests/data/converters/make_marian_npz_fixture.py   (V: as make_marian_fixture.py)
"""

import json
import math
import pathlib
import shutil

import numpy as np
import torch
from transformers import MarianMTModel, MarianTokenizer

HERE = pathlib.Path(__file__).resolve().parent
TEXTS = ["the small dog runs near the river", "a woman with two children sits under a green tree",
         "three men walk", "x y z qq inconnu", "a"]
MAX_LENGTH = 20


def marian_sinusoid(positions, dim):
    half = dim // 2
    increment = math.log(10000.0) / (half - 1)
    table = np.zeros((positions, dim), np.float32)
    for p in range(positions):
        for i in range(dim):
            v = p * math.exp((i % half) * -increment)
            table[p, i] = math.sin(v) if i < half else math.cos(v)
    return table


def yaml_key(text):
    return json.dumps(text, ensure_ascii=False)


def main():
    hf_dir = HERE / "marian-shared" / "hf"
    out = HERE / "marian-npz"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    model = MarianMTModel.from_pretrained(hf_dir).eval()
    tokenizer = MarianTokenizer.from_pretrained(hf_dir)
    config = model.config
    d, pad = config.d_model, config.pad_token_id
    vocab = tokenizer.get_vocab()
    pieces = sorted(vocab, key=vocab.get)
    assert pieces[pad] == "<pad>" and pad == len(pieces) - 1
    marian_pieces = pieces[:pad]
    unk = vocab["<unk>"]

    # Marian's model.npz.
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    npz = {"Wemb": sd["model.shared.weight"][:pad], "decoder_ff_logit_out_b": sd["final_logits_bias"][:, :pad]}

    def linear(prefix, hf):
        npz[prefix[0]] = sd[hf + ".weight"].T.copy()
        npz[prefix[1]] = sd[hf + ".bias"][None, :]

    def norm(prefix, hf):
        npz[prefix + "_ln_scale"] = sd[hf + ".weight"][None, :]
        npz[prefix + "_ln_bias"] = sd[hf + ".bias"][None, :]

    for side, count in (("encoder", config.encoder_layers), ("decoder", config.decoder_layers)):
        for i in range(count):
            m, h = f"{side}_l{i + 1}", f"model.{side}.layers.{i}"
            for w in "qkvo":
                linear((f"{m}_self_W{w}", f"{m}_self_b{w}"), f"{h}.self_attn.{'out' if w == 'o' else w}_proj")
            norm(f"{m}_self_Wo", f"{h}.self_attn_layer_norm")
            if side == "decoder":
                for w in "qkvo":
                    linear((f"{m}_context_W{w}", f"{m}_context_b{w}"), f"{h}.encoder_attn.{'out' if w == 'o' else w}_proj")
                norm(f"{m}_context_Wo", f"{h}.encoder_attn_layer_norm")
            linear((f"{m}_ffn_W1", f"{m}_ffn_b1"), f"{h}.fc1")
            linear((f"{m}_ffn_W2", f"{m}_ffn_b2"), f"{h}.fc2")
            norm(f"{m}_ffn_ffn", f"{h}.final_layer_norm")
    model_yml = "\n".join([
        "type: transformer", f"dim-emb: {d}", f"dim-vocabs:\n  - {pad}\n  - {pad}", f"enc-depth: {config.encoder_layers}",
        f"dec-depth: {config.decoder_layers}", f"transformer-heads: {config.encoder_attention_heads}",
        f"transformer-dim-ffn: {config.encoder_ffn_dim}", "transformer-ffn-depth: 2",
        f"transformer-ffn-activation: {config.activation_function}", "transformer-preprocess: \"\"",
        "transformer-postprocess: dan", "transformer-postprocess-emb: d", "transformer-postprocess-top: \"\"",
        "transformer-decoder-autoreg: self-attention", "transformer-train-position-embeddings: false",
        "tied-embeddings-all: true", "tied-embeddings: false", "right-left: false", "max-length: 256",
        "version: v1.9.56 fixture"]) + "\n"
    npz["special:model.yml"] = np.frombuffer(model_yml.encode() + b"\0", dtype=np.int8)
    np.savez(out / "model.npz", **npz)
    (out / "opus.vocab.yml").write_text("".join(f"{yaml_key(p)}: {i}\n" for i, p in enumerate(marian_pieces)),
                                        encoding="utf-8")
    shutil.copy(hf_dir / "source.spm", out / "source.spm")
    shutil.copy(hf_dir / "target.spm", out / "target.spm")
    (out / "decoder.yml").write_text("models:\n  - model.npz\nvocabs:\n  - opus.vocab.yml\n  - opus.vocab.yml\n"
                                     "beam-size: 4\nnormalize: 1\nword-penalty: 0\nmini-batch: 16\nmaxi-batch: 100\n"
                                     "maxi-batch-sort: src\nrelative-paths: true\n", encoding="utf-8")

    # The reference: the same weights computing as Marian does.
    table = torch.tensor(marian_sinusoid(config.max_position_embeddings, d))
    with torch.no_grad():
        model.model.encoder.embed_positions.weight.copy_(table)
        model.model.decoder.embed_positions.weight.copy_(table)
        assert not model.model.shared.weight[pad].any()  # the zero vector Marian starts from
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.eps = 1e-6
    options = dict(do_sample=False, max_length=MAX_LENGTH, bad_words_ids=[[pad], [unk]])
    cases = []
    for text in TEXTS:
        ids = tokenizer(text).input_ids
        src = torch.tensor([ids])
        with torch.no_grad():
            greedy = model.generate(src, num_beams=1, **options)[0].tolist()
            beam = model.generate(src, num_beams=4, num_return_sequences=2, output_scores=True,
                                  return_dict_in_generate=True, early_stopping=True, length_penalty=1.0, **options)
            logits = model(input_ids=src, decoder_input_ids=torch.tensor([greedy[:-1]])).logits[0].double().numpy()
        cases.append({"text": text, "source_ids": ids, "greedy": greedy[1:],
                      "greedy_text": tokenizer.decode(greedy, skip_special_tokens=True),
                      "beam": [s[1:] for s in beam.sequences.tolist()],
                      "beam_scores": [float(x) for x in beam.sequences_scores],
                      "forced_logits": np.round(logits[:, :pad], 7).tolist()})
        print(ids, greedy[1:], repr(cases[-1]["greedy_text"]), cases[-1]["beam_scores"])
    (out / "expected.json").write_text(json.dumps({"vocab_size": pad, "max_length": MAX_LENGTH, "cases": cases},
                                                  ensure_ascii=False, indent=0))


if __name__ == "__main__":
    main()
