"""ModelWriter: a model written from numpy arrays loads, translates, and
reads back what was written; mistakes name the tensor."""

import math

import numpy as np
import pytest

import libmt


def small_config(**changes):
    fields = dict(encoder_layers=1, decoder_layers=1, d_model=16, heads=2, d_ff=32, source_vocab_size=8000,
                  target_vocab_size=8000, max_positions=64, shared_embeddings=True, tied_output=True)
    fields.update(changes)
    return libmt.ModelConfig(**fields)


def filled_writer(config, vocabulary=None, seed=1, int8_names=()):
    rng = np.random.default_rng(seed)
    writer = libmt.ModelWriter(config)
    if vocabulary is not None:
        writer.set_vocabulary(vocabulary)
    writer.set_metadata({"source_language": "en", "target_language": "de", "tool": "test_writer", "note": "x"})
    for spec in libmt.tensor_specs(config):
        shape = spec["shape"]
        if spec["role"] == "norm_gamma":
            values = np.ones(shape, np.float32)
        elif spec["role"] in ("bias", "norm_beta"):
            values = np.zeros(shape, np.float32)
        else:
            values = rng.normal(0.0, 0.2, shape).astype(np.float32)
        if spec["name"] in int8_names:
            scales = np.abs(values).max(axis=1).astype(np.float32) / 127
            q = np.clip(np.round(values / scales[:, None]), -127, 127).astype(np.int8)
            writer.add_tensor_i8(spec["name"], q, scales)
        else:
            writer.add_tensor(spec["name"], values, layout=spec["layout"])
    return writer


def test_config_fields_and_presets():
    config = small_config(activation="gelu", pre_norm=True)
    assert config.activation == "gelu" and config.pre_norm
    assert config == libmt.ModelConfig(**config.to_dict())
    converted = small_config(embedding_scale=1.0, decoder_start_id=5, source_eos=False)
    assert converted.to_dict()["source_eos"] is False and converted.decoder_start_id == 5
    assert converted != small_config()
    assert (config == None) is False and config != None  # noqa: E711 (what == does with another type)
    assert config != "tiny" and config not in [None, 1]
    assert libmt.ModelConfig.preset("tiny").d_model == 128
    with pytest.raises(ValueError, match="preset|huge"):
        libmt.ModelConfig.preset("huge")
    with pytest.raises(TypeError, match="unexpected field 'layers'"):
        libmt.ModelConfig(layers=3)
    with pytest.raises(ValueError, match="activation = 'tanh'"):
        libmt.ModelConfig(activation="tanh")
    with pytest.raises(ValueError, match="heads"):
        small_config(heads=3).validate()


def test_written_model_loads_and_translates(tmp_path, de_model):
    config = small_config()
    writer = filled_writer(config, de_model.vocabulary)
    path = tmp_path / "small.mtm"
    writer.write(path)
    model = libmt.Model(path)
    assert model.config == config
    assert model.metadata["source_language"] == "en" and model.metadata["note"] == "x"
    assert sorted(t["name"] for t in model.tensors) == sorted(s["name"] for s in libmt.tensor_specs(config))
    assert len(model.vocabulary) == 8000
    out = libmt.Translator(model).translate(["A dog."], max_decoding_length=8)
    assert len(out) == 1
    # The same arrays give the same bytes; serialize() and write() agree.
    assert filled_writer(config, de_model.vocabulary).serialize() == path.read_bytes()
    assert libmt.Model(path.read_bytes()).config == config


def test_swish_model_is_format_version_3(tmp_path, de_model):
    config = small_config(activation="swish")
    path = tmp_path / "swish.mtm"
    filled_writer(config, de_model.vocabulary).write(path)
    model = libmt.Model(path)
    assert model.config.activation == "swish" and model.format_version == 3
    assert len(libmt.Translator(model).translate(["A dog."], max_decoding_length=8)) == 1
    # Without a version 3 feature the writer keeps version 2.
    filled_writer(small_config(), de_model.vocabulary).write(path)
    assert libmt.Model(path).format_version == 2


def test_int8_tensors_and_quantization(tmp_path):
    config = small_config()
    names = [s["name"] for s in libmt.tensor_specs(config) if s["name"].endswith("ffn/linear_0/weight")]
    writer = filled_writer(config, int8_names=names)
    writer.set_quantization(activations="dynamic")
    model = libmt.Model(writer.serialize())
    assert model.quantization["int8"] and model.quantization["activations"] == "dynamic"
    assert {t["name"]: t["dtype"] for t in model.tensors}[names[0]] == "int8"
    result = libmt.Translator(model).translate_batch([[5, 6, 7]], max_decoding_length=8)[0]
    assert len(result.ids) == 1 and len(result.ids[0]) <= 8
    assert all(0 <= i < 8000 for i in result.ids[0])
    assert math.isfinite(result.log_probs[0]) and result.log_probs[0] < 0  # a broken int8 layer gives NaN
    with pytest.raises(ValueError, match="activations = 'static'"):
        writer.set_quantization(activations="static")


def test_mistakes_name_the_tensor(de_model):
    config = small_config()
    writer = libmt.ModelWriter(config)
    with pytest.raises(TypeError, match="encoder/layer_0/ffn/linear_0/bias.*float32"):
        writer.add_tensor("encoder/layer_0/ffn/linear_0/bias", np.zeros(32, np.float64))
    with pytest.raises(ValueError, match="encoder/layer_0/ffn/linear_0/bias"):
        writer.add_tensor("encoder/layer_0/ffn/linear_0/bias", np.zeros(31, np.float32))
    with pytest.raises(ValueError, match="no_such_tensor"):
        writer.add_tensor("no_such_tensor", np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        writer.add_tensor("encoder/layer_0/ffn/linear_0/weight", np.zeros((16, 32), np.float32).T,
                          layout="packed_n16")
    with pytest.raises(ValueError, match="layout = 'packed'"):
        writer.add_tensor("encoder/layer_0/ffn/linear_0/bias", np.zeros(32, np.float32), layout="packed")
    with pytest.raises(TypeError, match="buffer"):
        writer.add_tensor("encoder/layer_0/ffn/linear_0/bias", [0.0] * 32)
    with pytest.raises(TypeError, match="metadata 'x'"):
        writer.set_metadata({"x": 1})
    with pytest.raises(TypeError, match="SentencePiece"):
        writer.set_vocabulary("not bytes")
    with pytest.raises(ValueError):
        writer.set_vocabulary(b"not a sentencepiece model")
    # Missing tensors are named when serializing.
    with pytest.raises(ValueError, match="missing|target_embedding"):
        writer.serialize()
    # A vocabulary of another size than the config's.
    with pytest.raises(ValueError, match="the vocabulary has 8000 pieces; the config's vocabularies have 100"):
        libmt.ModelWriter(small_config(source_vocab_size=100, target_vocab_size=100)).set_vocabulary(de_model.vocabulary)


def test_array_module_buffers_without_numpy():
    import array
    config = small_config()
    writer = libmt.ModelWriter(config)
    writer.add_tensor("encoder/layer_0/ffn/linear_0/bias", array.array("f", [0.0] * 32))
    writer.add_tensor("encoder/layer_0/ffn/linear_0/weight", memoryview(array.array("f", [0.5] * 512)),
                      shape=[32, 16], layout="packed_n16")
