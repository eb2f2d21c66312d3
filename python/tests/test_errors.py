"""Files that are missing, unreadable or not models raise Python exceptions
carrying libmt's message; nothing crashes."""

import os

import pytest

import libmt

from conftest import SHIPPED, copy_model


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such.mtm"):
        libmt.Model(tmp_path / "no-such.mtm")
    with pytest.raises(FileNotFoundError):
        libmt.Translator(str(tmp_path / "no-such.mtm"))


def test_directory_is_not_a_model(tmp_path):
    with pytest.raises(OSError, match="not a regular file"):
        libmt.Model(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    path = copy_model(tmp_path)
    path.chmod(0)
    with pytest.raises(PermissionError, match="Permission denied"):
        libmt.Model(path)


@pytest.mark.parametrize("name, data", [
    ("empty", b""),
    ("text", b"this is not a model file\n" * 10),
    ("zeros", bytes(4096)),
])
def test_not_a_model(tmp_path, name, data):
    path = tmp_path / (name + ".mtm")
    path.write_bytes(data)
    with pytest.raises(libmt.ModelError):
        libmt.Model(path)
    with pytest.raises(libmt.ModelError):
        libmt.Model(data)


def test_model_error_is_a_value_error():
    assert issubclass(libmt.ModelError, ValueError)


def test_truncated_and_corrupted_models(tmp_path):
    data = SHIPPED["de-tiny-int8"].read_bytes()
    for cut in (16, 1000, len(data) // 2, len(data) - 1):
        with pytest.raises(libmt.ModelError):
            libmt.Model(data[:cut])
    # Flipped bytes in the header and tables: refused or loaded, never a crash;
    # a model that loads still translates.
    for offset in range(0, 4096, 97):
        corrupt = bytearray(data)
        corrupt[offset] ^= 0xFF
        try:
            model = libmt.Model(bytes(corrupt))
        except libmt.ModelError:
            continue
        libmt.Translator(model).translate(["A dog."])


def test_non_finite_weights_are_refused_when_asked(tmp_path):
    # A NaN in the fp32 model's last weight bytes: loads (weights are not read)
    # unless check_weights_finite=True.
    data = bytearray(SHIPPED["de-tiny-fp32"].read_bytes())
    model = libmt.Model(bytes(data))
    names = [t["name"] for t in model.tensors]
    assert "target_embedding" in names
    nan = b"\x00\x00\xc0\x7f"
    # The embedding's bytes are the file's largest block: find a float inside it.
    probe = len(data) // 2 & ~3
    data[probe:probe + 4] = nan
    libmt.Model(bytes(data))
    with pytest.raises(libmt.ModelError, match="NaN|Inf|finite"):
        libmt.Model(bytes(data), check_weights_finite=True)


def test_vocabulary_less_model(tmp_path):
    model = libmt.Model(SHIPPED["de-tiny-fp32"], load_vocabulary=False)
    assert model.vocabulary is None
    translator = libmt.Translator(model)
    with pytest.raises(ValueError, match="no vocabulary"):
        translator.translate(["A dog."])
    result = translator.translate_batch([[5, 6, 7]])[0]
    assert result.hypotheses is None and len(result.ids) == 1


def test_save_round_trip_and_failure(tmp_path, de_model):
    target = tmp_path / "copy.mtm"
    de_model.save(target)
    assert target.read_bytes() == SHIPPED["de-tiny-fp32"].read_bytes()
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name]
    # str, bytes and os.PathLike paths alike; the mode a new file gets.
    de_model.save(bytes(tmp_path / "bytes-path.mtm"))
    de_model.save(str(tmp_path / "str-path.mtm"))
    assert libmt.Model(tmp_path / "bytes-path.mtm").config == de_model.config  # bytes given to Model are a model
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "str-path.mtm").stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(OSError):
        de_model.save(tmp_path / "no-such-dir" / "x.mtm")
