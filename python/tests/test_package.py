"""The package as installed: its version, type information, docstrings, and
(under scripts/test_python.sh) that the tests import the installed wheel."""

import os
import pathlib

import libmt


def test_version_matches_the_library():
    root = pathlib.Path(__file__).resolve().parents[2]
    header = (root / "lib" / "include" / "mt" / "version.hpp").read_text()
    assert 'kVersion = "%s"' % libmt.__version__ in header


def test_installed_wheel_is_tested():
    if os.environ.get("MT_REQUIRE_MT_TRANSLATE") == "1":  # scripts/test_python.sh
        assert "site-packages" in libmt.__file__, libmt.__file__


def test_type_information_ships():
    folder = pathlib.Path(libmt.__file__).parent
    assert (folder / "py.typed").is_file() and (folder / "_libmt.pyi").is_file()


def test_public_api_is_documented():
    for name in libmt.__all__:
        if name != "__version__":
            assert getattr(libmt, name).__doc__, name
    for method in ("translate", "translate_batch", "translate_iterable", "translate_file"):
        doc = getattr(libmt.Translator, method).__doc__
        assert doc and len(doc) > 100, method
    assert "beam_size" in libmt.Translator.translate.__doc__
    assert "default 4096" in libmt.Translator.__doc__
