"""libmt.convert --from transformers against what transformers itself computed on the same
models (tests/data/converters/make_marian_fixture.py made them and recorded the results): the
tokenizer's ids, teacher-forced logits, greedy and beam output, and decoded text. No torch or
transformers needed here."""

import json
import pathlib
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

import libmt  # noqa: E402
from libmt import convert  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "converters"
VARIANTS = ["marian-shared", "marian-fp16-bin", "marian-separate"]
MAX_LENGTH = 20  # what the fixture gave generate(): the decoder start counts
EOS = 0


def until_eos(ids):
    return ids[:ids.index(EOS)] if EOS in ids else ids


@pytest.fixture(scope="module", params=VARIANTS)
def converted(request, tmp_path_factory):
    name = request.param
    output = tmp_path_factory.mktemp(name) / "model.mtm"
    conversion = convert.convert("transformers", FIXTURES / name / "hf", output)
    expected = json.loads((FIXTURES / name / "expected.json").read_text(encoding="utf-8"))
    model = libmt.Model(output)
    return name, conversion, expected, model, libmt.Translator(model, max_beam_size=4)


def test_the_file_holds_what_the_directory_says(converted):
    name, conversion, expected, model, _ = converted
    config = model.config
    assert config.target_vocab_size == expected["target_vocab_size"]
    assert config.source_vocab_size == expected["vocab_size"]
    assert config.stored_positions and config.decoder_start_id == config.pad_id
    assert config.suppressed_ids == [config.pad_id]
    assert config.activation == {"marian-shared": "swish", "marian-fp16-bin": "relu", "marian-separate": "gelu"}[name]
    assert model.format_version == 3
    assert model.metadata["converted_with"] == "transformers"
    assert any("encode to <unk>" in note for note in conversion.notes)  # each fixture lacks two pieces


def test_tokenizer_ids_are_transformers(converted):
    _, _, expected, model, _ = converted
    for case in expected["cases"]:
        # MarianTokenizer appends </s>; libmt's sessions do, its encode() does not.
        assert model.vocabulary.encode(case["text"]) + [EOS] == case["source_ids"], case["text"]


def test_vocabulary_speaks_the_models_ids(converted):
    """Vocabulary's id_to_piece, piece_to_id, pieces and len are in encode()'s ids, the model's
    (vocab.json's), not the SentencePiece model's piece indices."""
    name, _, expected, model, _ = converted
    vocab = json.loads((FIXTURES / name / "hf" / "vocab.json").read_text(encoding="utf-8"))
    v = model.vocabulary
    assert len(v) == model.config.source_vocab_size == len(v.pieces)
    unk = model.config.unk_id
    checked = 0
    for case in expected["cases"]:
        for i in v.encode(case["text"]):
            if i == unk:
                continue
            piece = v.id_to_piece(i)
            assert vocab[piece] == i and v.pieces[i] == piece and v.piece_to_id(piece) == i, (case["text"], i, piece)
            checked += 1
    assert checked > 20
    with pytest.raises(IndexError):
        v.id_to_piece(len(v))


def test_teacher_forced_logits_match_to_a_relative_1e_4(converted):
    _, _, expected, _, translator = converted
    V = expected["target_vocab_size"]
    worst = 0.0
    for case in expected["cases"]:
        target = case["greedy"]
        got = np.frombuffer(translator._forced_logits(case["source_ids"][:-1], target), dtype=np.float32)
        want = np.array(case["forced_logits"])
        assert got.shape == (len(target) * V,)
        got = got.reshape(len(target), V)
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    assert worst <= 1e-4


def test_greedy_ids_and_text_are_transformers(converted):
    _, _, expected, _, translator = converted
    for case in expected["cases"]:
        hf = case["greedy"]
        # HF stops at max_length, forcing </s> in the last place: compare what came before.
        cut = len(hf) == MAX_LENGTH - 1
        length = len(hf) - 1 if cut else MAX_LENGTH
        source = case["source_ids"][:-1]
        result = translator.translate_batch([source], max_decoding_length=length)[0]
        assert result.ids[0] == until_eos(hf[:-1] if cut else hf), case["text"]
        text = translator.translate([case["text"]], max_decoding_length=length)[0]
        assert text == case["greedy_text"], case["text"]


def test_beam_top1_is_transformers_where_not_tied(converted):
    _, _, expected, _, translator = converted
    compared = 0
    for case in expected["cases"]:
        best = until_eos(case["beam"][0])
        scores = case["beam_scores"]
        ended = len(best) < MAX_LENGTH - 2  # HF forces </s> at max_length; libmt does not
        if not ended or abs(scores[0] - scores[1]) < 1e-3:
            continue
        result = translator.translate_batch([case["source_ids"][:-1]], beam_size=4, num_hypotheses=2,
                                            max_decoding_length=MAX_LENGTH)[0]
        assert result.ids[0] == best, case["text"]
        assert result.scores[0] == pytest.approx(scores[0], abs=1e-4)
        compared += 1
    if compared == 0:
        pytest.skip("no beam result of this fixture ended before max_length with a clear margin")


def test_the_command_line_converts_and_reports(tmp_path):
    output = tmp_path / "m.mtm"
    run = subprocess.run([sys.executable, "-m", "libmt.convert", "--from", "transformers",
                          str(FIXTURES / "marian-shared" / "hf"), "-o", str(output)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "swish, post-norm" in run.stderr and "-> " + str(output) in run.stderr
    assert libmt.Model(output).config.d_model == 32


def test_what_cannot_be_converted_is_refused_with_the_reason(tmp_path):
    run = subprocess.run([sys.executable, "-m", "libmt.convert", "--from", "transformers", str(tmp_path),
                          "-o", str(tmp_path / "m.mtm")], capture_output=True, text=True)
    assert run.returncode == 1 and "no config.json" in run.stderr
    assert not (tmp_path / "m.mtm").exists()
    # A config libmt cannot run exactly: refused, nothing written.
    source = FIXTURES / "marian-shared" / "hf"
    for name in source.iterdir():
        (tmp_path / name.name).write_bytes(name.read_bytes())
    config = json.loads((tmp_path / "config.json").read_text())
    config["activation_function"] = "gelu_new"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(convert.ConversionError, match="gelu_new"):
        convert.convert("transformers", tmp_path, tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()
    with pytest.raises(convert.ConversionError, match="--from 'sockeye'"):
        convert.convert("sockeye", tmp_path)


def test_a_damaged_checkpoint_is_refused_not_misread(tmp_path):
    source = FIXTURES / "marian-shared" / "hf"
    for name in source.iterdir():
        (tmp_path / name.name).write_bytes(name.read_bytes())
    weights = (tmp_path / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(ValueError, match="outside the file"):
        convert.convert("transformers", tmp_path, tmp_path / "m.mtm")
    assert not (tmp_path / "m.mtm").exists()


def test_mt_quantize_and_mt_translate_run_a_converted_model(mt_translate, tmp_path):
    """The command-line tools on a converted file: mt_quantize calibrates through its own
    tokenizers and keeps its vocabularies and tables; mt_translate decodes through them."""
    tools = pathlib.Path(mt_translate).parent
    model = tmp_path / "m.mtm"
    convert.convert("transformers", FIXTURES / "marian-shared" / "hf", model)
    expected = json.loads((FIXTURES / "marian-shared" / "expected.json").read_text(encoding="utf-8"))
    texts = [case["text"] for case in expected["cases"]]
    calibration = tmp_path / "calibration.txt"
    calibration.write_text("\n".join(texts) + "\n", encoding="utf-8")
    quantized = tmp_path / "m.int8.mtm"
    run = subprocess.run([str(tools / "mt_quantize"), str(model), "--calibration", str(calibration), "-o",
                          str(quantized)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    fp32, int8 = libmt.Model(model), libmt.Model(quantized)
    assert int8.quantization is not None and int8.format_version == 3
    assert int8.config == fp32.config
    for text in texts:
        assert int8.vocabulary.encode(text) == fp32.vocabulary.encode(text)
    # Greedy, cut where transformers' max_length cuts: mt_translate gives transformers' text.
    run = subprocess.run([mt_translate, "-m", str(model), "--beam", "1", "--max-length", "18"],
                         input="\n".join(texts) + "\n", capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:-1] == [case["greedy_text"] for case in expected["cases"]]
    run = subprocess.run([mt_translate, "-m", str(quantized), "--beam", "1"], input="\n".join(texts) + "\n",
                         capture_output=True, text=True)
    assert run.returncode == 0 and len(run.stdout.split("\n")) == len(texts) + 1


def test_int8_conversion_equals_mt_quantize_with_dynamic_activations(mt_translate, tmp_path):
    """--quantize int8 writes the int8 weights as they are read (no fp32 file): the same model as
    mt_quantize --activations dynamic makes from the fp32 conversion, translation for translation."""
    tools = pathlib.Path(mt_translate).parent
    source = FIXTURES / "marian-shared" / "hf"
    convert.convert("transformers", source, tmp_path / "fp32.mtm")
    convert.convert("transformers", source, tmp_path / "direct.int8.mtm", quantize="int8")
    expected = json.loads((FIXTURES / "marian-shared" / "expected.json").read_text(encoding="utf-8"))
    texts = [case["text"] for case in expected["cases"]]
    (tmp_path / "calibration.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run = subprocess.run([str(tools / "mt_quantize"), str(tmp_path / "fp32.mtm"), "--calibration",
                          str(tmp_path / "calibration.txt"), "--activations", "dynamic", "-o",
                          str(tmp_path / "tool.int8.mtm")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    direct, tool = libmt.Model(tmp_path / "direct.int8.mtm"), libmt.Model(tmp_path / "tool.int8.mtm")
    assert direct.quantization == tool.quantization
    assert direct.file_size < libmt.Model(tmp_path / "fp32.mtm").file_size / 2
    for beam in (1, 4):
        a = libmt.Translator(direct, max_beam_size=4).translate_batch([c["source_ids"][:-1] for c in expected["cases"]],
                                                                      beam_size=beam)
        b = libmt.Translator(tool, max_beam_size=4).translate_batch([c["source_ids"][:-1] for c in expected["cases"]],
                                                                    beam_size=beam)
        assert [r.ids for r in a] == [r.ids for r in b]
        assert [r.scores for r in a] == [r.scores for r in b]
    with pytest.raises(convert.ConversionError, match="int4"):
        convert.convert("transformers", source, quantize="int4")


def test_target_language_picks_the_models_own_token(tmp_path):
    model_path = tmp_path / "m.mtm"
    convert.convert("transformers", FIXTURES / "marian-shared" / "hf", model_path)
    model = libmt.Model(model_path)
    tokens = libmt.language_tokens(model)
    assert set(tokens) == {">>fra<<", ">>deu<<"}
    translator = libmt.Translator(model, max_beam_size=4)
    texts = ["the small dog runs", "a woman sits near the river"]
    for beam in (1, 4):
        by_code = translator.translate(texts, target_language="fra", beam_size=beam, return_scores=True)
        written = translator.translate([">>fra<< " + t for t in texts], beam_size=beam, return_scores=True)
        assert [r.ids for r in by_code] == [r.ids for r in written]
        ids = [model.vocabulary.encode(t) for t in texts]
        batch = translator.translate_batch(ids, target_language="fra", beam_size=beam)
        assert [r.ids for r in batch] == [r.ids for r in written]
    deu = translator.translate(texts, target_language="deu", return_scores=True)
    fra = translator.translate(texts, target_language="fra", return_scores=True)
    assert [r.scores for r in deu] != [r.scores for r in fra]  # another token, another source
    with pytest.raises(ValueError, match="not one of this model's languages"):
        translator.translate(texts, target_language="xx")
    with pytest.raises(ValueError, match="target language alone"):
        translator.translate(texts, source_language="en", target_language="fra")
    plain = libmt.Translator(libmt.Model(FIXTURES.parents[2] / "models" / "en-de-tiny.mtm"))
    with pytest.raises(ValueError, match="no language tokens"):
        plain.translate(texts, target_language="fra")


def test_prefix_options_reach_the_search(tmp_path):
    model_path = tmp_path / "m.mtm"
    convert.convert("transformers", FIXTURES / "marian-shared" / "hf", model_path)
    translator = libmt.Translator(libmt.Model(model_path), max_beam_size=4)
    ids = [[15, 52, 25], [67, 57]]
    forced = translator.translate_batch(ids, target_prefix=[60, 61])
    assert all(r.ids[0][:2] == [60, 61] for r in forced)
    assert translator.translate_batch(ids, source_prefix=[93])[0].ids == translator.translate_batch([[93] + ids[0]])[0].ids
    with pytest.raises(ValueError, match="target_prefix has id"):
        translator.translate_batch(ids, target_prefix=[0])  # </s>


def test_mt_translate_takes_the_target_language(mt_translate, tmp_path):
    model_path = tmp_path / "m.mtm"
    convert.convert("transformers", FIXTURES / "marian-shared" / "hf", model_path)
    texts = ["the small dog runs", "", "a woman sits near the river"]
    run = subprocess.run([mt_translate, "-m", str(model_path), "--beam", "4", "--target-language", "deu"],
                         input="\n".join(texts) + "\n", capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    translator = libmt.Translator(libmt.Model(model_path), max_beam_size=4)
    want = translator.translate([t for t in texts if t], beam_size=4, target_language="deu")
    assert run.stdout.split("\n")[:-1] == [want[0], "", want[1]]  # an empty line stays empty
    run = subprocess.run([mt_translate, "-m", str(model_path), "--target-language", "xx"], input="a\n",
                         capture_output=True, text=True)
    assert run.returncode != 0 and "'xx': not one of this model's languages (>>fra<< >>deu<<)" in run.stderr
