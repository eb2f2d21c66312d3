"""libmt.convert --from ctranslate2 against what CTranslate2 itself computed on the same models
(tests/data/converters/make_ctranslate2_fixture.py made them with CTranslate2's own converter and
recorded its results): a Marian model CTranslate2 starts from a zero embedding, the same model
with CTranslate2's computed sinusoid, and an int8 M2M-100 packaged as an Argos Translate
.argosmodel. Token ids, teacher-forced log-probs (score_batch), greedy and beam output, text. No
ctranslate2 needed here."""

import json
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

np = pytest.importorskip("numpy")

import libmt  # noqa: E402
from libmt import convert  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "converters"
ARGOS = "ct2-m2m100-argos/translate-en_fr-1_0.argosmodel"
SOURCES = {"ct2-marian": "ct2-marian/model", "ct2-computed-positions": "ct2-computed-positions/model",
           "ct2-m2m100-argos": ARGOS}


def vocabulary(name):
    if name == "ct2-m2m100-argos":
        with zipfile.ZipFile(FIXTURES / ARGOS) as z:
            return json.loads(z.read("translate-en_fr-1_0/model/shared_vocabulary.json"))
    return json.loads((FIXTURES / SOURCES[name] / "shared_vocabulary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=sorted(SOURCES))
def converted(request, tmp_path_factory):
    name = request.param
    output = tmp_path_factory.mktemp(name) / "model.mtm"
    conversion = convert.convert("ctranslate2", FIXTURES / SOURCES[name], output, source_eos=True)
    expected = json.loads((FIXTURES / name / "expected.json").read_text(encoding="utf-8"))
    model = libmt.Model(output)
    tokens = vocabulary(name)
    ids = {t: i for i, t in enumerate(tokens)}
    return name, conversion, expected, model, libmt.Translator(model, max_beam_size=4), ids


def languages(case):
    """M2M-100 cases: the source starts with its language token, the output with the target's."""
    if not case["target_prefix"]:
        return {}
    return {"source_language": case["source_tokens"][0].strip("_"),
            "target_language": case["target_prefix"][0].strip("_")}


def source_text(case):
    return case["text"]


def test_the_file_holds_what_the_directory_says(converted):
    name, conversion, _, model, _, ids = converted
    config = model.config
    assert config.source_eos and config.stored_positions
    if name == "ct2-m2m100-argos":
        assert config.pre_norm and config.activation == "relu" and config.decoder_start_id == config.eos_id
        assert model.metadata["source_language"] == "en" and model.metadata["target_language"] == "fr"
        assert model.metadata["converted_from"] == "Argos Translate package"
        assert len(libmt.language_tokens(model)) == 100
    else:
        # CTranslate2 dropped Marian's <pad> and starts from a zero vector: libmt adds the row back.
        assert config.target_vocab_size == len(ids) + 1 and config.decoder_start_id == len(ids)
        assert config.suppressed_ids == [len(ids)]
        assert config.activation == "swish" and not config.pre_norm
    assert (name == "ct2-computed-positions") == any("computed sinusoid" in n for n in conversion.notes)


def test_source_ids_are_the_ctranslate2_tokens(converted):
    _, _, expected, model, _, ids = converted
    for case in expected["cases"]:
        want = [ids.get(t, ids["<unk>"]) for t in case["source_tokens"]]
        got = model.vocabulary.encode(case["text"])
        if case["target_prefix"]:  # the language token comes from source_language=
            got = [ids[case["source_tokens"][0]]] + got
        assert got + [ids["</s>"]] == want, case["text"]


def test_teacher_forced_log_probs_match_score_batch(converted):
    _, _, expected, model, translator, ids = converted
    worst = 0.0
    for case in expected["cases"]:
        source = [ids.get(t, ids["<unk>"]) for t in case["source_tokens"]][:-1]
        target = [ids[t] for t in case["forced_tokens"]]
        V = model.config.target_vocab_size
        logits = np.frombuffer(translator._forced_logits(source, target), dtype=np.float32).reshape(len(target), V)
        logits = logits.astype(np.float64)
        if model.config.suppressed_ids:  # the added start row: never a candidate
            logits[:, model.config.suppressed_ids] = -np.inf
        log_probs = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - \
            logits.max(1, keepdims=True)
        got = log_probs[np.arange(len(target)), target]
        want = np.array(case["forced_log_probs"])
        worst = max(worst, float(np.abs(got - want).max() / max(1.0, np.abs(want).max())))
    assert worst <= 1e-4


def test_greedy_tokens_and_text_are_ctranslate2(converted):
    _, _, expected, _, translator, ids = converted
    length = expected["max_decoding_length"]
    for case in expected["cases"]:
        want = [ids[t] for t in case["greedy"]]
        # CTranslate2's limit counts generated tokens, the forced prefix included.
        result = translator.translate_batch([libmt_source(case, ids)], max_decoding_length=length,
                                            **languages(case))[0]
        assert result.ids[0] == want, case["text"]
        assert result.scores[0] == pytest.approx(case["greedy_score"], abs=1e-4), case["text"]
        if len(want) < length:
            text = translator.translate([source_text(case)], max_decoding_length=length, **languages(case))[0]
            assert text == case["greedy_text"], case["text"]


def libmt_source(case, ids):
    tokens = case["source_tokens"][1 if case["target_prefix"] else 0:-1]
    return [ids.get(t, ids["<unk>"]) for t in tokens]


def test_min_decoding_length_1_is_ctranslate2s_default(converted):
    # CTranslate2 masks </s> at the first step before the softmax by default; so does libmt's
    # min_decoding_length=1.
    _, _, expected, _, translator, ids = converted
    length = expected["max_decoding_length"]
    for case in expected["cases"]:
        for beam, key in ((1, "default_greedy"), (4, "default_beam")):
            result = translator.translate_batch([libmt_source(case, ids)], beam_size=beam, max_decoding_length=length,
                                                min_decoding_length=1, **languages(case))[0]
            assert result.ids[0] == [ids[t] for t in case[key]], case["text"]
            assert result.scores[0] == pytest.approx(case[key + "_score"], abs=1e-4), case["text"]


def test_beam_top1_is_ctranslate2_where_not_tied(converted):
    _, _, expected, _, translator, ids = converted
    length = expected["max_decoding_length"]
    compared = 0
    for case in expected["cases"]:
        best, scores = case["beam"][0], case["beam_scores"]
        if len(best) >= length or abs(scores[0] - scores[1]) < 1e-3:
            continue
        result = translator.translate_batch([libmt_source(case, ids)], beam_size=4, num_hypotheses=2,
                                            max_decoding_length=length, **languages(case))[0]
        assert result.ids[0] == [ids[t] for t in best], case["text"]
        assert result.scores[0] == pytest.approx(scores[0], abs=1e-4), case["text"]
        compared += 1
    if compared == 0:
        pytest.skip("no beam result of this fixture ended before the length limit with a clear margin")


def test_the_command_line_converts_an_argos_package(tmp_path):
    output = tmp_path / "m.mtm"
    run = subprocess.run([sys.executable, "-m", "libmt.convert", "--from", "ctranslate2", str(FIXTURES / ARGOS),
                          "-o", str(output), "--source-eos", "yes", "--quantize", "int8"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "relu, pre-norm" in run.stderr and "100 language tokens" in run.stderr
    translator = libmt.Translator(libmt.Model(output))
    assert translator.translate(["the small dog"], source_language="en", target_language="fr")[0] is not None


def test_a_vmap_becomes_the_shortlist(tmp_path):
    """vmap.txt beside model.bin: its rows per source token, its empty n-gram's targets always
    allowed; libmt translates each sentence over them."""
    model = tmp_path / "model"
    shutil.copytree(FIXTURES / "ct2-marian" / "model", model)
    tokens = json.loads((model / "shared_vocabulary.json").read_text(encoding="utf-8"))
    words = [t for t in tokens if t.startswith("\u2581")][:4]
    (model / "vmap.txt").write_text("\t%s %s\n%s\t%s %s\n%s %s\t%s\nnot-a-token\t%s\n" % (
        tokens[0], tokens[1], words[0], words[1], words[2], words[0], words[3], words[2], words[3]), encoding="utf-8")
    spm = FIXTURES / "ct2-marian" / "source.spm"
    conversion = convert.convert("ctranslate2", model, tmp_path / "m.mtm", source_spm=spm, target_spm=spm)
    assert any("vocabulary shortlist" in n for n in conversion.notes)
    assert any("not-a-token" in w for w in conversion.warnings)
    converted_model = libmt.Model(tmp_path / "m.mtm")
    shortlist = converted_model.shortlist
    # words[0]: words[1], words[2] and (from the bigram) words[2]; words[3]: words[2]; frequent: 2 ids.
    assert shortlist["frequent"] == 2 and shortlist["targets"] == 3 and shortlist["longest_row"] == 2
    assert shortlist["method"] == "CTranslate2 vmap.txt"
    (model / "vmap.txt").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(convert.ConversionError, match="line 1: no tab"):
        convert.convert("ctranslate2", model, tmp_path / "m2.mtm", source_spm=spm, target_spm=spm)


def test_what_cannot_be_converted_is_refused_with_the_reason(tmp_path):
    # No SentencePiece model beside the CTranslate2 directory.
    model = tmp_path / "model"
    shutil.copytree(FIXTURES / "ct2-marian" / "model", model)
    with pytest.raises(convert.ConversionError, match="no SentencePiece model"):
        convert.convert("ctranslate2", model, tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()
    spm = FIXTURES / "ct2-marian" / "source.spm"
    # A damaged model.bin: refused, never misread.
    data = (model / "model.bin").read_bytes()
    (model / "model.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(convert.ConversionError, match="cut short|past the end"):
        convert.convert("ctranslate2", model, tmp_path / "m.mtm", source_spm=spm, target_spm=spm)
    (model / "model.bin").write_bytes(b"\x07\x00\x00\x00" + data[4:])
    with pytest.raises(convert.ConversionError, match="binary version 7"):
        convert.convert("ctranslate2", model, tmp_path / "m.mtm", source_spm=spm, target_spm=spm)
    # An activation libmt lacks, named.
    (model / "model.bin").write_bytes(_set_scalar(data, "encoder/activation", 4))
    with pytest.raises(convert.ConversionError, match="activations differ|sigmoid-approximated GELU"):
        convert.convert("ctranslate2", model, tmp_path / "m.mtm", source_spm=spm, target_spm=spm)
    (model / "model.bin").write_bytes(_set_scalar(_set_scalar(data, "encoder/activation", 4), "decoder/activation", 4))
    with pytest.raises(convert.ConversionError, match="sigmoid-approximated GELU"):
        convert.convert("ctranslate2", model, tmp_path / "m.mtm", source_spm=spm, target_spm=spm)
    # An archive member escaping the package.
    bad = tmp_path / "bad.argosmodel"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("../evil/model/model.bin", b"")
    with pytest.raises(convert.ConversionError, match="outside the package"):
        convert.convert("ctranslate2", bad, tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()


def _set_scalar(data: bytes, name: str, value: int) -> bytes:
    """model.bin with the one-byte scalar `name` set to `value`."""
    key = name.encode() + b"\x00"
    at = data.index(key) + len(key)  # then rank 0, dtype, byte count 1, the byte
    assert data[at] == 0 and data[at + 2:at + 6] == b"\x01\x00\x00\x00"
    return data[:at + 6] + bytes([value]) + data[at + 7:]
