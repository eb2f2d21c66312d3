"""libmt.convert --from opennmt-py against what OpenNMT-py 3.3 itself computed on the same
checkpoints (tests/data/converters/make_opennmt_py_fixture.py made them with onmt's own model
builder and ModelSaver and recorded its translator's results): source ids, teacher-forced
logits, greedy and beam output with their scores, and text. No torch or onmt needed here."""

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

import libmt  # noqa: E402
from libmt import convert  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "converters"
VARIANTS = ["opennmt-py", "opennmt-py-shared"]


@pytest.fixture(scope="module", params=VARIANTS)
def converted(request, tmp_path_factory):
    name = request.param
    output = tmp_path_factory.mktemp(name) / "model.mtm"
    conversion = convert.convert("opennmt-py", FIXTURES / name / "model.pt", output)
    expected = json.loads((FIXTURES / name / "expected.json").read_text(encoding="utf-8"))
    model = libmt.Model(output)
    return name, conversion, expected, model, libmt.Translator(model, max_beam_size=4)


def test_the_file_holds_what_the_checkpoint_says(converted):
    name, conversion, expected, model, _ = converted
    config = model.config
    assert config.pre_norm and not config.source_eos and config.stored_positions
    assert config.target_vocab_size == len(expected["target_vocab"])
    assert config.decoder_start_id == config.bos_id == expected["target_vocab"].index("<s>")
    assert config.suppressed_ids == []  # OpenNMT-py masks nothing
    assert config.activation == {"opennmt-py": "relu", "opennmt-py-shared": "gelu"}[name]
    assert config.shared_embeddings == (name == "opennmt-py-shared")
    assert model.metadata["decoding.length_offset"] == "1"
    assert any("encode to <unk>" in note for note in conversion.notes)  # two pieces left out


def test_source_ids_are_opennmt_py(converted):
    _, _, expected, model, _ = converted
    for case in expected["cases"]:
        assert model.vocabulary.encode(case["text"]) == case["source_ids"], case["text"]


def test_teacher_forced_logits_match_to_a_relative_1e_4(converted):
    _, _, expected, model, translator = converted
    V = model.config.target_vocab_size
    worst = 0.0
    for case in expected["cases"]:
        target = case["forced_target"]
        got = np.frombuffer(translator._forced_logits(case["source_ids"], target), dtype=np.float32)
        want = np.array(case["forced_logits"])
        worst = max(worst, float(np.abs(got.reshape(len(target), V) - want).max() / np.abs(want).max()))
    assert worst <= 1e-4


def test_greedy_ids_scores_and_text_are_opennmt_py(converted):
    _, _, expected, _, translator = converted
    length = expected["max_length"]
    for case in expected["cases"]:
        result = translator.translate_batch([case["source_ids"]], max_decoding_length=length)[0]
        assert result.ids[0] == case["greedy"], case["text"]
        assert result.scores[0] == pytest.approx(case["greedy_score"], abs=1e-5), case["text"]
        assert translator.translate([case["text"]], max_decoding_length=length)[0] == case["greedy_text"]


def test_beam_top1_and_score_are_opennmt_py(converted):
    _, _, expected, _, translator = converted
    length = expected["max_length"]
    compared = 0
    for case in expected["cases"]:
        scores = case["beam_scores"]
        if abs(scores[0] - scores[1]) < 1e-3:
            continue
        result = translator.translate_batch([case["source_ids"]], beam_size=4, num_hypotheses=2,
                                            max_decoding_length=length)[0]
        assert result.ids[0] == case["beam"][0], case["text"]
        assert result.scores[0] == pytest.approx(scores[0], abs=1e-5), case["text"]
        compared += 1
    assert compared >= 3


def test_the_command_line_converts_and_reports(tmp_path):
    output = tmp_path / "m.mtm"
    run = subprocess.run([sys.executable, "-m", "libmt.convert", "--from", "opennmt-py",
                          str(FIXTURES / "opennmt-py" / "model.pt"), "-o", str(output), "--quantize", "int8"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "relu, pre-norm" in run.stderr and "SinusoidalInterleaved" in run.stderr
    assert libmt.Model(output).config.d_model == 16


def test_what_cannot_be_converted_is_refused_with_the_reason(tmp_path):
    # No SentencePiece model beside the checkpoint, none given.
    shutil.copy(FIXTURES / "opennmt-py" / "model.pt", tmp_path / "model.pt")
    with pytest.raises(convert.ConversionError, match="no SentencePiece model"):
        convert.convert("opennmt-py", tmp_path / "model.pt", tmp_path / "m.mtm")
    with pytest.raises(convert.ConversionError, match="never end with </s>"):
        convert.convert("opennmt-py", tmp_path / "model.pt", source_eos=True)
    # A cut checkpoint is refused, not misread.
    data = (tmp_path / "model.pt").read_bytes()
    (tmp_path / "model.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(convert.ConversionError):
        convert.convert("opennmt-py", tmp_path / "model.pt", tmp_path / "m.mtm",
                        source_spm=FIXTURES / "opennmt-py" / "sentencepiece.model")
    # A file that is not a checkpoint.
    (tmp_path / "notes.pt").write_text("not a checkpoint")
    with pytest.raises(convert.ConversionError, match="not a zip-format"):
        convert.convert("opennmt-py", tmp_path / "notes.pt")
    assert not (tmp_path / "m.mtm").exists()


@pytest.mark.parametrize("option, value, reason", [
    ("max_relative_positions", 20, "relative position representations"),
    ("max_relative_positions", -1, "rotary position embeddings"),
    ("max_relative_positions", -2, "ALiBi"),
    ("layer_norm", "rms", "RMS norm"),
    ("pos_ffn_activation_fn", "fast_gelu", "fast_gelu"),
    ("decoder_type", "rnn", "transformer encoders and decoders only"),
    ("num_kv", 2, "grouped or multi-query attention"),
    ("parallel_residual", True, "parallel residual"),
])
def test_options_libmt_cannot_run_are_refused_by_name(monkeypatch, tmp_path, option, value, reason):
    from libmt import _checkpoints, _opennmt_py

    checkpoint = _checkpoints.load_torch_zip(FIXTURES / "opennmt-py" / "model.pt", namespaces=True)
    setattr(checkpoint["opt"], option, value)
    monkeypatch.setattr(_opennmt_py._checkpoints, "load_torch_zip", lambda *_, **__: checkpoint)
    with pytest.raises(convert.ConversionError, match=reason):
        convert.convert("opennmt-py", FIXTURES / "opennmt-py" / "model.pt", tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()


def test_calibrated_int8_conversion_is_mt_quantizes_file(tmp_path, mt_translate):
    # --quantize int8 --calibration FILE: the fp32 conversion quantized in memory exactly as
    # `mt_quantize --calibration FILE` quantizes the fp32 file.
    mt_quantize = pathlib.Path(mt_translate).parent / "mt_quantize"
    if not mt_quantize.exists():
        pytest.skip(f"no mt_quantize beside {mt_translate}")
    expected = json.loads((FIXTURES / "opennmt-py" / "expected.json").read_text(encoding="utf-8"))
    (tmp_path / "calibration.txt").write_text("\n".join(c["text"] for c in expected["cases"]) + "\n")
    source = FIXTURES / "opennmt-py" / "model.pt"
    conversion = convert.convert("opennmt-py", source, tmp_path / "int8.mtm", quantize="int8",
                                 calibration=tmp_path / "calibration.txt")
    assert any("calibrated on 5 sentences" in note for note in conversion.notes)
    convert.convert("opennmt-py", source, tmp_path / "fp32.mtm")
    run = subprocess.run([str(mt_quantize), str(tmp_path / "fp32.mtm"), "--calibration", str(tmp_path / "calibration.txt"),
                          "-o", str(tmp_path / "by-tool.mtm")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "int8.mtm").read_bytes() == (tmp_path / "by-tool.mtm").read_bytes()
    assert libmt.Model(tmp_path / "int8.mtm").quantization["activations"] == "calibrated"
    with pytest.raises(convert.ConversionError, match="add --quantize int8"):
        convert.convert("opennmt-py", source, calibration=tmp_path / "calibration.txt")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(convert.ConversionError, match="no sentences"):
        convert.convert("opennmt-py", source, quantize="int8", calibration=tmp_path / "empty.txt")


def test_the_command_line_never_replaces_a_file_without_force(tmp_path, capsys):
    source = FIXTURES / "opennmt-py" / "model.pt"
    target = tmp_path / "m.mtm"
    target.write_bytes(b"keep me")
    assert convert.main(["--from", "opennmt-py", str(source), "-o", str(target)]) == 1
    assert "exists; add --force" in capsys.readouterr().err
    assert target.read_bytes() == b"keep me"
    assert convert.main(["--from", "opennmt-py", str(source), "-o", str(target), "--force"]) == 0
    assert libmt.Model(target).config.d_model > 0
    assert convert.main(["--from", "opennmt-py", str(source), "-o", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_a_converted_file_gets_a_new_file_s_mode(tmp_path):
    # The temporary file the write goes through is private (0600); the model is not.
    umask = os.umask(0o022)
    try:
        convert.convert("opennmt-py", FIXTURES / "opennmt-py" / "model.pt", tmp_path / "m.mtm")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "m.mtm").stat().st_mode) == 0o644
