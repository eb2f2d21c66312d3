"""libmt.convert --from marian (native Marian .npz, an OPUS-MT release's layout) against what
Marian computes: tests/data/converters/make_marian_npz_fixture.py wrote the marian-shared weights as
Marian names them and recorded transformers' MarianMTModel made to compute as marian-decoder does
(Marian's position formula, LayerNorm eps 1e-6, <unk> never emitted). No torch needed here."""

import json
import pathlib
import shutil

import pytest

np = pytest.importorskip("numpy")

import libmt  # noqa: E402
from libmt import _marian_npz, convert  # noqa: E402

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "converters" / "marian-npz"
EOS = 0


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    output = tmp_path_factory.mktemp("npz") / "model.mtm"
    conversion = convert.convert("marian", FIXTURE, output)
    expected = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
    model = libmt.Model(output)
    return conversion, expected, model, libmt.Translator(model, max_beam_size=4)


def until_eos(ids):
    return ids[:ids.index(EOS)] if EOS in ids else ids


def test_the_file_holds_what_the_release_says(converted):
    conversion, expected, model, _ = converted
    config = model.config
    V = expected["vocab_size"]
    assert config.target_vocab_size == V + 1 and config.decoder_start_id == V  # the zero row Marian starts from
    assert config.suppressed_ids == [1, V]  # <unk> and the start row
    assert config.activation == "swish" and not config.pre_norm and config.source_eos
    assert config.layer_norm_epsilon == pytest.approx(1e-6)
    assert libmt.language_tokens(model) == {">>fra<<": 93, ">>deu<<": 94}
    assert model.metadata["generation.num_beams"] == "4"


def test_tokenizer_ids_are_marians(converted):
    _, expected, model, _ = converted
    for case in expected["cases"]:
        assert model.vocabulary.encode(case["text"]) + [EOS] == case["source_ids"], case["text"]


def test_teacher_forced_logits_match_to_a_relative_1e_4(converted):
    _, expected, model, translator = converted
    V = model.config.target_vocab_size
    worst = 0.0
    for case in expected["cases"]:
        target = case["greedy"]
        got = np.frombuffer(translator._forced_logits(case["source_ids"][:-1], target), dtype=np.float32)
        got = got.reshape(len(target), V)[:, :V - 1]
        want = np.array(case["forced_logits"])
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    assert worst <= 1e-4


def test_greedy_and_beam_follow_marian(converted):
    _, expected, _, translator = converted
    limit = expected["max_length"]
    for case in expected["cases"]:
        want = case["greedy"]
        cut = len(want) == limit - 1  # the reference forces </s> at max_length; libmt stops without it
        result = translator.translate_batch([case["source_ids"][:-1]], max_decoding_length=len(want) - 1 if cut
                                            else limit)[0]
        assert result.ids[0] == until_eos(want[:-1] if cut else want), case["text"]
        assert translator.translate([case["text"]], max_decoding_length=len(want) - 1 if cut else limit)[0] == \
            case["greedy_text"]
        best, scores = until_eos(case["beam"][0]), case["beam_scores"]
        if len(best) < limit - 2 and abs(scores[0] - scores[1]) >= 1e-3:
            beam = translator.translate_batch([case["source_ids"][:-1]], beam_size=4, max_decoding_length=limit)[0]
            assert beam.ids[0] == best, case["text"]


def test_marian_yaml_and_vocabularies_are_read_as_marian_writes_them(tmp_path):
    text = ('type: transformer\ndim-vocabs:\n  - 8\n  - 8\ntransformer-preprocess: ""\nlist: [1, 2]\n'
            "flag: true\nname: 'it''s'\n")
    assert _marian_npz.parse_yaml(text, "x") == {"type": "transformer", "dim-vocabs": [8, 8],
                                                 "transformer-preprocess": "", "list": [1, 2], "flag": True,
                                                 "name": "it's"}
    (tmp_path / "v.yml").write_text('</s>: 0\n<unk>: 1\n"\\"": 2\n"a: b": 3\n\u2581x: 4\n"\\x41": 5\n', encoding="utf-8")
    assert _marian_npz.read_vocab_yml(tmp_path / "v.yml") == ["</s>", "<unk>", '"', "a: b", "\u2581x", "A"]
    (tmp_path / "v.yml").write_text("</s>: 0\n<unk>: 2\n", encoding="utf-8")
    with pytest.raises(convert.ConversionError, match="without gaps"):
        _marian_npz.read_vocab_yml(tmp_path / "v.yml")


def _copy_with_options(tmp_path, **changes):
    release = tmp_path / "release"
    shutil.copytree(FIXTURE, release)
    with np.load(release / "model.npz") as z:
        weights = {k: z[k] for k in z.files}
    text = weights["special:model.yml"].astype(np.uint8).tobytes().split(b"\0")[0].decode()
    for key, value in changes.items():
        lines = [line for line in text.split("\n") if not line.startswith(key + ":")]
        text = "\n".join(lines) + f"\n{key}: {value}\n"
    weights["special:model.yml"] = np.frombuffer(text.encode() + b"\0", dtype=np.int8)
    np.savez(release / "model.npz", **weights)
    return release


@pytest.mark.parametrize("key, value, reason", [
    ("transformer-ffn-activation", "gelu", "sigmoid approximation"),
    ("transformer-preprocess", "n", "pre-norm"),
    ("transformer-postprocess-emb", "nd", "LayerNorm on the embeddings"),
    ("transformer-decoder-autoreg", "average-attention", "average-attention decoder"),
    ("type", "s2s", "'s2s'"),
    ("right-left", "true", "right-to-left"),
])
def test_what_cannot_be_converted_is_refused_with_the_reason(tmp_path, key, value, reason):
    release = _copy_with_options(tmp_path, **{key: value})
    with pytest.raises(convert.ConversionError, match=reason):
        convert.convert("marian", release, tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()


def test_missing_files_are_named(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(FIXTURE, release)
    (release / "target.spm").unlink()
    with pytest.raises(convert.ConversionError, match="target.spm: missing"):
        convert.convert("marian", release, tmp_path / "m.mtm")
    (release / "model.npz").write_bytes(b"PK\x03\x04 damaged")
    shutil.copy(FIXTURE / "target.spm", release / "target.spm")
    with pytest.raises(convert.ConversionError, match="not a readable .npz"):
        convert.convert("marian", release, tmp_path / "m.mtm")
