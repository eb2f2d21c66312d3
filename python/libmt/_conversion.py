"""What every converter shares: the writer it fills, what it reports, and writing the result."""

import datetime
import os
import pathlib
import sys
import tempfile
from typing import Dict, List, Optional


class ConversionError(ValueError):
    """A model libmt cannot convert (or would convert wrongly): says what and why."""


def quantize_rows(values):
    """int8 rows with one scale each, exactly as mt_quantize computes them
    (quantize/weight_quantization.cpp: scale = max|row| / 127, round half to even)."""
    import numpy as np

    values = np.ascontiguousarray(values, dtype=np.float32)
    amax = np.abs(values).max(axis=1)
    scales = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(values / scales[:, None]), -127, 127).astype(np.int8)
    return q, scales


class _Writer:
    """The ModelWriter a converter fills; with int8 conversion, the weights and embeddings go in
    as int8 as they arrive, so no fp32 model is ever written or held whole."""

    def __init__(self, writer, config, int8: bool) -> None:
        from . import _libmt

        self._writer = writer
        self._int8 = int8
        self._roles = {spec["name"]: spec["role"] for spec in _libmt.tensor_specs(config)}
        if int8:
            writer.set_quantization("dynamic")

    def add_tensor(self, name, values) -> None:
        if self._int8 and self._roles.get(name) in ("weight", "embedding"):
            q, scales = quantize_rows(values)
            self._writer.add_tensor_i8(name, q, scales)
        else:
            self._writer.add_tensor(name, values)

    def __getattr__(self, name):
        return getattr(self._writer, name)


class Conversion:
    """One conversion's writer, notes (what was done), warnings and metadata."""

    def __init__(self, source_format: str, source: str, quantize: Optional[str] = None) -> None:
        self.source_format = source_format
        self.source = source
        self.quantize = quantize
        self.notes: List[str] = []
        self.warnings: List[str] = []
        self.metadata: Dict[str, str] = {}
        self._writer = None
        self.config = None
        self.data: bytes = b""  # the model file, once finished
        self.size = 0

    def note(self, text: str) -> None:
        self.notes.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def writer(self, config):
        from . import _libmt

        config.validate()
        self.config = config
        self._writer = _Writer(_libmt.ModelWriter(config), config, self.quantize == "int8")
        if self.quantize == "int8":
            self.note("int8: weights and embeddings per row (as mt_quantize), activations quantized per row at run "
                      "time; mt_quantize --calibration on an fp32 conversion gives calibrated ones (faster)")
        return self._writer

    def finish(self, version: str) -> bytes:
        """The model file's bytes, with the metadata set."""
        if self._writer is None:
            raise ConversionError("the converter wrote no model")
        metadata = {k: v for k, v in self.metadata.items() if v}
        metadata.update({"tool": "libmt.convert", "tool_version": version,
                         "created": datetime.date.today().isoformat(), "converted_with": self.source_format})
        self._writer.set_metadata(metadata)
        try:
            return self._writer.serialize()
        except ValueError as e:
            if "2 GiB" in str(e) and self.quantize is None:
                raise ConversionError(f"{e}: convert with --quantize int8 (about a quarter of the size; the int8 "
                                      "weights are written as they are read, with no fp32 file)") from None
            raise


def write_atomically(path: pathlib.Path, data: bytes) -> None:
    """A temporary file in the same directory, renamed over `path`: never a partial model."""
    path = pathlib.Path(path)
    directory = path.parent if str(path.parent) else pathlib.Path(".")
    fd, temporary = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file 0600: give it the mode a new file gets (umask applied).
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def report(conversion: Conversion, output: Optional[str], size: int, stream=sys.stderr) -> None:
    print(f"converted {conversion.source} ({conversion.source_format})" + (f" -> {output} ({size:,} bytes)" if output else ""),
          file=stream)
    for line in conversion.notes:
        print(f"  {line}", file=stream)
    for line in conversion.warnings:
        print(f"  warning: {line}", file=stream)
